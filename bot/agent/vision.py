"""Photos for the model: scaled down into data-URL content parts, or read with Tesseract OCR.

A vision model gets the photo itself (an OpenAI-style `image_url` part). Without one (LLM_VISION=off,
or a provider that answers HTTP 400 about images) the photo's text is read locally with Tesseract,
French and English, and given to the model marked as read from a photo. The text read is kept on
the file, so read_user_file and search_user_files find it later.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import io
import logging
import os
import re
import shutil
import subprocess
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot import lanes
from bot.storage.models import UserFile

log = logging.getLogger(__name__)

IMAGE_MIMES = frozenset({"image/jpeg", "image/png", "image/webp"})
MAX_SIDE = 1568  # pixels on the long side: providers scale larger images down anyway
MAX_BYTES = 1_000_000
OCR_TIMEOUT_S = 60.0
OCR_LANGUAGES = ("fra", "eng")


class ImageError(Exception):
    """The bytes are not an image Pillow can read."""


def is_image(mime: str | None) -> bool:
    return (mime or "").split(";")[0].strip().lower() in IMAGE_MIMES


def scale_to_jpeg(data: bytes, max_side: int = MAX_SIDE, max_bytes: int = MAX_BYTES) -> bytes:
    """The image as a JPEG whose long side is at most `max_side` and size about `max_bytes` at most."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        image: Image.Image = Image.open(io.BytesIO(data))
        image = ImageOps.exif_transpose(image)  # phone photos are often stored sideways
        image.load()
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ImageError(f"not a readable image: {exc}") from exc
    if image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    image.thumbnail((max_side, max_side))
    quality = 85
    while True:
        out = io.BytesIO()
        image.save(out, "JPEG", quality=quality, optimize=True)
        if out.tell() <= max_bytes or quality <= 35:
            if out.tell() <= max_bytes:
                return out.getvalue()
            # Still too big at a low quality: fewer pixels.
            image.thumbnail((int(image.width * 0.75), int(image.height * 0.75)))
            quality = 70
            continue
        quality -= 15


def image_part(jpeg: bytes) -> dict[str, Any]:
    """An OpenAI-style content part carrying the image inline."""
    url = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


def has_images(messages: list[dict[str, Any]]) -> bool:
    return any(
        isinstance(m.get("content"), list)
        and any(isinstance(p, dict) and p.get("type") == "image_url" for p in m["content"])
        for m in messages
    )


def refuses_images(status: int, body: str) -> bool:
    """A provider's way of saying the model takes no image input: HTTP 400 naming images."""
    return status == 400 and "image" in body.lower()


def ocr_available() -> str | None:
    """Why OCR cannot run here (None when it can)."""
    if shutil.which("tesseract") is None:
        return "tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-fra)"
    if not ocr_languages():
        return "tesseract has no French or English data (apt-get install tesseract-ocr-fra)"
    return None


@functools.lru_cache(maxsize=2)
def ocr_languages(with_osd: bool = False) -> str:
    """The languages OCR reads, among French and English, as Tesseract's `-l` wants them
    (`with_osd`: and "osd" when the orientation data is there)."""
    try:
        listed = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    have = {line.strip() for line in (listed.stdout + listed.stderr).splitlines()}
    wanted = OCR_LANGUAGES + (("osd",) if with_osd else ())
    return "+".join(lang for lang in wanted if lang in have)


OCR_SMALL_SIDE = 1200  # a small picture's letters are too few pixels high: it is enlarged to this
OCR_MAX_SIDE = 2400


def upright(image: Any) -> Any:
    """The page turned upright by Tesseract's orientation detection (a photo taken sideways or
    upside down without EXIF); unchanged when it cannot tell."""
    try:
        found = subprocess.run(["tesseract", "stdin", "stdout", "--psm", "0"], input=_png(image),
                               capture_output=True, timeout=OCR_TIMEOUT_S, env=_TESSERACT_ENV)
    except (OSError, subprocess.SubprocessError):
        return image
    match = re.search(rb"Rotate: (\d+)", found.stdout)
    confidence = re.search(rb"Orientation confidence: ([\d.]+)", found.stdout)
    if not match or not confidence or float(confidence.group(1)) < 2.0 or match.group(1) == b"0":
        return image
    return image.rotate(-int(match.group(1)), expand=True)


