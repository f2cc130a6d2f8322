"""One billed WhatsApp message per file: the file's caption rides as the media message's body.

Through the real send path and the local Twilio API: a generated document in a conversation turn,
a text too long for a caption (the text first, then the file captioned with its name), three files
of one turn (three messages, each captioned), and a refused file the model is not told was sent."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot.channel.formatting import WHATSAPP_CAPTION_MAX, WHATSAPP_MAX
from bot.channel.outbound import SendKeys, deliver_outbox, send_to_user, sending, whatsapp_messages
from bot.storage.models import OutboundMessage
from tests.support.files import ctx_for, make_file
from tests.support.harness import Harness
from tools import by_name

# One backend: the database only holds the file; the document does not depend on it.
pytestmark = pytest.mark.one_backend

PHONE = "+2250733333333"


async def outbound(h: Harness) -> list[OutboundMessage]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(OutboundMessage).order_by(OutboundMessage.id))).all())


def with_file(sent: list[dict]) -> list[dict]:
    return [m for m in sent if m.get("MediaUrl")]


async def test_a_generated_document_arrives_as_one_message_with_its_caption(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE, mode="child")
    h.llm.push_tool_calls(("generate_pdf", {"title": "Résumé : les fractions",
                                            "markdown": "Une fraction représente une partie d'un tout.",
                                            "caption": "Ta fiche sur les fractions"}))
    h.llm.push_text("Voici ton résumé en PDF !")
    await h.inbound(PHONE, "Fais-moi un résumé en PDF stp")
    await h.settle(timeout_s=30)
    await h.twilio.wait_for(2, timeout_s=30)
    await h.settle(timeout_s=30)
    sent = h.twilio.to(PHONE)
    [media] = with_file(sent)
    assert media["Body"] == "Ta fiche sur les fractions"
    assert media["MediaUrl"].endswith(".pdf")
    # The file and the answer: two messages (before: a caption, then an empty-bodied file, then the answer).
    assert [m.get("Body") for m in sent] == ["Ta fiche sur les fractions", "Voici ton résumé en PDF !"]
    [row] = [r for r in await outbound(h) if r.media_url]
    assert row.body == "Ta fiche sur les fractions" and row.media_url == media["MediaUrl"] and row.sid


async def test_a_text_longer_than_a_caption_goes_first_then_the_file_named(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    doc = await make_file(h, user, "Bilan 2026.pdf", "application/pdf", b"%PDF-1.4 bilan")
    long_text = " ".join(["Le bilan montre une hausse des ventes."] * 60)  # about 2,300 characters
    result = await send_to_user(h.services, user, text=long_text, media=doc)
    assert result.ok
    sent = h.twilio.to(f"whatsapp:{PHONE}")
    *texts, media = sent
    assert len(texts) == 2 and all("MediaUrl" not in m and len(m["Body"]) <= WHATSAPP_MAX for m in texts)
    assert " ".join(m["Body"] for m in texts) == long_text
    assert media["Body"] == "📄 Bilan 2026.pdf" and media["MediaUrl"].endswith("/bilan-2026.pdf")


def test_the_caption_limit_decides_one_message_or_more() -> None:
    url = "https://example.test/files/1/x.pdf"
    fits = "a" * WHATSAPP_CAPTION_MAX
    assert whatsapp_messages(fits, url, "x.pdf") == [{"body": fits, "media_url": url}]
    over = fits + "a"
    assert whatsapp_messages(over, url, "x.pdf") == [{"body": over}, {"body": "📄 x.pdf", "media_url": url}]
    # No text: the file is still captioned, with its name; no file: the text alone, unchanged rule.
    assert whatsapp_messages("", url, "x.pdf") == [{"body": "📄 x.pdf", "media_url": url}]
    assert whatsapp_messages("Bonjour") == [{"body": "Bonjour"}]
    # A voice note shows no caption on WhatsApp: the text first, the audio alone (VOCAL, as before).
    assert whatsapp_messages("Bonjour", url, "vocal.ogg", captioned=False) == [
        {"body": "Bonjour"}, {"body": "", "media_url": url}]
    assert whatsapp_messages("") == []


async def test_three_files_of_one_turn_are_three_messages_each_captioned(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE, mode="child")
    titles = ("Les fractions", "Les décimaux", "Les pourcentages")
    h.llm.push_tool_calls(*(("generate_pdf", {"title": f"Fiche : {t}", "markdown": f"Leçon sur {t}.",
                                              "caption": f"Fiche {t}"}) for t in titles))
    h.llm.push_text("Voici tes trois fiches.")
    await h.inbound(PHONE, "Trois fiches en PDF stp")
    await h.settle(timeout_s=30)
    await h.twilio.wait_for(4, timeout_s=30)  # the answer may come from the turn's background job
    await h.settle(timeout_s=30)
    sent = h.twilio.to(PHONE)
    media = with_file(sent)
    assert sorted(m["Body"] for m in media) == sorted(f"Fiche {t}" for t in titles)
    assert len({m["MediaUrl"] for m in media}) == 3
    assert len(sent) == 4, [m.get("Body") for m in sent]  # three files, one message each, and the answer
    assert all(m.get("Body") for m in sent)


async def test_a_refused_file_is_not_told_as_sent(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    h.twilio.fail_next("63005")  # the channel refused the content: the one message with the file
    result = await by_name()["generate_pdf"].run(
        ctx_for(h, user, "whatsapp"), {"title": "Facture", "markdown": "Total : 10 000 FCFA",
                                       "caption": "Ta facture"})
    assert result["success"] and result["delivered"] is False and result.get("note")
    assert not with_file(h.twilio.to(PHONE))
    [row] = await outbound(h)
    assert row.media_url and row.sid is None and row.status == "failed" and row.body == "Ta facture"


def test_bench_cost_counts_messages_per_file_before_and_after() -> None:
    from bench.cost import files

    assert (files.before(files.SHORT), files.after(files.SHORT)) == (2, 1)
    assert (files.reply(3, files.SHORT, "before"), files.reply(3, files.SHORT, "after")) == (7, 4)
    # A text over the caption's 1,024 characters: the text's messages, then the file; no worse than before.
    assert len(files.LONG) > WHATSAPP_CAPTION_MAX and files.after(files.LONG) == files.before(files.LONG)
    assert "answer + 3 files, short caption" in files.table()


async def test_a_captioned_file_twilio_did_not_take_waits_and_goes_once_whole(make_harness: Any) -> None:
    h = await make_harness(OUTBOX_POLL_S="3600", OUTBOX_BACKOFF_S="5", OUTBOX_BACKOFF_MAX_S="20")
    user = await h.make_user(PHONE)
    doc = await make_file(h, user, "Fiche.pdf", "application/pdf", b"%PDF-1.4 fiche")
    back_at = h.clock() + timedelta(seconds=20)
    h.twilio.fail_while("500", lambda: h.clock() < back_at)
    with sending(keys=SendKeys("turn:file")):
        result = await send_to_user(h.services, user, text="Ta fiche.", media=doc)
    assert result.queued and not result.ok and h.twilio.sent == []  # not told as sent
    [row] = await outbound(h)
    assert row.status == "queued" and row.body == "Ta fiche." and row.media_url
    h.clock.advance(seconds=30)
    assert await deliver_outbox(h.services) == 1
    with sending(keys=SendKeys("turn:file")):  # the same turn again: its row answers, nothing resent
        again = await send_to_user(h.services, user, text="Ta fiche.", media=doc)
    assert again.sids == [h.twilio.sent[0]["Sid"]]
    [sent] = h.twilio.sent
    assert sent["Body"] == "Ta fiche." and sent["MediaUrl"] == row.media_url
