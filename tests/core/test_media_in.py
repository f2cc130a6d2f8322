"""Files users send: downloaded with the account's credentials through Twilio's redirect, stored."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.channel.context import Incoming
from bot.storage.models import UserFile
from tests.support.harness import Harness

PHONE = "+2250700000001"
JPEG = b"\xff\xd8\xff\xe0" + b"photo-exercice" * 100


class Seen:
    def __init__(self) -> None:
        self.files: list[list[UserFile]] = []
        self.texts: list[str] = []

    async def __call__(self, msg: Incoming) -> None:
        self.files.append(list(msg.extra.get("files", [])))
        self.texts.append(msg.text)
        await msg.reply("reçu")


async def test_inbound_image_is_downloaded_and_stored(harness: Harness) -> None:
    h = harness
    seen = Seen()
    await h.use_dispatch(seen)
    user = await h.make_user(PHONE)
    media = [(JPEG, "image/jpeg"), (b"%PDF-1.7 doc", "application/pdf")]
    status, _ = await h.inbound(PHONE, "Aide-moi", media=media)
    assert status == 200
    await h.settle()
    [files] = seen.files
    assert [f.mime for f in files] == ["image/jpeg", "application/pdf"]
    assert seen.texts == ["Aide-moi"]
    async with h.services.sessions() as db:
        rows = (await db.scalars(select(UserFile).order_by(UserFile.id))).all()
    assert [(r.user_id, r.origin, r.size) for r in rows] == [
        (user.id, "upload", len(JPEG)), (user.id, "upload", 12)
    ]
    assert await h.services.files.get(rows[0].storage_key) == JPEG
    assert rows[0].name.endswith(".jpg") and rows[1].name.endswith(".pdf")
    assert h.twilio.unauthorised == 0  # credentials sent to Twilio, not to the storage it redirects to


async def test_media_only_message_is_passed_on(harness: Harness) -> None:
    h = harness
    seen = Seen()
    await h.use_dispatch(seen)
    await h.make_user(PHONE)
    await h.inbound(PHONE, "", media=[(JPEG, "image/jpeg")])
    await h.settle()
    assert seen.texts == [""] and len(seen.files[0]) == 1


async def test_a_failed_download_is_told_to_the_user(harness: Harness) -> None:
    h = harness
    seen = Seen()
    await h.use_dispatch(seen)
    await h.make_user(PHONE)
    missing = h.twilio.url + f"/2010-04-01/Accounts/{h.twilio.account_sid}/Messages/MMx/Media/MEmissing"
    await h.inbound(PHONE, "", media=[missing])
    await h.settle()
    assert await h.texts_to(PHONE) == ["Je n'ai pas pu recevoir ce fichier. Merci de le renvoyer."]
    assert seen.texts == []  # nothing else to act on


async def test_a_failed_download_with_text_still_answers_the_text(harness: Harness) -> None:
    h = harness
    seen = Seen()
    await h.use_dispatch(seen)
    await h.make_user(PHONE)
    await h.inbound(PHONE, "Voici mon devoir", media=["http://127.0.0.1:9/nowhere"])
    await h.settle()
    assert await h.texts_to(PHONE) == ["Je n'ai pas pu recevoir ce fichier. Merci de le renvoyer.", "reçu"]
    assert seen.files == [[]]


async def test_a_file_over_the_size_cap_is_refused(make_harness: Any) -> None:
    h = await make_harness(MEDIA_MAX_BYTES="1000")
    seen = Seen()
    await h.use_dispatch(seen)
    await h.make_user(PHONE)
    await h.inbound(PHONE, "Grosse photo", media=[(JPEG, "image/jpeg")])
    await h.settle()
    assert (await h.texts_to(PHONE))[0].startswith("Je n'ai pas pu recevoir ce fichier")
    async with h.services.sessions() as db:
        assert (await db.scalars(select(UserFile))).all() == []


async def test_corpus_mms_with_three_images(harness: Harness) -> None:
    """The real MMS body (media keys out of order) with its URLs pointed at the fake Twilio."""
    from tests.support.twilio_corpus import corpus

    h = harness
    seen = Seen()
    await h.use_dispatch(seen)
    params = dict(tuple(p) for p in corpus("07-mms-inbound-three-images-with-text.json")["params"])
    for i in range(3):
        params[f"MediaUrl{i}"] = h.twilio.add_media(JPEG + bytes([i]), "image/jpeg")
    params["AccountSid"] = h.twilio.account_sid
    status, _ = await h.post_form("/twilio/inbound", list(params.items()))
    assert status == 200
    await h.settle()
    [files] = seen.files
    assert len(files) == 3 and seen.texts == ["Multiple images and text"]
    stored = [await h.services.files.get(f.storage_key) for f in files]
    assert stored == [JPEG + bytes([i]) for i in range(3)]


TWILIO_URLS = [
    "https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1",
    "https://mms.twiliocdn.com/AC1/abc", "https://media.twiliocdn.com/AC1/abc",
    "https://API.Twilio.com/2010-04-01/x", "https://api.dublin.ie1.twilio.com/x",
]
NOT_TWILIO_URLS = [
    "http://api.twilio.com/2010-04-01/x",  # not https
    "https://evil.example/photo.jpg", "https://api.twilio.com.evil.example/x", "https://eviltwilio.com/x",
    "https://api.twilio.com@evil.example/", "https://user:pw@api.twilio.com/x",  # userinfo
    "https://api.twilio.com\\@evil.example/", "https://api.twilio.com /x",
    "https://93.184.216.34/x", "https://[::1]/x", "https://2130706433/x",  # IP literals
    "https://api.twilio.com:8443/x", "ftp://api.twilio.com/x", "", "not a url",
]


def test_only_twilio_media_hosts_over_https_are_fetched() -> None:
    from bot.config import load_settings
    from bot.media.received import media_url

    settings = load_settings({})
    assert [u for u in TWILIO_URLS if media_url(settings, u) is None] == []
    assert [u for u in NOT_TWILIO_URLS if media_url(settings, u) is not None] == []
    # In tests, the fake Twilio's own origin (TWILIO_API_BASE_URL), and only that origin.
    fake = load_settings({"TWILIO_API_BASE_URL": "http://127.0.0.1:8123"})
    assert media_url(fake, "http://127.0.0.1:8123/2010-04-01/x") is not None
    assert media_url(fake, "http://127.0.0.1:8124/2010-04-01/x") is None
    assert media_url(fake, "http://localhost:8123/2010-04-01/x") is None
    assert media_url(fake, "http://api.twilio.com@127.0.0.1:8123/x") is None


async def test_a_media_url_elsewhere_is_not_fetched_and_the_text_is_still_answered(harness: Harness) -> None:
    from aiohttp import web

    from tests.support.ports import free_port

    h = harness
    seen = Seen()
    await h.use_dispatch(seen)
    await h.make_user(PHONE)
    asked: list[str] = []

    async def serve(request: web.Request) -> web.Response:  # a host that would take the credentials
        asked.append(request.headers.get("Authorization", ""))
        return web.Response(body=JPEG, content_type="image/jpeg")

    app = web.Application()
    app.router.add_get("/{tail:.*}", serve)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        elsewhere = f"http://127.0.0.1:{port}/photo.jpg"
        tricked = h.twilio.add_media(JPEG, "image/jpeg").replace("http://", "http://api.twilio.com@", 1)
        await h.inbound(PHONE, "Voici ma photo", media=[elsewhere, tricked])
        await h.settle()
    finally:
        await runner.cleanup()
    assert asked == []  # never asked, so the account's credentials never left for it
    assert await h.texts_to(PHONE) == ["Je n'ai pas pu recevoir ce fichier. Merci de le renvoyer.", "reçu"]
    assert seen.texts == ["Voici ma photo"] and seen.files == [[]]
    async with h.services.sessions() as db:
        assert (await db.scalars(select(UserFile))).all() == []
