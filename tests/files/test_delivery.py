"""Generated files reach the user through the real outbound path and the local Twilio API: on
WhatsApp as media fetched from a signed link (GET and HEAD, exact MIME type), on SMS as that link
in the text. Links altered by one character, or expired, are refused. Files the user sends enter
the library, and the memory commands work from a message."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from sqlalchemy import select

from bot import library
from bot.channel.links import file_path
from bot.storage.models import UserFile
from tests.support.files import ctx_for
from tests.support.harness import Harness
from tools import by_name

PHONE = "+2250711111111"
OTHER = "+2250722222222"


async def fetch(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """As Twilio fetches media: a plain request to the public URL, no cookies, no credentials."""
    async with aiohttp.ClientSession() as session, session.request(method, url) as resp:
        return resp.status, dict(resp.headers), await resp.read()


async def stored(h: Harness, user_id: int, file_id: int) -> tuple[UserFile, bytes]:
    async with h.services.sessions() as db:
        row = await library.get_file(db, user_id, file_id)
    assert row is not None
    return row, await h.services.files.get(row.storage_key)


XLSX_ARGS: dict[str, Any] = {
    "title": "Budget de la coopérative",
    "sheets": [
        {
            "name": "Budget",
            "rows": [["Poste", "Montant (FCFA)"], ["Fournitures", 125000], ["Transport", "45 000"]],
            "totals": True,
        }
    ],
}


async def test_whatsapp_media_link_serves_the_exact_file(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    result = await by_name()["generate_xlsx"].run(ctx_for(h, user, "whatsapp"), XLSX_ARGS)
    assert result["success"] and result["delivered"]
    await h.twilio.wait_for(1)
    sent = h.twilio.to(PHONE)
    media = [m for m in sent if m.get("MediaUrl")]
    # One message: the file, captioned with its name.
    assert len(sent) == len(media) == 1 and "Budget de la coopérative" in media[0]["Body"]
    url = media[0]["MediaUrl"]
    url = url[0] if isinstance(url, list) else url
    assert url.startswith(h.settings.public_base_url + f"/files/{result['file_id']}/")
    row, data = await stored(h, user.id, result["file_id"])
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    status, headers, body = await fetch(url, "HEAD")
    assert status == 200 and headers["Content-Type"] == xlsx and headers["Content-Length"] == str(row.size)
    assert body == b""
    status, headers, body = await fetch(url)
    assert status == 200 and headers["Content-Type"] == xlsx and body == data
    # The local Twilio fetched it too (HEAD then GET) and found the types equal.
    await h.twilio.idle()
    fetched = [f for f in h.twilio.fetched if f["url"] == url]
    assert fetched and fetched[0]["head_type"] == fetched[0]["content_type"] == xlsx
    assert fetched[0]["body"] == data
    name = urlsplit(url).path.rsplit("/", 1)[1]
    assert name == "budget-de-la-cooperative.xlsx"  # what WhatsApp shows: readable, no spaces
    assert f'filename="{name}"' in headers["Content-Disposition"]


async def test_sms_gets_the_link_in_the_text(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="child", last_channel="sms")
    result = await by_name()["generate_pdf"].run(
        ctx_for(h, user, "sms"),
        {"title": "Résumé : la photosynthèse", "markdown": "La plante capte la lumière."},
    )
    assert result["success"]
    await h.twilio.wait_for(1)
    sent = h.twilio.to(PHONE)
    assert all(not m.get("MediaUrl") for m in sent)
    text = "\n".join(m.get("Body", "") for m in sent)
    link = next(w for w in text.split() if w.startswith(h.settings.public_base_url + "/files/"))
    _row, data = await stored(h, user.id, result["file_id"])
    status, headers, body = await fetch(link)
    assert status == 200 and headers["Content-Type"] == "application/pdf" and body == data


async def test_html_on_whatsapp_goes_as_a_link_and_is_served_inert(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    result = await by_name()["generate_html"].run(
        ctx_for(h, user, "whatsapp"),
        {
            "title": "Lettre d'information",
            "markdown": "Bonjour à tous",
            "html": "<p>Réunion <script>fetch('http://evil')</script><img src=http://evil/p.gif></p>",
        },
    )
    assert result["success"]
    await h.twilio.wait_for(1)
    sent = h.twilio.to(PHONE)
    assert all(not m.get("MediaUrl") for m in sent)  # WhatsApp refuses text/html attachments
    link = next(w for m in sent for w in m.get("Body", "").split() if "/files/" in w)
    status, headers, body = await fetch(link)
    assert status == 200 and headers["Content-Type"] == "text/html"
    assert b"Bonjour \xc3\xa0 tous" in body and b"<script" not in body and b"evil" not in body


async def test_altered_or_expired_links_are_refused(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    other = await h.make_user(OTHER, mode="pro")
    mine = (
        await by_name()["generate_md"].run(
            ctx_for(h, user, "sms"), {"title": "Notes privées", "markdown": "Mon code secret"}
        )
    )["file_id"]
    theirs = (
        await by_name()["generate_md"].run(
            ctx_for(h, other, "sms"), {"title": "Autres notes", "markdown": "Autre"}
        )
    )["file_id"]
    row, data = await stored(h, user.id, mine)
    path = file_path(h.settings, row)
    status, _headers, body = await fetch(h.base_url + path)
    assert status == 200 and body == data
    _, _files, fid, expires, sig, name = path.split("/")
    altered = [
        f"/files/{theirs}/{expires}/{sig}/{name}",  # another file under the same signature
        f"/files/{fid}/{int(expires) + 1}/{sig}/{name}",  # a longer life
        f"/files/{fid}/{expires}/{sig[:-1]}{'A' if sig[-1] != 'A' else 'B'}/{name}",
        f"/files/{fid}/{expires}/{sig}/{name[:-1]}x",
    ]
    for bad in altered:
        for method in ("GET", "HEAD"):
            status, _headers, body = await fetch(h.base_url + bad, method)
            assert status == 404, (bad, method)
            assert b"Mon code secret" not in body
    expired = file_path(h.settings, row, now=time.time() - h.settings.file_link_ttl_s - 5)
    status, _headers, body = await fetch(h.base_url + expired)
    assert status == 404 and b"secret" not in body


async def test_generation_from_a_conversation_turn(harness: Harness) -> None:
    """The model asks for a PDF; the user gets it on WhatsApp, and the model only sees its id."""
    h = harness
    await h.make_user(PHONE, mode="child")
    h.llm.push_tool_calls(
        (
            "generate_pdf",
            {
                "title": "Résumé : les fractions",
                "markdown": "Une fraction représente une partie d'un tout.",
            },
        )
    )
    h.llm.push_text("Voici ton résumé en PDF !")
    await h.inbound(PHONE, "Fais-moi un résumé en PDF stp")
    await h.settle(timeout_s=30)
    sent = h.twilio.to(PHONE)
    media = [m for m in sent if m.get("MediaUrl")]
    assert len(media) == 1, sent
    url = media[0]["MediaUrl"]
    url = url[0] if isinstance(url, list) else url
    status, headers, body = await fetch(url)
    assert status == 200 and headers["Content-Type"] == "application/pdf" and body.startswith(b"%PDF")
    assert "Voici ton résumé en PDF !" in "\n".join(m.get("Body", "") for m in sent)
    assert "%PDF" not in h.llm.all_request_text()
    assert '"file_id"' in h.llm.all_request_text()


async def test_a_document_the_user_sends_enters_the_library(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    h.llm.push_text("Bien reçu.")
    await h.inbound(
        PHONE, "", media=[("Compte rendu : la réunion des parents aura lieu jeudi.".encode(), "text/plain")]
    )
    await h.settle(timeout_s=30)
    async with h.services.sessions() as db:
        rows = (await db.execute(select(UserFile).where(UserFile.user_id == user.id))).scalars().all()
    assert len(rows) == 1 and rows[0].origin == "upload" and "réunion des parents" in (rows[0].text or "")
    from bot.agent.toolspec import ToolContext as Ctx

    ctx = Ctx(
        services=h.services, user_id=user.id, conversation_id=0, channel="whatsapp", mode="pro", language="fr"
    )
    found = await by_name()["search_user_files"].run(ctx, {"query": "reunion parents"})
    assert [r["file_id"] for r in found["results"]] == [rows[0].id]


async def test_memory_commands(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="child")
    ctx = ctx_for(h, user, "whatsapp")
    save = by_name()["save_memory"].run
    assert (await save(ctx, {"fact": "Est en classe de 3e au lycée de Cocody"}))["status"] == "saved"
    assert (await save(ctx, {"fact": "Aime les mathématiques"}))["status"] == "saved"
    assert (await save(ctx, {"fact": "aime les MATHEMATIQUES !"}))["status"] == "already_known"
    await h.inbound(PHONE, "MEMOIRE")
    await h.settle()
    listing = (await h.texts_to(PHONE))[-1]
    assert "1. Est en classe de 3e au lycée de Cocody" in listing and "2. Aime les mathématiques" in listing
    await h.inbound(PHONE, "oublie 1")
    await h.settle()
    assert "Est en classe de 3e" in (await h.texts_to(PHONE))[-1]
    await h.inbound(PHONE, "OUBLIE 7")
    await h.settle()
    assert "7" in (await h.texts_to(PHONE))[-1]
    await h.inbound(PHONE, "Mémoire")
    await h.settle()
    listing = (await h.texts_to(PHONE))[-1]
    assert "1. Aime les mathématiques" in listing and "Cocody" not in listing


async def test_memory_commands_in_english(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro", language="en")
    await h.inbound(PHONE, "MEMORY")
    await h.settle()
    assert "I don't remember anything about you yet" in (await h.texts_to(PHONE))[-1]
    await by_name()["save_memory"].run(
        ctx_for(h, user, "whatsapp"), {"fact": "Works as an accountant in Dakar"}
    )
    await h.inbound(PHONE, "memory")
    await h.settle()
    assert "1. Works as an accountant in Dakar" in (await h.texts_to(PHONE))[-1]
    await h.inbound(PHONE, "FORGET 1")
    await h.settle()
    assert (await h.texts_to(PHONE))[-1] == 'Forgotten: "Works as an accountant in Dakar"'
    await h.inbound(PHONE, "forget all")
    await h.settle()
    assert "Done: I forgot everything I remembered (0)." == (await h.texts_to(PHONE))[-1]


async def test_a_file_too_heavy_to_send_is_an_error(make_harness: Any) -> None:
    h = await make_harness(MEDIA_MAX_BYTES="2000")
    user = await h.make_user(PHONE, mode="pro")
    result = await by_name()["generate_pdf"].run(
        ctx_for(h, user, "whatsapp"), {"title": "Lourd", "markdown": "Un texte " * 400}
    )
    assert result["success"] is False and "split it into several files" in result["error"]
    assert h.twilio.sent == []


def link_in(text: str, base: str) -> str:
    return next(w for w in text.split() if w.startswith(base + "/files/"))


def link_parts(url: str) -> tuple[str, str, str, str]:
    file_id, expires, sig, name = urlsplit(url).path.removeprefix("/files/").split("/")
    return file_id, expires, sig, name


async def test_links_read_later_last_days_and_media_links_an_hour(harness: Harness) -> None:
    from bot.channel.links import check_link

    h = harness
    user = await h.make_user(PHONE, mode="pro", last_channel="sms")
    result = await by_name()["generate_pdf"].run(
        ctx_for(h, user, "sms"), {"title": "Bilan SYSCOHADA 2026", "markdown": "Actif et passif."}
    )
    await h.twilio.wait_for(1)
    sms_link = link_in("\n".join(h.twilio.bodies()), h.settings.public_base_url)
    assert sms_link.endswith("/bilan-syscohada-2026.pdf")
    now = time.time()
    two_days = now + 2 * 86400
    # An SMS link is opened later: still valid two days on, expired after FILE_LINK_SMS_TTL_S.
    assert check_link(h.settings, *link_parts(sms_link), now=two_days) == result["file_id"]
    assert check_link(h.settings, *link_parts(sms_link), now=now + 7 * 86400 + 60) is None
    # A WhatsApp media link is fetched by Twilio at once: FILE_LINK_TTL_S (an hour) is enough.
    async with h.services.sessions() as db:
        row = await db.get(UserFile, result["file_id"])
    assert row is not None
    media_link = h.settings.public_base_url + file_path(h.settings, row)
    assert check_link(h.settings, *link_parts(media_link), now=now + 600) == row.id
    assert check_link(h.settings, *link_parts(media_link), now=two_days) is None


async def test_the_draft_link_lasts_file_link_sms_ttl_s(make_harness: Any) -> None:
    h = await make_harness(FILE_LINK_SMS_TTL_S="172800")
    user = await h.make_user(PHONE, mode="pro")
    before = int(time.time())
    result = await by_name()["draft_email"].run(
        ctx_for(h, user, "whatsapp"), {"to": ["awa@example.org"], "subject": "Devis", "body": "Bonjour Awa"}
    )
    assert result["success"] and result["sent"] is False
    expires = int(link_parts(result["link"])[1])
    assert before + 172800 <= expires <= int(time.time()) + 172800
    assert result["link"].endswith("/brouillon-devis.eml")


async def test_outside_the_window_a_generated_file_is_not_claimed_delivered(make_harness: Any) -> None:
    """A file sent by template outside WhatsApp's 24 h window: the template cannot carry it, so the
    tool says it was not delivered, and the file goes out when the user next writes."""
    h = await make_harness(TWILIO_TEMPLATE_SID="HX" + "d" * 32, TWILIO_SMS_FROM="")
    user = await h.make_user(PHONE, mode="pro")
    h.clock.advance(hours=26)
    result = await by_name()["generate_pdf"].run(
        ctx_for(h, user, "whatsapp"), {"title": "Bilan SYSCOHADA 2026", "markdown": "Actif et passif."}
    )
    assert result["success"] and result["delivered"] is False and result["reason"] == "file_waiting"
    assert "writes any message" in result["note"]
    [invite] = h.twilio.sent
    assert invite["ContentSid"] == "HX" + "d" * 32 and "MediaUrl" not in invite
    h.llm.push_text("Le voici.")
    await h.inbound(PHONE, "Envoie-moi le bilan")
    await h.settle()
    media = [m for m in h.twilio.sent if m.get("MediaUrl")]
    assert len(media) == 1 and media[0]["MediaUrl"].endswith("/bilan-syscohada-2026.pdf")
    await h.twilio.idle()
    _row, data = await stored(h, user.id, result["file_id"])
    assert [f["body"] for f in h.twilio.fetched if f["url"] == media[0]["MediaUrl"]] == [data]


async def test_a_refused_file_send_is_not_claimed_delivered(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro", last_channel="sms")
    h.twilio.fail_next("21610")
    result = await by_name()["generate_md"].run(ctx_for(h, user, "sms"), {"title": "Notes", "markdown": "A"})
    assert result["success"] and result["delivered"] is False and result["reason"] == "refused"
    assert h.twilio.sent == []
