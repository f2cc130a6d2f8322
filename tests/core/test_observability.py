"""What an operator sees: /metrics after real turns (queue, turns, model calls, Twilio outcomes, jobs)
and JSON log lines that carry one message's ids from the webhook to the reply and its background job."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from bot import logs
from bot.storage.models import InboundMessage
from tests.support.background_turns import long_harness, script_steps, wait_job
from tests.support.harness import Harness, new_sid
from tests.support.waiting import eventually

PHONE = "+2250700000501"


async def scrape(h: Harness) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    status, headers, body = await h.scrape()
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    values: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            values[(s.name, frozenset(s.labels.items()))] = s.value
    return values


def value(values: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    key = (name, frozenset(labels.items()))
    assert key in values, f"no series {name}{labels} in /metrics"
    return values[key]


def grew(before: Any, after: Any, name: str, **labels: str) -> float:
    return value(after, name, **labels) - before.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_after_turns_show_turns_model_calls_and_twilio_outcomes(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    before = await scrape(h)
    await h.inbound(PHONE, "Bonjour, explique-moi les fractions")
    await h.settle()
    after = await scrape(h)
    assert value(after, "deblo_queue_depth") == 0 and value(after, "deblo_oldest_pending_seconds") == 0
    assert value(after, "deblo_messages_in_progress") == 0
    assert grew(before, after, "deblo_turn_seconds_count", exit_reason="answered") == 1
    assert 0 < grew(before, after, "deblo_turn_seconds_sum", exit_reason="answered") < 30
    assert grew(before, after, "deblo_llm_calls_total", model="test/model", result="ok") == 1
    assert grew(before, after, "deblo_llm_call_seconds_count", model="test/model") == 1
    # The fake provider reports 100 prompt and 20 completion tokens per call.
    assert grew(before, after, "deblo_llm_tokens_total", model="test/model", kind="prompt") == 100
    assert grew(before, after, "deblo_llm_tokens_total", model="test/model", kind="completion") == 20
    assert grew(before, after, "deblo_twilio_sends_total", channel="whatsapp", outcome="accepted",
                code="none") == 1
    assert value(after, "deblo_llm_in_flight") == 0

    # Refused for good by Twilio (21610: the person sent STOP to the carrier); a failed delivery.
    h.twilio.fail_next("21610")
    await h.inbound(PHONE, "Et les décimaux ?")
    await h.settle()
    h.twilio.callback_statuses = ("sent", "undelivered")
    h.twilio.callback_error_code = "63024"
    sent = len(h.twilio.to(PHONE))
    await h.inbound(PHONE, "Merci")
    await h.settle()
    undelivered = len(h.twilio.to(PHONE)) - sent  # the answer, and the word about the failed one
    last = await scrape(h)
    assert grew(after, last, "deblo_twilio_sends_total", channel="whatsapp", outcome="failed",
                code="21610") == 1
    assert undelivered >= 1
    assert grew(after, last, "deblo_twilio_delivery_errors_total", status="undelivered",
                code="63024") == undelivered


async def test_queue_depth_and_the_oldest_pending_message_age(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)
    await h.stop_workers()
    await h.inbound(PHONE, "Première question")
    h.clock.advance(seconds=30)
    await h.inbound(PHONE, "Deuxième question")
    h.clock.advance(seconds=12)
    values = await scrape(h)
    assert value(values, "deblo_queue_depth") == 2
    assert 41 <= value(values, "deblo_oldest_pending_seconds") <= 43
    await h.start_workers()
    await h.settle()
    values = await scrape(h)
    assert value(values, "deblo_queue_depth") == 0 and value(values, "deblo_oldest_pending_seconds") == 0


# --- logs ----------------------------------------------------------------------------------------


class _Collected(logging.Handler):
    """Each record as the JSON line the bot writes (bot.logs), parsed as it is written."""

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        super().__init__()
        self.setFormatter(logs.JsonFormatter())
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@contextmanager
def json_lines() -> Iterator[list[dict[str, Any]]]:
    """Every log line written meanwhile, as the JSON the bot writes, in the list as it comes."""
    lines: list[dict[str, Any]] = []
    handler = _Collected(lines)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


OURS = ("bot.", "handlers.", "tools.")


def ours(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line["logger"].startswith(OURS)]


async def test_every_log_line_of_a_message_carries_its_ids(harness: Harness) -> None:
    h = harness
    h.twilio.callback_statuses = ()  # only this message's own work writes lines
    await h.make_user(PHONE)
    sid = new_sid()
    with json_lines() as lines:
        await h.inbound(PHONE, "Bonjour", sid=sid)
        await h.settle()
    async with h.services.sessions() as db:
        row_id = await db.scalar(select(InboundMessage.id).where(InboundMessage.message_sid == sid))
    mine = ours(lines)
    said = {line["msg"].split(":")[0] for line in mine}
    # The webhook (serve), the worker, the handler: each wrote at least one line.
    assert {"inbound message stored", "message handled", "turn ended"} <= said, said
    for line in mine:
        assert line.get("message_sid") == sid and line.get("inbound_id") == row_id, line


async def test_a_background_job_logs_with_the_ids_of_the_message_it_came_from(make_harness: Any) -> None:
    h = await long_harness(make_harness)
    h.twilio.callback_statuses = ()
    await h.make_user(PHONE, mode="pro")
    script_steps(h, 2, 0.2)
    sid = new_sid()
    with json_lines() as lines:
        await h.inbound(PHONE, "Fais le bilan en arrière-plan", sid=sid)
        await h.settle()
        job = await wait_job(h, "completed")
        # The job's row is marked completed just before its last line is written.

        async def ended() -> bool:
            return any(line["msg"].startswith("background job ended") for line in ours(lines))

        await eventually(ended, timeout_s=10)
    async with h.services.sessions() as db:
        row_id = await db.scalar(select(InboundMessage.id).where(InboundMessage.message_sid == sid))
    of_job = [line for line in ours(lines) if line.get("job_id") == job.id]
    assert any(line["msg"].startswith("background job ended") for line in of_job), ours(lines)
    for line in of_job:
        assert line.get("message_sid") == sid and line.get("inbound_id") == row_id, line
    values = await scrape(h)
    assert value(values, "deblo_background_jobs", status="completed") == 1
