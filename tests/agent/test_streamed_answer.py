"""WhatsApp answers go out while the model writes them: with WHATSAPP_STREAM=paragraphs each
completed paragraph (short ones joined with the next) as its own message, in order, formatted as any
reply, nothing sent twice; SMS still gets one reply. The default (auto) is in test_whatsapp_stream."""

from __future__ import annotations

from typing import Any

from bot.channel import formatting
from bot.channel.streaming import STREAM_MIN_CHARS, ParagraphSplitter
from tests.support.agent_loop import ECHO, offer

PHONE = "+2250700000311"


def paragraph(topic: str, n: int) -> str:
    sentence = f"Pour les **{topic}**, retiens bien l'idée numéro {{i}} avant de passer à la suite."
    return " ".join(sentence.format(i=i) for i in range(n))


# Four paragraphs, about 1,500 characters; the second is short and goes with the third.
P1, P2, P3, P4 = (paragraph("fractions", 5), "Un exemple simple : *un demi* vaut 1/2.",
                  paragraph("décimaux", 6), paragraph("pourcentages", 6))
ANSWER = "\n\n".join([P1, P2, P3, P4])


def created(h: Any) -> list[float]:
    return [t for t, kind, _ in h.twilio.events if kind == "created"]


def test_the_splitter_hands_out_completed_paragraphs_once() -> None:
    splitter = ParagraphSplitter()
    pieces: list[str] = []
    for i in range(0, len(ANSWER), 7):
        pieces += splitter.feed(ANSWER[i : i + 7])
    assert pieces == [P1, f"{P2}\n\n{P3}"]  # the last paragraph waits for the end of the stream
    assert splitter.rest(ANSWER) == P4
    code = "Voici le code :\n\n```python\nx = 1\n\n" + "y = 2\n" * 60 + "```\n\nFin."
    fenced = ParagraphSplitter()
    assert fenced.feed(code) == [code[: code.index("\n\nFin")]]  # no cut inside the code block
    assert ParagraphSplitter().feed("x" * (STREAM_MIN_CHARS - 10) + "\n\nsuite") == []
    assert ParagraphSplitter().rest("Autre texte") == "Autre texte"


async def test_whatsapp_answer_streams_paragraph_by_paragraph(make_harness: Any) -> None:
    h = await make_harness(WHATSAPP_STREAM="paragraphs")
    await h.make_user(PHONE)
    assert 1400 <= len(ANSWER) <= 1600
    h.llm.push_text(ANSWER, chunk_delay_s=0.02)
    await h.inbound(PHONE, "Explique-moi les fractions, les décimaux et les pourcentages")
    await h.settle()
    bodies = await h.texts_to(PHONE)
    assert 3 <= len(bodies) <= 4
    assert bodies == [formatting.to_whatsapp(p) for p in (P1, f"{P2}\n\n{P3}", P4)]
    assert "\n\n".join(bodies) == formatting.to_whatsapp(ANSWER)
    [stream] = h.llm.streams
    first_text, ended = stream["first_text"], stream["ended"]
    assert first_text is not None and ended is not None
    sent = created(h)
    assert sent[0] < ended and sent[1] < ended  # two paragraphs left while the model still wrote
    assert sent == sorted(sent)
    print(f"first token -> first WhatsApp message: {(sent[0] - first_text) * 1000:.0f} ms "
          f"(stream {(ended - first_text) * 1000:.0f} ms)")


async def test_sms_gets_one_reply_after_the_stream(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, last_channel="sms")
    h.llm.push_text(ANSWER, chunk_delay_s=0.01)
    await h.inbound(PHONE, "Explique-moi tout", channel="sms")
    await h.settle()
    assert await h.texts_to(PHONE) == formatting.sms_parts(formatting.to_sms(ANSWER))
    [stream] = h.llm.streams
    assert stream["ended"] is not None and min(created(h)) > stream["ended"]


async def test_text_before_tool_calls_is_not_sent_twice(make_harness: Any) -> None:
    h = await make_harness(WHATSAPP_STREAM="paragraphs")
    offer(h, ECHO)
    await h.make_user(PHONE, mode="pro")
    before = f"{P1}\n\nJe vérifie avec un calcul."
    h.llm.push_tool_calls(("echo", {"x": 3}), content=before, chunk_delay_s=0.01)
    h.llm.push_text("C'est bien 3.")
    await h.inbound(PHONE, "Combien ?")
    await h.settle()
    assert await h.texts_to(PHONE) == [formatting.to_whatsapp(P1), "Je vérifie avec un calcul.",
                                       "C'est bien 3."]
    assert len(h.llm.requests) == 2


async def test_a_stream_cut_after_a_paragraph_does_not_resend_it(make_harness: Any) -> None:
    h = await make_harness(WHATSAPP_STREAM="paragraphs")
    await h.make_user(PHONE)
    h.llm.push_die(f"{P1}\n\nEt maintenant, la suite")
    await h.inbound(PHONE, "Explique")
    await h.settle()
    assert await h.texts_to(PHONE) == [formatting.to_whatsapp(P1), "Et maintenant, la suite"]
    assert len(h.llm.requests) == 1  # text had been shown: the call was not tried again


async def test_a_stream_cut_before_any_paragraph_went_out_is_asked_again(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE)
    h.llm.push_die("Je comm")
    h.llm.push_text(ANSWER)
    await h.inbound(PHONE, "Explique")
    await h.settle()
    assert len(h.llm.requests) == 2
    assert await h.texts_to(PHONE) == [formatting.to_whatsapp(ANSWER)]  # whole, once, nothing partial
