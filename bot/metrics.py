"""Prometheus metrics of the message path (served on GET /metrics).

Counters and histograms are per process (each process counts what it did). The gauges computed at
scrape (queue depth, oldest pending message, background jobs by status) read the shared database,
so every process that serves /metrics reports the same values: aggregate them with max, not sum.
"""

from __future__ import annotations

import functools
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

INBOUND = Counter("deblo_inbound_total", "Inbound webhooks by channel and outcome", ["channel", "result"])


@functools.cache
def inbound(channel: str, result: str) -> Any:
    """INBOUND's child for these labels, looked up once: the webhook counts every request, and
    `labels()` takes a lock and builds a key each time. Both labels come from short fixed sets."""
    return INBOUND.labels(channel, result)


WEBHOOK_SECONDS = Histogram(
    "deblo_webhook_seconds", "Time to answer an inbound webhook",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
)
OUTBOUND = Counter("deblo_outbound_total", "Outbound messages by channel and outcome", ["channel", "result"])
SPOOL_DEAD = Counter("deblo_spool_dead_total", "Spooled webhooks set aside in DATA_DIR/spool/dead.jsonl")
STATUS_CALLBACKS = Counter("deblo_status_callbacks_total", "Status callbacks by status", ["status"])
TURNS = Counter("deblo_messages_processed_total", "Inbound messages processed by outcome", ["result"])
TURN_SECONDS = Histogram(
    "deblo_message_seconds", "Time to process one inbound message",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180),
)
JOB_RUNS = Counter("deblo_job_runs_total", "Periodic job runs by job and outcome", ["job", "result"])

# Limits (bot.pipeline.rate, bot.agent.llm, bot.billing.credits): each refusal or deferral.
RATE_LIMITED = Counter(
    "deblo_rate_limited_total",
    "USER_MAX_MESSAGES_PER_MINUTE reached: a user's next message postponed (postponed), "
    "the notice sent (notice)",
    ["action"],
)
LLM_WAITS = Counter("deblo_llm_waits_total", "Model calls that waited for a free LLM_MAX_CONCURRENCY slot")
LLM_IN_FLIGHT = Gauge("deblo_llm_in_flight", "Model calls streaming now in this process")
DAILY_TOKEN_LIMIT = Counter(
    "deblo_daily_token_limit_total",
    "USER_DAILY_TOKEN_LIMIT reached: a turn not started (refused), the day's notice sent (notice)",
    ["action"],
)
BROWSE_REFUSED = Counter(
    "deblo_browse_refused_total",
    "Addresses browse_url did not open, by rule: third_party_link (a page's link or an address read in "
    "third-party text), composed (written by the model after third-party text was read), unknown_source "
    "(from neither the user nor an allowed site), too_many_pages (BROWSE_MAX_PER_TURN), student (a "
    "student while STUDENT_WEB_TOOLS is off)",
    ["reason"],
)
JOB_STREAMS = Gauge("deblo_job_streams", "Job pages' event streams open now in this process")
JOB_STREAMS_REFUSED = Counter(
    "deblo_job_streams_refused_total",
    "Job page streams refused with 429: SSE_MAX_PER_JOB (job) or SSE_MAX_PER_ADDRESS (address) reached",
    ["limit"],
)

# The work waiting, computed at scrape from the database (bot.channel.gauges).
QUEUE_DEPTH = Gauge("deblo_queue_depth", "Inbound messages waiting to be answered (pending rows)")
IN_PROGRESS = Gauge("deblo_messages_in_progress", "Inbound messages a worker is answering (processing rows)")
OLDEST_PENDING = Gauge("deblo_oldest_pending_seconds", "Age of the oldest pending inbound message (0: none)")
BACKGROUND_JOBS = Gauge("deblo_background_jobs", "Background jobs (generation_jobs rows) by status",
                        ["status"])

# Turns, model calls and Twilio sends.
AGENT_TURN_SECONDS = Histogram(
    "deblo_turn_seconds", "Agent turns by exit reason (answered, forced_deadline, over_budget, promoted...)",
    ["exit_reason"], buckets=(0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 180, 600, 1800),
)
# Each message is billed (WhatsApp inside the 24 h window too): how many an answer's text took.
MESSAGES_PER_ANSWER = Histogram(
    "deblo_messages_per_answer", "Messages the text of one answer left in, by channel and stream "
    "(WHATSAPP_STREAM on WhatsApp: auto, paragraphs, whole; SMS and spoken answers: whole)",
    ["channel", "stream"], buckets=(1, 2, 3, 4, 5, 6, 8, 10, 15, 20),
)
LLM_SECONDS = Histogram(
    "deblo_llm_call_seconds", "Model calls that answered, by model: time from the call to its last byte",
    ["model"], buckets=(0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
LLM_CALLS = Counter("deblo_llm_calls_total", "Model call attempts by model and result (ok, error)",
                    ["model", "result"])
LLM_TOKENS = Counter("deblo_llm_tokens_total", "Tokens of answered model calls by model and kind "
                     "(prompt, completion)", ["model", "kind"])
TWILIO_SENDS = Counter(
    "deblo_twilio_sends_total",
    "Twilio REST sends by outcome (accepted, retry, failed, unknown, not_configured) and error code "
    "(Twilio's code, else the HTTP status, else none)",
    ["channel", "outcome", "code"],
)
# Pacing (bot.channel.pacing): TWILIO_SENDER_MPS per sender, SEND_MAX_AGE_S per message.
SEND_PACED = Counter("deblo_send_paced_total", "Sends that waited for their sender's next moment "
                     "(TWILIO_SENDER_MPS), by channel", ["channel"])
SEND_PACE_WAIT = Histogram(
    "deblo_send_pace_wait_seconds", "Time a paced send waited for its moment",
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600),
)
SENDS_EXPIRED = Counter(
    "deblo_sends_expired_total", "Messages dropped, not sent, because they were queued longer than "
    "SEND_MAX_AGE_S, by channel and path (direct, outbox, scheduled)", ["channel", "path"],
)
TWILIO_RATE_LIMITED = Counter(
    "deblo_twilio_rate_limited_total",
    "Twilio REST answers 429 / 20429 (each retried with backoff), by channel",
    ["channel"],
)
MENUS = Counter(
    "deblo_menus_total", "WhatsApp menus (bot.channel.buttons) sent as buttons or list, or refused by "
    "Twilio and sent as numbered text (refused_create, refused_send)", ["result"],
)
TWILIO_DELIVERY_ERRORS = Counter(
    "deblo_twilio_delivery_errors_total", "Status callbacks reporting a failure, by status and ErrorCode",
    ["status", "code"],
)


def error_code(code: object, status: object = None) -> str:
    """The label of a Twilio error: its code, else the HTTP status, else "none"."""
    return str(code or status or "none")[:16]


def render() -> tuple[bytes, str]:
    return generate_latest(), CONTENT_TYPE_LATEST
