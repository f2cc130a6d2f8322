"""Fewer, fuller WhatsApp messages (each one is billed): with WHATSAPP_STREAM=auto the paragraphs
are merged into as few messages of at most 1,600 characters as fit, each sent when full (while the
model still writes) or when the answer ends; `paragraphs` is one
message per paragraph, `whole` one send at the end. Order is kept, no message passes 1,600, and the
messages of each answer are counted (deblo_messages_per_answer)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from bot.channel import formatting
from bot.channel.streaming import ParagraphSplitter, message_count

PHONE = "+2250700000325"
TOPICS = ("fractions", "décimaux", "pourcentages", "proportions", "équations", "aires", "volumes",
          "angles", "statistiques", "probabilités", "vitesses", "échelles")


def paragraph(topic: str, chars: int) -> str:
    """A tutor's paragraph about `topic`, `chars` long to a word."""
    head = f"Pour les **{topic}**, retiens bien ceci."
    filler = " On lit l'énoncé, on pose le calcul, puis on vérifie le résultat avec un exemple." * 9
    return (head + filler)[: chars - 1].rsplit(" ", 1)[0].rstrip(",") + "."


SIX = [paragraph(t, 255) for t in TOPICS[:6]]
ANSWER = "\n\n".join(SIX)
TWELVE = [paragraph(t, 375) for t in TOPICS]
LONG = "\n\n".join(TWELVE)


def sent(parts: list[str]) -> list[str]:
    return [formatting.to_whatsapp(p) for p in parts]


def counted(mode: str) -> tuple[float, float]:
    labels = {"channel": "whatsapp", "stream": mode}
    return (REGISTRY.get_sample_value("deblo_messages_per_answer_sum", labels) or 0.0,
            REGISTRY.get_sample_value("deblo_messages_per_answer_count", labels) or 0.0)


def test_the_answers_are_what_the_tests_say() -> None:
    assert 1400 <= len(ANSWER) <= 1600 and all(len(p) >= 200 for p in SIX)
    # Four of them fit in one message, five do not.
    assert all(360 <= len(p) <= 375 for p in TWELVE) and len(LONG) > 4300


def test_the_merging_splitter_keeps_the_first_paragraph_early_and_fills_the_rest() -> None:
    splitter = ParagraphSplitter(merge_to=formatting.WHATSAPP_MAX)
    pieces: list[str] = []
    for i in range(0, len(LONG), 5):
        pieces += splitter.feed(LONG[i : i + 5])
    # The first at once; then four paragraphs a message, each handed once the fifth would not fit.
    assert pieces == [TWELVE[0], "\n\n".join(TWELVE[1:5]), "\n\n".join(TWELVE[5:9])]
    assert splitter.rest(LONG) == "\n\n".join(TWELVE[9:])
    late = ParagraphSplitter(merge_to=formatting.WHATSAPP_MAX, early=False)
    assert late.feed(ANSWER + "\n\n") == []  # not the turn's first text: all of it is held
    huge = "mot " * 500
    assert ParagraphSplitter(merge_to=1600, early=False).feed(f"{huge}\n\nsuite") == [huge.strip()]


@pytest.mark.parametrize(("mode", "want"), [
    ("auto", [ANSWER]),  # it fits one message: one, at the end
    ("paragraphs", SIX),
    ("whole", [ANSWER]),
])
async def test_a_long_answer_leaves_in_as_many_messages_as_the_mode_says(
        make_harness: Any, mode: str, want: list[str]) -> None:
    h = await make_harness(WHATSAPP_STREAM=mode)
    await h.make_user(PHONE)
    before = counted(mode)
    h.llm.push_text(ANSWER, chunk_delay_s=0.01)
    await h.inbound(PHONE, "Explique-moi tout le programme de maths")
    await h.settle()
    bodies = await h.texts_to(PHONE)
    assert bodies == sent(want)
    assert len(bodies) == {"auto": 1, "paragraphs": 6, "whole": 1}[mode]
    assert all(len(b) <= formatting.WHATSAPP_MAX for b in bodies)
    assert "\n\n".join(bodies) == formatting.to_whatsapp(ANSWER)  # nothing lost, nothing twice, in order
    [stream] = h.llm.streams
    created = [t for t, kind, _ in h.twilio.events if kind == "created"]
    assert created == sorted(created)
    assert stream["ended"] is not None
    if mode in ("whole", "auto"):
        assert min(created) > stream["ended"]
    else:
        assert created[0] < stream["ended"]  # the first paragraph left while the model still wrote
    after = counted(mode)
    assert (after[0] - before[0], after[1] - before[1]) == (len(bodies), 1)


async def test_a_very_long_answer_fills_each_message_and_sends_it_when_full(make_harness: Any) -> None:
    h = await make_harness(WHATSAPP_STREAM="auto")
    await h.make_user(PHONE)
    h.llm.push_text(LONG, chunk_delay_s=0.01)
    await h.inbound(PHONE, "Révise tout avec moi")
    await h.settle()
    bodies = await h.texts_to(PHONE)
    assert bodies == sent(["\n\n".join(TWELVE[0:4]), "\n\n".join(TWELVE[4:8]), "\n\n".join(TWELVE[8:])])
    assert all(len(b) <= formatting.WHATSAPP_MAX for b in bodies)
    assert message_count("whatsapp", LONG) == 3  # one send of the whole would take 3 parts
    [stream] = h.llm.streams
    created = [t for t, kind, _ in h.twilio.events if kind == "created"]
    assert stream["ended"] is not None and created[1] < stream["ended"]  # full ones left meanwhile
    assert created == sorted(created)


async def test_sms_is_counted_whole(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, last_channel="sms")
    labels = {"channel": "sms", "stream": "whole"}
    before = REGISTRY.get_sample_value("deblo_messages_per_answer_sum", labels) or 0.0
    h.llm.push_text(ANSWER)
    await h.inbound(PHONE, "Explique-moi tout", channel="sms")
    await h.settle()
    parts = await h.texts_to(PHONE)
    assert parts == formatting.sms_parts(formatting.to_sms(ANSWER)) and len(parts) > 1
    after = REGISTRY.get_sample_value("deblo_messages_per_answer_sum", labels)
    assert after is not None and after - before == len(parts)


def test_the_bench_answers_take_fewer_messages_in_auto() -> None:
    from bench.cost.messages import answers, messages

    for answer in answers().values():
        assert messages(answer, "whole") <= messages(answer, "auto") <= 3 < messages(answer, "paragraphs")
