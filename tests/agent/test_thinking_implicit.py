"""DeepSeek-R1's chat template opens the think block itself: its content carries a `</think>` and no
`<think>`. For such a model (known by its name, as asked or as the server reports it) nothing of the
stream is shown until the tag says where the answer starts, so no thinking reaches WhatsApp
(streamed paragraph by paragraph), SMS, or the history sent back to the model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from bot.agent.sse import Assembler, parse_bytes
from bot.agent.thinking import ThinkFilter, implicit_thinking
from bot.storage.models import Message

PHONE = "+2250700000624"
R1 = "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"
THOUGHT = ("Okay, the student wants to know what a fraction is. I should think step by step about what "
           "a pupil of that age already knows, and pick an example from daily life that they can see and "
           "touch without any trouble at all.\n\n"
           "Hmm, a pizza cut in four parts is the classic one, but maybe a chocolate bar is better, because "
           "its squares are easy to count. Let me also recall the vocabulary: numerator, denominator, and "
           "the idea of equal parts.\n")
ANSWER = ("Une fraction, c'est une part d'un tout. Si une tablette de chocolat a 4 carrés et que tu en "
          "manges 3, tu as mangé 3/4 de la tablette : 3 est le numérateur, 4 le dénominateur, et les "
          "quatre carrés sont tous pareils.\n\n"
          "Le dénominateur dit en combien de parts égales on coupe, le numérateur combien on en prend. "
          "Essaie : quelle fraction de la tablette reste-t-il quand tu as mangé tes trois carrés ?")
WORDS = ("Okay", "step by step", "pizza", "chocolate", "I should", "Hmm", "numerator", "think")


def frames(model: str, pieces: list[str], finish: str = "stop") -> bytes:
    """A vLLM stream in the shape of the corpus' stream 20: every delta a chunk, then the finish,
    the usage and [DONE]."""
    def chunk(delta: dict[str, Any], finish_reason: str | None = None, usage: Any = None) -> bytes:
        body = {"id": "chatcmpl-r1", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
                "usage": usage}
        return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": p, "tool_calls": None}) for p in pieces]
    out.append(chunk({"content": ""}, finish))
    out.append(chunk({}, None, {"prompt_tokens": 50, "completion_tokens": 120, "total_tokens": 170}))
    return b"".join(out) + b"data: [DONE]\n\n"


def pieces_of(text: str, size: int = 17) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_models_whose_template_may_open_the_block_are_known_by_name() -> None:
    for name in (R1, "deepseek/deepseek-r1", "DeepSeek-R1-0528", "Qwen/QwQ-32B", "Qwen/Qwen3-8B",
                 "Qwen/Qwen3-235B-A22B-Thinking-2507", "moonshotai/kimi-k2-thinking", "MiniMax-M1"):
        assert implicit_thinking(name), name
    for name in ("openai/gpt-4o-mini", "test/model", "Qwen/Qwen3-30B-A3B-Instruct-2507",
                 "qwen/qwen3-coder", "mistralai/mistral-large", "deepseek-chat", ""):
        assert not implicit_thinking(name), name


def test_nothing_is_handed_out_before_the_lone_closing_tag_wherever_the_stream_is_cut() -> None:
    text = f"{THOUGHT}</think>\n\n{ANSWER}"
    end = text.index("</think>") + len("</think>")
    for cut in range(1, len(text)):
        f = ThinkFilter()
        f.wait()
        first = f.feed(text[:cut])
        if cut < end:
            assert first == ""  # not one character of the thought before the tag is complete
        shown = first + f.feed(text[cut:]) + f.close()
        assert (f.answer_of(shown), f.thinking) == (f"\n\n{ANSWER}", THOUGHT)
    # Ended still waiting: the answer, unless the stream was cut short (a thought never closed).
    f = ThinkFilter()
    f.wait()
    assert f.feed(ANSWER) == "" and f.close() == ANSWER and f.thinking == ""
    f = ThinkFilter()
    f.wait()
    assert f.feed(THOUGHT) == "" and f.close(cut=True) == "" and f.thinking == THOUGHT
    # The model writes its own <think>: the wait ends there, the block is taken out as usual.
    f = ThinkFilter()
    f.wait()
    assert f.feed("<thi") == "" and f.feed(f"nk>{THOUGHT}</think>Réponse") == "Réponse"
    assert f.thinking == THOUGHT


def test_the_stream_names_the_model_and_a_reasoning_field_ends_the_wait() -> None:
    # Named by the server only (the request's name said nothing), cut into small pieces.
    body = frames(R1, pieces_of(f"{THOUGHT}</think>\n\n{ANSWER}"))
    got = parse_bytes([body[i : i + 9] for i in range(0, len(body), 9)])
    assert got.answer == f"\n\n{ANSWER}" and got.thinking == THOUGHT
    # Cut by the token limit while thinking: no answer, all thinking.
    assert parse_bytes([frames(R1, pieces_of(THOUGHT), finish="length")]).answer == ""
    # Named by the request; a server that keeps the thinking apart streams the answer as it comes.
    asm = Assembler(R1)
    assert asm.add({"choices": [{"delta": {"content": "Une "}}]}) == ""
    assert asm.add({"choices": [{"delta": {"reasoning_content": "Okay, I should"}}]}) == "Une "
    assert asm.add({"choices": [{"delta": {"content": "fraction"}}]}) == "fraction"
    # Another model streams at once, as before.
    assert Assembler("openai/gpt-4o-mini").add({"choices": [{"delta": {"content": "Une "}}]}) == "Une "


async def _assistant_rows(h: Any) -> list[str]:
    async with h.services.sessions() as db:
        return [r or "" for r in await db.scalars(select(Message.content).where(Message.role == "assistant"))]


@pytest.mark.parametrize("channel", ["whatsapp", "sms"])
async def test_a_template_opened_thought_is_never_sent_nor_kept(make_harness: Any, channel: str) -> None:
    h = await make_harness(WHATSAPP_STREAM="paragraphs", LLM_MODEL=R1)
    await h.make_user(PHONE, last_channel=channel)
    h.llm.push_raw(frames(R1, pieces_of(f"{THOUGHT}</think>\n\n{ANSWER}")))
    await h.inbound(PHONE, "C'est quoi une fraction ?", channel=channel)
    await h.settle()
    bodies = await h.texts_to(PHONE)
    assert bodies and "3/4 de la tablette" in " ".join(bodies) and "reste-t-il" in " ".join(bodies)
    for word in WORDS:
        assert all(word not in body for body in bodies), word
    if channel == "whatsapp":  # still streamed, once the thought is over: one message per paragraph
        assert len(bodies) == 2
    assert await _assistant_rows(h) == [ANSWER]
    h.llm.push_text("Oui, exactement.")
    await h.inbound(PHONE, "Il reste 1/4 ?", channel=channel)
    await h.settle()
    sent_back = json.dumps(h.llm.requests[-1]["messages"], ensure_ascii=False)
    assert "3/4 de la tablette" in sent_back
    for word in ("Okay, the student", "pizza", "chocolate bar", "</think>"):
        assert word not in sent_back
