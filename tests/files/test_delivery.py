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
from bot.links import file_path
from bot.models import User, UserFile
from bot.outbound import send_to_user
from bot.toolspec import ToolContext
from tests.harness import Harness
from tools import by_name

PHONE = "+2250711111111"
OTHER = "+2250722222222"


def ctx_for(h: Harness, user: User, channel: str) -> ToolContext:
    async def deliver(text: str = "", media: UserFile | None = None) -> None:
        await send_to_user(h.services, user, text=text, media=media, channel=channel)

    return ToolContext(
        services=h.services,
        user_id=user.id,
        conversation_id=0,
        channel=channel,
        mode=user.mode,
        language=user.language,
        deliver=deliver,
    )


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
            "columns": ["Poste", {"header": "Montant", "type": "fcfa"}],
            "rows": [["Fournitures", 125000], ["Transport", "45 000"]],
            "totals": True,
        }
    ],
}


async def test_whatsapp_media_link_serves_the_exact_file(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="pro")
    result = await by_name()["generate_xlsx"].run(ctx_for(h, user, "whatsapp"), XLSX_ARGS)
    assert result["success"] and result["delivered"]
    await h.twilio.wait_for(2)
    sent = h.twilio.to(PHONE)
    media = [m for m in sent if m.get("MediaUrl")]
    assert len(media) == 1 and any("Budget de la coopérative" in m.get("Body", "") for m in sent)
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
    assert len(name) <= 20 and " " not in name and name.endswith(".xlsx")
    assert f'filename="{name}"' in headers["Content-Disposition"]


async def test_sms_gets_the_link_in_the_text(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE, mode="child", last_channel="sms")
    result = await by_name()["generate_pdf"].run(
        ctx_for(h, user, "sms"),
        {"title": "Résumé : la photosynthèse", "blocks": ["La plante capte la lumière."]},
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
            "blocks": ["Bonjour à tous"],
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
            ctx_for(h, user, "sms"), {"title": "Notes privées", "blocks": ["Mon code secret"]}
        )
    )["file_id"]
    theirs = (
        await by_name()["generate_md"].run(
            ctx_for(h, other, "sms"), {"title": "Autres notes", "blocks": ["Autre"]}
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
                "blocks": [{"type": "paragraph", "text": "Une fraction représente une partie d'un tout."}],
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
    from bot.toolspec import ToolContext as Ctx

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
        ctx_for(h, user, "whatsapp"), {"title": "Lourd", "blocks": ["Un texte " * 400]}
    )
    assert result["success"] is False and "split it into several files" in result["error"]
    assert h.twilio.sent == []
