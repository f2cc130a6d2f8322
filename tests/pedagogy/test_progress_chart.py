"""The progress chart: the PNG decodes at its size whatever the labels; PROGRES and ENFANTS on
WhatsApp send it as media Twilio fetches (a PNG), one per child; by SMS the text ends with the signed
link to the progress page; the link's signature and expiry."""

from __future__ import annotations

import asyncio
import io
import os
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from PIL import Image

from bot.channel.links import (
    check_job_signature,
    check_progress_signature,
    job_signature,
    progress_signature,
)
from bot.config import load_settings
from bot.learning import SkillView
from bot.learning.progress_chart import (
    MAX_CHART_SKILLS,
    PNG_DPI,
    PNG_WIDTH_IN,
    ProgressData,
    Week,
    progress_png,
)
from tests.support.pedagogy import PARENT, STUDENT, say
from tests.support.progress import HOSTILE, WEEKLY, link_parent, page_link, progress_student

ARTIFACTS = Path(os.environ.get("RENDER_OUTPUT_DIR", "/tmp/deblo-render"))
SISTER = "+2250700000003"


def _png(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()  # the whole image decodes, not only its header
    return image


def test_the_png_decodes_at_its_size_whatever_the_labels() -> None:
    """Accents, a model's `$…$` and markup, an emoji in the name, more skills than are drawn, an
    empty student: each PNG decodes, 960 px wide, taller with more skills."""
    weeks = tuple(Week(date(2026, 1, 8) + timedelta(days=7 * i), right, wrong)
                  for i, (right, wrong) in enumerate(WEEKLY))
    skills = tuple(SkillView("Mathématiques", f"s{n}", f"compétence n°{n} : {HOSTILE}", n / 20, 20 - n, 5,
                             ("review", "learning", "mastered")[n % 3]) for n in range(MAX_CHART_SKILLS + 3))
    few = ProgressData(skills=skills[:2], weeks=weeks, as_of=date(2026, 3, 5))
    many = ProgressData(skills=skills, weeks=weeks, as_of=date(2026, 3, 5))
    empty = ProgressData(skills=(), weeks=tuple(Week(w.start, 0, 0) for w in weeks), as_of=date(2026, 3, 5))
    sizes = {}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for label, data, language in (("few", few, "fr"), ("many", many, "fr"), ("empty", empty, "en")):
        png = progress_png(data, language, "Progrès de Aïcha N'Guessan 🎓")
        (ARTIFACTS / f"progress-chart-{label}.png").write_bytes(png)
        image = _png(png)
        assert image.format == "PNG" and image.mode in ("RGBA", "RGB")
        assert image.width == int(PNG_WIDTH_IN * PNG_DPI) >= 800
        sizes[label] = image.height
    assert sizes["empty"] < sizes["few"] < sizes["many"]
    # More skills than MAX_CHART_SKILLS are not drawn taller than that many (the rest is counted).
    capped = ProgressData(skills=skills[:MAX_CHART_SKILLS], weeks=weeks, as_of=date(2026, 3, 5))
    assert _png(progress_png(capped, "fr", "x")).height >= sizes["many"] - 60


def test_the_progress_link_opens_one_student_until_it_expires() -> None:
    settings = load_settings({"SECRET_KEY": "k1", "PROGRESS_LINK_TTL_S": "3600"})
    now = 1_800_000_000.0
    sig = progress_signature(settings, 42, now=now)
    assert int(sig.split(".")[0]) == int(now) + 3600  # PROGRESS_LINK_TTL_S
    assert check_progress_signature(settings, "42", sig, now=now) == 42
    assert check_progress_signature(settings, "42", sig, now=now + 3600) == 42  # to its last second
    assert check_progress_signature(settings, "42", sig, now=now + 3601) is None  # expired
    assert check_progress_signature(settings, "43", sig, now=now) is None  # another student's id
    assert check_progress_signature(settings, "042", sig, now=now) is None  # another spelling
    expires, mac = sig.split(".")
    tampered = mac[:-1] + ("A" if mac[-1] != "A" else "B")
    assert check_progress_signature(settings, "42", f"{expires}.{tampered}", now=now) is None
    assert check_progress_signature(settings, "42", f"{int(expires) + 86400}.{mac}", now=now) is None
    assert check_progress_signature(settings, "42", "", now=now) is None
    assert check_progress_signature(settings, "42", f"{expires}.{mac}é", now=now) is None
    other = load_settings({"SECRET_KEY": "k2"})
    assert check_progress_signature(other, "42", sig, now=now) is None  # another deployment's key
    # A job page's sig for the same number opens no progress page, nor the reverse.
    job = job_signature(settings, 42, now=now)
    assert check_progress_signature(settings, "42", job, now=now) is None
    assert check_job_signature(settings, "42", sig, now=now) is None
    assert load_settings({}).learning.progress_link_ttl_s == 7 * 86400


async def test_progres_on_whatsapp_sends_the_chart_twilio_fetches(harness: Any) -> None:
    h = harness
    await progress_student(h, STUDENT)
    # One billed message: the summary rides as the chart's caption.
    [text] = await say(h, STUDENT, "PROGRES")
    assert text.startswith("📊 Progrès")
    [message] = [m for m in h.twilio.to(f"whatsapp:{STUDENT}") if m.get("MediaUrl")]
    assert message["Body"] == text
    [fetched] = [f for f in h.twilio.fetched if f["url"] == message["MediaUrl"]]
    assert fetched["status"] == 200 and fetched["content_type"] == "image/png"  # Twilio took it as an image
    image = _png(fetched["body"])
    assert image.width == 960 and image.height > 1000
    await asyncio.to_thread(ARTIFACTS.mkdir, parents=True, exist_ok=True)  # this test may run first
    (ARTIFACTS / "progress-chart-whatsapp.png").write_bytes(fetched["body"])
    assert "/files/" in message["MediaUrl"] and message["MediaUrl"].endswith("/progres-2026-03-05.png")


async def test_enfants_on_whatsapp_sends_one_chart_per_child(harness: Any) -> None:
    h = harness
    awa = await progress_student(h, STUDENT)
    sister = await progress_student(h, SISTER, name="Fatou", language="en")
    parent = await h.make_user(PARENT, mode="pro")
    await link_parent(h, awa.id, parent)
    await link_parent(h, sister.id, parent)
    texts = await say(h, PARENT, "ENFANTS")
    assert [t.splitlines()[0] for t in texts if t] == ["📊 Progrès de Awa Kouassi", "📊 Progrès de Fatou"]
    media = [m["MediaUrl"] for m in h.twilio.to(f"whatsapp:{PARENT}") if m.get("MediaUrl")]
    assert [url.rsplit("/", 1)[1] for url in media] == ["progres-de-awa-kouassi-2026-03-05.png",
                                                        "progres-de-fatou-2026-03-05.png"]
    bodies = [f["body"] for f in h.twilio.fetched if f["url"] in media]
    assert len(bodies) == 2 and all(_png(b).width == 960 for b in bodies)
    assert bodies[0] != bodies[1]  # each child's own chart


async def test_by_sms_the_text_ends_with_the_page_link(harness: Any) -> None:
    h = harness
    awa = await progress_student(h, STUDENT, last_channel="sms")
    own = "".join(await say(h, STUDENT, "PROGRES", channel="sms"))
    path = page_link(own)
    assert path.startswith(f"/progress/{awa.id}?sig=")
    assert not [m for m in h.twilio.to(STUDENT) if m.get("MediaUrl")]  # no image by SMS
    status, _, body = await h.get(path)
    assert status == 200 and "Awa Kouassi" in body.decode()
    parent = await h.make_user(PARENT, mode="pro", last_channel="sms")
    await link_parent(h, awa.id, parent)
    children = "".join(await say(h, PARENT, "ENFANTS", channel="sms"))
    assert "Tout voir : " in children and page_link(children).startswith(f"/progress/{awa.id}?sig=")
