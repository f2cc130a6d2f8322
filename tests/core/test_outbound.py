"""Outbound: formatting per channel, parts in order, the 24 h window, Twilio failures, statuses, files."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from bot.channel.formatting import is_gsm7, sms_segments
from bot.channel.links import file_url
from bot.channel.outbound import send_to_number, send_to_user
from bot.storage.models import OutboundMessage
from tests.support.files import make_file
from tests.support.harness import SMS_FROM, WHATSAPP_FROM, Harness

PHONE = "+2250700000001"
FRENCH = ("Très bien ! Voici l'exercice d'aujourd'hui : « être » et « avoir » au présent. "
          "Ça t'intéresse ? Même le tréma de Noël et l’apostrophe typographique… œuvre, île, sûr.")


def long_markdown(paragraphs: int = 6, sentences: int = 12) -> str:
    return "\n\n".join(
        " ".join(f"Paragraphe {p}, phrase {s} : la photosynthèse transforme la lumière."
                 for s in range(sentences))
        for p in range(paragraphs)
    )


async def outbound_rows(h: Harness) -> list[OutboundMessage]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(OutboundMessage).order_by(OutboundMessage.id))).all())


async def test_whatsapp_gets_whatsapp_markdown(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    md = ("# Les fractions\n\nUne **fraction** s'écrit *a/b*. Voir [le cours](https://ex.org/c).\n\n"
          "| Fraction | Valeur |\n|---|---|\n| 1/2 | 0,5 |\n| 1/4 | 0,25 |\n\n- un\n- deux")
    result = await send_to_user(h.services, user, text=md)
    assert result.ok and result.channel == "whatsapp" and len(result.sids) == 1
    [sent] = h.twilio.sent
    assert sent["To"] == f"whatsapp:{PHONE}" and sent["From"] == WHATSAPP_FROM
    body = sent["Body"]
    assert body.startswith("*Les fractions*\n\nUne *fraction* s'écrit _a/b_.")
    assert "le cours (https://ex.org/c)" in body
    assert "• *1/2*: Valeur: 0,5" in body and "• *1/4*: Valeur: 0,25" in body
    assert "• un\n• deux" in body
    assert "**" not in body and "#" not in body and "|" not in body
    assert sent["StatusCallback"] == h.settings.public_base_url + "/twilio/status"


async def test_sms_gets_plain_gsm7_text(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, last_channel="sms")
    result = await send_to_user(h.services, user, text=f"**Bravo** !\n\n{FRENCH}")
    assert result.ok and result.channel == "sms"
    bodies = [m["Body"] for m in h.twilio.sent]
    assert all(m["From"] == SMS_FROM and m["To"] == PHONE for m in h.twilio.sent)
    text = " ".join(bodies)
    assert is_gsm7(text)
    assert text.startswith("Bravo !")
    # Accents GSM-7 has are kept; the others are transliterated.
    assert "Très bien" in text and "présent" in text and "Ça t'intéresse" in text
    assert "Meme le tréma de Noel" in text
    assert '"etre" et "avoir"' in text and "l'apostrophe" in text and "oeuvre, ile, sur" in text
    rows = await outbound_rows(h)
    for row in rows:
        assert row.segments == sms_segments(row.body)[1] <= 2


async def test_long_whatsapp_reply_is_split_and_sent_in_order(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    text = long_markdown()
    result = await send_to_user(h.services, user, text=text)
    assert result.ok and len(result.sids) >= 3
    bodies = [m["Body"] for m in h.twilio.sent]
    assert all(len(b) <= 1600 for b in bodies)
    assert all(b.endswith(".") for b in bodies)  # cut between sentences, not inside one
    assert " ".join(bodies).replace("\n\n", " ") == text.replace("\n\n", " ")
    # Each part left only after Twilio reported the previous one sent.
    events = h.twilio.events
    for previous, following in zip(result.sids, result.sids[1:], strict=False):
        sent_at = next(t for t, kind, sid in events if sid == previous and kind == "sent")
        created_at = next(t for t, kind, sid in events if sid == following and kind == "created")
        assert created_at >= sent_at


async def test_parts_still_go_out_when_no_status_callback_comes(make_harness: Any) -> None:
    h = await make_harness(OUTBOUND_PART_WAIT_S="0.2")
    h.twilio.send_callbacks = False
    user = await h.make_user(PHONE)
    result = await send_to_user(h.services, user, text=long_markdown())
    assert result.ok and len(h.twilio.sent) == len(result.sids) >= 3


async def test_long_sms_is_split_into_parts_of_at_most_two_segments(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, last_channel="sms")
    result = await send_to_user(h.services, user, text=long_markdown(2, 8))
    assert result.ok and len(result.sids) > 3
    for m in h.twilio.sent:
        encoding, segments = sms_segments(m["Body"])
        assert encoding == "GSM-7" and segments <= 2 and len(m["Body"]) <= 306


async def test_outside_the_24h_window_a_template_is_sent(make_harness: Any) -> None:
    h = await make_harness(TWILIO_TEMPLATE_SID="HX" + "a" * 32)
    user = await h.make_user(PHONE)
    h.clock.advance(hours=25)
    result = await send_to_user(h.services, user, text="Rappel : **contrôle** de maths demain à 8 h.")
    assert result.ok and result.template and result.channel == "whatsapp"
    [sent] = h.twilio.sent
    assert sent["ContentSid"] == "HX" + "a" * 32 and "Body" not in sent
    assert json.loads(sent["ContentVariables"]) == {"1": "Rappel : contrôle de maths demain à 8 h."}


async def test_outside_the_window_without_template_sms_is_used(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, last_whatsapp_inbound_at=h.clock() - timedelta(hours=30))
    result = await send_to_user(h.services, user, text="Ton rappel : réviser la géométrie.")
    assert result.ok and result.channel == "sms"
    [sent] = h.twilio.sent
    assert sent["To"] == PHONE and sent["From"] == SMS_FROM
    assert sent["Body"] == "Ton rappel : réviser la géométrie."


async def test_inside_the_window_free_text_is_sent(make_harness: Any) -> None:
    h = await make_harness(TWILIO_TEMPLATE_SID="HX" + "b" * 32)
    user = await h.make_user(PHONE)
    h.clock.advance(hours=23)
    result = await send_to_user(h.services, user, text="Encore là ?")
    assert result.ok and not result.template
    assert h.twilio.sent[0]["Body"] == "Encore là ?" and "ContentSid" not in h.twilio.sent[0]


async def test_rate_limits_are_retried_with_backoff(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    h.twilio.fail_next("429", times=2)
    result = await send_to_user(h.services, user, text="Après deux refus.")
    assert result.ok
    assert h.twilio.requests == 3 and h.twilio.bodies() == ["Après deux refus."]


async def test_a_5xx_after_twilio_created_the_message_is_not_sent_twice(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    h.twilio.fail_next("500_after_create")
    result = await send_to_user(h.services, user, text="Une seule fois.")
    assert result.ok and h.twilio.bodies() == ["Une seule fois."]
    assert result.sids == [h.twilio.sent[0]["Sid"]]  # found by looking it up


async def test_a_dropped_connection_after_create_is_not_sent_twice(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    h.twilio.fail_next("drop_after_create")
    result = await send_to_user(h.services, user, text="Toujours une fois.")
    assert result.ok and h.twilio.bodies() == ["Toujours une fois."]


async def test_a_5xx_without_create_is_sent_once_after_checking(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    h.twilio.fail_next("500")
    result = await send_to_user(h.services, user, text="Envoyé après vérification.")
    assert result.ok and h.twilio.bodies() == ["Envoyé après vérification."]


async def test_a_refused_send_is_recorded_and_not_retried(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    h.twilio.fail_next("400")
    result = await send_to_user(h.services, user, text="Refusé.")
    assert not result.ok and result.error
    assert h.twilio.requests == 1 and h.twilio.sent == []
    [row] = await outbound_rows(h)
    assert row.status == "failed" and row.error_code == "21211"


async def test_a_carrier_stop_stops_proactive_messages(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, last_channel="sms")
    h.twilio.fail_next("21610")
    result = await send_to_user(h.services, user, text="Rappel", kind="reminder")
    assert not result.ok and result.reason == "refused" and result.error_code == 21610 and result.permanent
    refreshed = await h.user(PHONE)
    assert refreshed is not None and not refreshed.opted_out  # the carrier's STOP, not ours
    assert refreshed.delivery_blocked_reason == "21610 sms: unsubscribed (STOP to the carrier)"
    assert refreshed.delivery_blocked_at == h.clock()
    again = await send_to_user(h.services, refreshed, text="Encore", kind="reminder")
    assert again.skipped == "delivery_blocked" and again.detail == refreshed.delivery_blocked_reason
    assert h.twilio.requests == 1


async def test_twilio_down_is_retried_then_kept_in_the_outbox(make_harness: Any) -> None:
    h = await make_harness(TWILIO_API_BASE_URL="http://127.0.0.1:9", TWILIO_SEND_ATTEMPTS="3")
    user = await h.make_user(PHONE)
    result = await send_to_user(h.services, user, text="Personne ?")
    assert not result.ok and "connect" in (result.error or "")
    # Not claimed as sent, not given up either: the outbox sends it once Twilio answers.
    assert result.queued and result.reason == "queued" and not result.permanent and not result.retryable
    [row] = await outbound_rows(h)
    assert row.status == "queued" and row.sid is None and row.attempts == 1 and row.next_attempt_at
    assert "connect" in (row.last_error or "")


async def test_a_proactive_send_is_not_queued_its_caller_retries_it(make_harness: Any) -> None:
    h = await make_harness(TWILIO_API_BASE_URL="http://127.0.0.1:9", TWILIO_SEND_ATTEMPTS="2")
    user = await h.make_user(PHONE)
    result = await send_to_user(h.services, user, text="Rappel", kind="reminder")
    assert not result.ok and not result.queued and result.retryable and result.reason == "unavailable"
    [row] = await outbound_rows(h)
    assert row.status == "failed"


async def test_status_callbacks_are_recorded(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    result = await send_to_user(h.services, user, text="Suivi")
    await h.twilio.idle()
    [row] = await outbound_rows(h)
    assert row.sid == result.sids[0] and row.status == "delivered" and row.kind == "reply"
    # A late, out-of-order "sent" does not move it back; "read" moves it on.
    base = {"MessageSid": row.sid, "AccountSid": h.settings.twilio_account_sid, "To": f"whatsapp:{PHONE}"}
    assert (await h.post_form("/twilio/status", {**base, "MessageStatus": "sent"}))[0] == 200
    assert (await h.post_form("/twilio/status", {**base, "MessageStatus": "read"}))[0] == 200
    [row] = await outbound_rows(h)
    assert row.status == "read"
    # Unsigned callbacks are refused.
    assert (await h.post_form("/twilio/status", {**base, "MessageStatus": "failed"}, signed=False))[0] == 403
    assert (await outbound_rows(h))[0].status == "read"


async def test_a_status_callback_before_the_sid_is_stored_is_still_applied(harness: Harness) -> None:
    """Twilio may call back before the sender has saved the SID its create call returned: the
    callback looks for the row again until the SID is there, then applies to it."""
    h = harness
    user = await h.make_user(PHONE)
    h.twilio.send_callbacks = False
    result = await send_to_user(h.services, user, text="Tôt")
    [row] = await outbound_rows(h)
    sid = result.sids[0]
    assert row.sid == sid and row.status == "queued"
    async with h.services.sessions() as db:  # as if the sender had not saved it yet
        await db.execute(update(OutboundMessage).where(OutboundMessage.id == row.id).values(sid=None))
        await db.commit()
    callback = asyncio.create_task(h.post_form("/twilio/status", {
        "MessageSid": sid, "MessageStatus": "delivered", "AccountSid": h.settings.twilio_account_sid,
        "To": f"whatsapp:{PHONE}"}))
    await asyncio.sleep(0.3)
    assert not callback.done()  # still looking for the SID
    async with h.services.sessions() as db:
        await db.execute(update(OutboundMessage).where(OutboundMessage.id == row.id).values(sid=sid))
        await db.commit()
    assert (await callback)[0] == 200
    [row] = await outbound_rows(h)
    assert row.sid == sid and row.status == "delivered"


async def test_a_failure_callback_records_the_error_code(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    h.twilio.callback_statuses = ("sent", "undelivered")
    await send_to_user(h.services, user, text="Perdu")
    await h.twilio.idle()
    [row] = await outbound_rows(h)
    assert row.status == "undelivered" and row.sid is not None
    status, _ = await h.post_form("/twilio/status", {"MessageSid": row.sid, "MessageStatus": "failed",
                                                     "ErrorCode": "63016",
                                                     "AccountSid": h.settings.twilio_account_sid})
    assert status == 200
    [row] = await outbound_rows(h)
    assert row.error_code == "63016"
    refreshed = await h.user(PHONE)
    assert refreshed is not None and refreshed.delivery_failures >= 1


async def test_corpus_status_callbacks(harness: Harness) -> None:
    from tests.support.twilio_corpus import corpus

    h = harness
    sid = corpus("04-whatsapp-status-sent.json")["params"][6][1]
    async with h.services.sessions() as db:
        db.add(OutboundMessage(channel="whatsapp", to_addr="whatsapp:+31612345678", body="x", sid=sid,
                               status="queued", created_at=h.clock()))
        await db.commit()
    url = h.settings.public_base_url + "/twilio/status"
    for name in ("04-whatsapp-status-sent.json", "05-whatsapp-status-delivered.json"):
        account = h.settings.twilio_account_sid  # the corpus's own account is not this bot's
        params = [(k, account if k == "AccountSid" else v) for k, v in corpus(name)["params"]]
        if dict(params)["MessageSid"] != sid:
            continue
        status, _ = await h.post_form("/twilio/status", params, signed_url=url)
        assert status == 200
    [row] = await outbound_rows(h)
    assert row.status == "sent"


async def test_whatsapp_file_is_fetched_by_twilio_from_a_signed_link(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    data = b"%PDF-1.4 fake pdf bytes"
    doc = await make_file(h, user, "Fiche de révision — les fractions.pdf", "application/pdf", data)
    result = await send_to_user(h.services, user, text="Voici ta fiche.", media=doc)
    # One billed message: the text rides as the file's caption.
    assert result.ok and len(result.sids) == 1
    [media_part] = h.twilio.sent
    assert media_part["Body"] == "Voici ta fiche."
    assert media_part["MediaUrl"].startswith(h.settings.public_base_url + "/files/")
    await h.twilio.idle()
    [fetch] = h.twilio.fetched
    assert fetch["head_status"] == 200 and fetch["status"] == 200
    assert fetch["head_type"] == fetch["content_type"] == "application/pdf"
    assert fetch["body"] == data
    # WhatsApp shows the media's file name: readable, the last segment of the link.
    filename = fetch["disposition"].split('filename="', 1)[1].rstrip('"')
    assert filename == "fiche-de-revision-les-fractions.pdf" == media_part["MediaUrl"].rsplit("/", 1)[1]
    [media_row] = await outbound_rows(h)
    assert media_row.status == "delivered" and media_row.body == "Voici ta fiche."
    assert media_row.media_url == media_part["MediaUrl"]


async def test_signed_links_refuse_any_change_and_expire(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    doc = await make_file(h, user, "notes.xlsx",
                          "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", b"PK xlsx")
    path = file_url(h.settings, doc).removeprefix(h.settings.public_base_url)
    status, headers, body = await h.get(path)
    assert status == 200 and body == b"PK xlsx"
    assert headers["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    status, headers, body = await h.get(path, method="HEAD")
    assert status == 200 and body == b"" and headers["Content-Length"] == "7"
    for i in range(len("/files/"), len(path)):
        if path[i] == "/":
            continue
        changed = path[:i] + ("1" if path[i] != "1" else "2") + path[i + 1:]
        assert (await h.get(changed))[0] == 404, changed
    expired = file_url(h.settings, doc, ttl_s=-1).removeprefix(h.settings.public_base_url)
    assert (await h.get(expired))[0] == 404


async def test_sms_gets_the_file_as_a_link(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, last_channel="sms")
    doc = await make_file(h, user, "exercices.pdf", "application/pdf", b"%PDF")
    result = await send_to_user(h.services, user, text="Voici les exercices.", media=doc)
    assert result.ok
    body = " ".join(m["Body"] for m in h.twilio.sent)
    assert "MediaUrl" not in h.twilio.sent[0]
    assert "exercices.pdf: " + h.settings.public_base_url + "/files/" in body
    link = body.split(h.settings.public_base_url, 1)[1].split()[0]
    assert (await h.get(link))[0] == 200


async def test_send_to_number_reaches_someone_who_is_not_a_user(harness: Harness) -> None:
    h = harness
    result = await send_to_number(h.services, "+2250500000009", text="Votre enfant vous invite sur Deblo.")
    assert result.ok and h.twilio.sent[0]["To"] == "+2250500000009"
    [row] = await outbound_rows(h)
    assert row.user_id is None and row.kind == "notice"


async def test_chat_mode_prints_replies_and_file_paths(harness: Harness) -> None:
    import io

    from bot.channel.console import ConsoleSink

    h = harness
    user = await h.make_user(PHONE)
    doc = await make_file(h, user, "fiche.pdf", "application/pdf", b"%PDF")
    out = io.StringIO()
    h.services.console = ConsoleSink(out)
    result = await send_to_user(h.services, user, text="Voici **ta fiche**.", media=doc)
    assert result.ok and result.channel == "cli" and h.twilio.sent == []
    printed = out.getvalue()
    path = h.stored_path(doc.storage_key)
    assert "Voici *ta fiche*." in printed and str(path) in printed and path.read_bytes() == b"%PDF"