def _png(image: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def prepare_for_ocr(data: bytes, turn: bool = False) -> bytes:
    """A grey PNG Tesseract reads well whatever the photo: turned upright (EXIF, then orientation
    detection when `turn`), grey, contrast stretched (a faded page or a dim room), small pages enlarged."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        image = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
        image = image.convert("L")
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ImageError(f"not a readable image: {exc}") from exc
    image = ImageOps.autocontrast(image, cutoff=1)
    long_side = max(image.size)
    if long_side < OCR_SMALL_SIDE:
        scale = OCR_SMALL_SIDE / long_side
        size = (round(image.width * scale), round(image.height * scale))
        image = image.resize(size, Image.Resampling.LANCZOS)
    elif long_side > OCR_MAX_SIDE:
        image.thumbnail((OCR_MAX_SIDE, OCR_MAX_SIDE))
    return _png(upright(image) if turn else image)


# One thread per Tesseract: its OpenMP threads fight each other on a busy two-core machine.
_TESSERACT_ENV = {**os.environ, "OMP_THREAD_LIMIT": "1"}
# Some text but fewer words of 3 letters or more: the page may be sideways, turned and read again
# (no text at all: a photo of no page, not worth a second pass).
READ_WELL_WORDS = 12


def _words(text: str) -> int:
    return len(re.findall(r"[^\W\d_]{3,}", text))


async def _tesseract(png: bytes, timeout_s: float) -> str:
    proc = await asyncio.create_subprocess_exec(
        "tesseract", "stdin", "stdout", "-l", ocr_languages(), env=_TESSERACT_ENV,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(png), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise RuntimeError("tesseract took too long") from None
    if proc.returncode != 0:
        raise RuntimeError(f"tesseract failed: {err.decode('utf-8', 'replace')[:200]}")
    lines = [line.strip() for line in out.decode("utf-8", "replace").splitlines()]
    return "\n".join(line for line in lines if line).strip()


async def ocr(data: bytes, timeout_s: float = OCR_TIMEOUT_S) -> str:
    """The text Tesseract reads on the image ("" when none); raises ImageError or RuntimeError.
    A page read poorly is turned upright by orientation detection and read again (the better
    reading is kept): most photos are upright, and detection costs a second pass."""
    # In threads: the first look runs `tesseract --list-langs`, and a page is prepared with Pillow
    # (the background lane's threads when a scan is read by the library's pass, bot.lanes).
    reason = await lanes.cpu(ocr_available)
    if reason:
        raise RuntimeError(reason)
    text = await _tesseract(await lanes.cpu(prepare_for_ocr, data), timeout_s)
    if not text or _words(text) >= READ_WELL_WORDS or "osd" not in await lanes.cpu(ocr_languages, True):
        return text
    again = await _tesseract(await lanes.cpu(prepare_for_ocr, data, True), timeout_s)
    return again if _words(again) > _words(text) else text


async def read_text(services: Any, db: AsyncSession, row: UserFile) -> str:
    """The photo's text, read once and kept on the file (library search and read_user_file use it)."""
    if row.text:
        return row.text
    reading = services.extra.get("media.readings", {}).get(row.id)  # read as it arrived (bot.media)
    try:
        if reading is not None:
            text = str(await asyncio.shield(reading))
        else:
            text = await ocr(await services.files.get(row.storage_key))
    except (ImageError, RuntimeError) as exc:
        log.warning("photo not read", extra={"file_id": row.id, "error": str(exc)})
        return ""
    if text:
        row.text = text
        await db.flush()
    return text


def photo_text_note(name: str, text: str, language: str) -> str:
    """How an OCR reading is given to the model: marked as read from a photo."""
    if language == "en":
        if not text:
            return (f"[Photo {name}: no readable text was found on it. Say so, and ask the person to "
                    "type the exercise or send a sharper photo.]")
        return f"[Text read from the photo {name} (OCR, may contain reading errors):]\n{text}"
    if not text:
        return (f"[Photo {name} : aucun texte lisible n'y a été trouvé. Dis-le à la personne et "
                "demande-lui de taper l'exercice ou d'envoyer une photo plus nette.]")
    return f"[Texte lu sur la photo {name} (OCR, peut contenir des erreurs de lecture) :]\n{text}"


def unreadable_reply(language: str) -> str:
    if language == "en":
        return ("I can't read any text on your photo. Could you type the exercise, or send a sharper "
                "photo (well lit, taken from above, close to the page)?")
    return ("Je n'arrive à lire aucun texte sur cette photo. Merci de taper l'exercice, ou d'envoyer une "
            "photo plus nette (bien éclairée, prise de face, près de la page).")


async def photo_notes(services: Any, db: AsyncSession, rows: list[UserFile], language: str) -> list[str]:
    """One note per photo, in order: its OCR text marked as read from a photo, or that it has none."""
    return [photo_text_note(row.name, await read_text(services, db, row), language) for row in rows]


def without_images(messages: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
    """`messages` with the image parts replaced, in order, by `notes` (plain text content again)."""
    left = list(notes)
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            out.append(message)
            continue
        texts: list[str] = []
        for part in content:
            if part.get("type") == "image_url":
                texts.append(left.pop(0) if left else "[image omitted: this model does not take images]")
            elif part.get("type") == "text":
                texts.append(str(part.get("text") or ""))
        out.append({**message, "content": "\n\n".join(t for t in texts if t)})
    return out


async def photo_parts(services: Any, rows: list[UserFile]) -> list[dict[str, Any]]:
    """The photos as image parts, scaled, in order; one that cannot be read is left out."""
    parts: list[dict[str, Any]] = []
    for row in rows:
        try:
            data = await services.files.get(row.storage_key)
            parts.append(image_part(await asyncio.to_thread(scale_to_jpeg, data)))
        except ImageError as exc:
            log.warning("photo not readable", extra={"file_id": row.id, "error": str(exc)})
    return parts


def with_parts(messages: list[dict[str, Any]], parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` whose last user message carries `parts` after its text (the turn's photos)."""
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i].get("role") == "user" and isinstance(out[i].get("content"), str):
            text = out[i]["content"]
            out[i] = {**out[i], "content": [{"type": "text", "text": text}, *parts]}
            break
    return out
