"""Prometheus metrics of the message path (served on GET /metrics)."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest

INBOUND = Counter("deblo_inbound_total", "Inbound webhooks by channel and outcome", ["channel", "result"])
WEBHOOK_SECONDS = Histogram(
    "deblo_webhook_seconds", "Time to answer an inbound webhook",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
)
OUTBOUND = Counter("deblo_outbound_total", "Outbound messages by channel and outcome", ["channel", "result"])
STATUS_CALLBACKS = Counter("deblo_status_callbacks_total", "Status callbacks by status", ["status"])
TURNS = Counter("deblo_messages_processed_total", "Inbound messages processed by outcome", ["result"])
TURN_SECONDS = Histogram(
    "deblo_message_seconds", "Time to process one inbound message",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180),
)
JOB_RUNS = Counter("deblo_job_runs_total", "Periodic job runs by job and outcome", ["job", "result"])


def render() -> tuple[bytes, str]:
    return generate_latest(), CONTENT_TYPE_LATEST
