"""A reasoning model's thinking never reaches the user nor the history sent back to the model: the
`<think>` blocks vLLM leaves in `content` (Qwen3, DeepSeek-R1), tags cut across chunks and unclosed
blocks included, and the `reasoning` / `reasoning_content` fields; a turn whose only text was
thinking gets a real answer, else the usual apology. Streamed (WhatsApp) and whole (SMS)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from bot.agent.loop import EMPTY_ANSWER, FALLBACK_TEXT
from bot.agent.sse import parse_bytes
from bot.agent.thinking import ThinkFilter, strip_thinking
from bot.channel import formatting
from bot.storage.models import Message
from tests.support.sse_corpus import CORPUS

PHONE = "+2250700000324"
THOUGHT = ("Okay, the student asks about fractions. Let me think step by step about what they know, "
           "then decide how to explain it.\n\nFirst I recall that a fraction is a part of a whole; "
           "I should start from a pizza, then move to numbers. Wait, maybe a chocolate bar is better.")
ANSWER = "Une fraction, c'est une part d'un tout : 3/4 d'une tablette, c'est 3 carrés sur 4."
WORDS = ("think", "Okay", "step by step", "pizza", "chocolate", "I should")


def visible(pieces: list[str]) -> tuple[str, str]:
    f = ThinkFilter()
    shown = "".join(f.feed(p) for p in pieces) + f.close()
    return shown, f.thinking


def test_the_filter_takes_out_think_blocks_cut_anywhere() -> None:
    text = f"Avant. <think>{THOUGHT}</think>\n\n{ANSWER} <think>encore</think>Fin."
    want = f"Avant. \n\n{ANSWER} Fin."
    for cut in range(len(text)):  # every place of one cut, tags included
        assert visible([text[:cut], text[cut:]]) == (want, THOUGHT + "encore")
    assert visible(list(text)) == (want, THOUGHT + "encore")  # one character at a time
    assert visible(["<thi", "nk>", THOUGHT, "</th", "ink>", ANSWER]) == (ANSWER, THOUGHT)
    # Unclosed at the end: everything after <think> is thinking.
    unclosed = visible(["Bonjour ! <think>", "je ne finis ", "jamais </thi"])
    assert unclosed == ("Bonjour ! ", "je ne finis jamais </thi")
    # A closing tag alone (the chat template opened the block): the tag never shows, and the whole
    # answer starts after it.
    assert visible(["réfléchi</thi", "nk>", "\n\nRéponse"]) == ("réfléchi\n\nRéponse", "")
    assert strip_thinking("réfléchi</think>\n\nRéponse") == "\n\nRéponse"
    assert strip_thinking("<think>a</think>b</think>c") == "bc"  # a stray tag after a block only goes
    # What only looks like the start of a tag is text.
    assert visible(["x <", " 3 et a <t", "h", "ink"]) == ("x < 3 et a <think", "")
    assert visible(["2 < 3 <"]) == ("2 < 3 <", "")
    assert strip_thinking(f"<think>{THOUGHT}</think>{ANSWER}") == ANSWER
    assert strip_thinking(ANSWER) == ANSWER


@pytest.mark.parametrize("cut", [1, 7])
def test_the_vllm_qwen3_stream_assembles_without_its_thinking(cut: int) -> None:
    body = (CORPUS / "20-vllm-qwen3-think-in-content-arguments-null.sse").read_bytes()
    got = parse_bytes([body[i : i + cut] for i in range(0, len(body), cut)])
    assert got.content.startswith("<think>")  # the wire content, as the corpus records it
    assert got.answer.strip() == ""
    assert got.thinking.startswith("\nOkay, the user is asking") and "</think>" not in got.thinking
    assert [c.name for c in got.tool_calls] == ["get_time"]


def _thinking_then(answer: str) -> list[dict[str, Any]]:
    """Deltas as vLLM streams them, both tags cut across chunks, a blank line inside the thinking."""
    half = len(THOUGHT) // 2
    return [{"content": "<thi"}, {"content": "nk>\n"}, {"content": THOUGHT[:half]},
            {"content": THOUGHT[half:]}, {"content": "\n</thi"}, {"content": "nk>\n\n"},
            *({"content": answer[i : i + 20]} for i in range(0, len(answer), 20))]


def _never_seen(bodies: list[str]) -> None:
    assert bodies
    for body in bodies:
        for word in WORDS:
            assert word not in body


async def _assistant_rows(h: Any) -> list[str]:
    async with h.services.sessions() as db:
        rows = await db.scalars(select(Message.content).where(Message.role == "assistant"))
        return [r or "" for r in rows]


@pytest.mark.parametrize("channel", ["whatsapp", "sms"])
async def test_thinking_in_content_is_neither_sent_nor_kept(harness: Any, channel: str) -> None:
    h = harness
    await h.make_user(PHONE, last_channel=channel)
    h.llm.push_chunks(*_thinking_then(ANSWER))
    await h.inbound(PHONE, "C'est quoi une fraction ?", channel=channel)
    await h.settle()
    bodies = await h.texts_to(PHONE)
    _never_seen(bodies)
    assert "3 carrés sur 4" in " ".join(bodies)
    assert await _assistant_rows(h) == [ANSWER]
    h.llm.push_text("Oui, exactement.")
    await h.inbound(PHONE, "Et 2/4 ?", channel=channel)
    await h.settle()
    sent_back = json.dumps(h.llm.requests[-1]["messages"], ensure_ascii=False)
    assert "3 carrés sur 4" in sent_back
    for word in ("Okay, the student", "pizza", "<think>", "</think>"):
        assert word not in sent_back
    _never_seen(await h.texts_to(PHONE))


async def test_thinking_opened_by_the_template_is_not_sent_whole(harness: Any) -> None:
    """DeepSeek-R1's template opens the block: the content has `</think>` and no `<think>`. Sent
    whole (SMS), the answer is what follows the tag; the history keeps nothing before it."""
    h = harness
    await h.make_user(PHONE, last_channel="sms")
    h.llm.push_chunks({"content": "Okay, I should think step by step"}, {"content": " about the pizza.</thi"},
                      {"content": "nk>\n\n"}, {"content": ANSWER})
    await h.inbound(PHONE, "C'est quoi une fraction ?", channel="sms")
    await h.settle()
    bodies = await h.texts_to(PHONE)
    _never_seen(bodies)
    assert " ".join(bodies) == formatting.to_sms(ANSWER)
    assert await _assistant_rows(h) == [ANSWER]


async def test_reasoning_fields_are_never_sent(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_chunks({"reasoning_content": "Okay, I should think step by step."},
                      {"reasoning": "The pizza idea."}, {"content": ANSWER})
    await h.inbound(PHONE, "C'est quoi une fraction ?")
    await h.settle()
    bodies = await h.texts_to(PHONE)
    _never_seen(bodies)
    assert bodies == [ANSWER]


@pytest.mark.parametrize("channel", ["whatsapp", "sms"])
async def test_a_turn_of_thinking_only_is_asked_once_more_for_its_answer(harness: Any, channel: str) -> None:
    h = harness
    await h.make_user(PHONE, last_channel=channel)
    h.llm.push_chunks({"content": "<think>"}, {"content": THOUGHT})  # never closed
    h.llm.push_text(ANSWER)
    await h.inbound(PHONE, "C'est quoi une fraction ?", channel=channel)
    await h.settle()
    bodies = await h.texts_to(PHONE)
    _never_seen(bodies)
    assert "3 carrés sur 4" in " ".join(bodies)
    assert len(h.llm.requests) == 2 and "tools" not in h.llm.requests[1]
    assert await _assistant_rows(h) == [ANSWER]


async def test_thinking_twice_gets_the_usual_apology(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_chunks(*_thinking_then(""))
    h.llm.push_chunks({"reasoning_content": "Still thinking about the pizza."})
    await h.inbound(PHONE, "C'est quoi une fraction ?")
    await h.settle()
    bodies = await h.texts_to(PHONE)
    _never_seen(bodies)
    assert bodies == [FALLBACK_TEXT[EMPTY_ANSWER]["fr"]]
    assert len(h.llm.requests) == 2


async def test_the_recorded_qwen3_stream_replayed_shows_no_thinking(harness: Any) -> None:
    """Stream 20 of the corpus as recorded (its thinking, then a call to a tool the bot does not
    have), then the model's answer: the user sees the answer only, the history keeps no thinking."""
    h = harness
    await h.make_user(PHONE, mode="pro")
    h.llm.push_raw((CORPUS / "20-vllm-qwen3-think-in-content-arguments-null.sse").read_bytes())
    h.llm.push_text("Il est 10 h UTC.")
    await h.inbound(PHONE, "Quelle heure est-il en UTC ?")
    await h.settle()
    assert await h.texts_to(PHONE) == ["Il est 10 h UTC."]
    assert "Okay, the user" not in json.dumps(h.llm.requests[-1]["messages"])
    assert all("think" not in row for row in await _assistant_rows(h))


def test_history_saved_with_thinking_is_sent_back_without_it() -> None:
    from bot.agent.history import row_to_message

    row = Message(conversation_id=1, role="assistant", content=f"<think>{THOUGHT}</think>\n\n{ANSWER}")
    assert row_to_message(row) == {"role": "assistant", "content": ANSWER}
    only = Message(conversation_id=1, role="assistant", content=f"<think>{THOUGHT}")
    assert row_to_message(only) is None
    kept = Message(conversation_id=1, role="assistant", content=" x < 3 \n")
    assert row_to_message(kept) == {"role": "assistant", "content": " x < 3 \n"}
