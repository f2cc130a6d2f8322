"""Text of the files whose bytes hold none to extract: a photo read by Tesseract (French and
English, the page prepared first: bot.agent.vision), a PDF without a text layer (a scan) turned
into page images by pdftoppm and read page by page, up to OCR_MAX_PAGES. The text is kept on the
file and goes through the same chunks and index as a document's; a scan's pages are separated by
form feeds, so its chunks still say « page 3 »."""

from __future__ import annotations

import logging
import subprocess
import tempfile
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession

from bot import lanes
from bot.agent import vision
from bot.documents.extract import MAX_TEXT_CHARS, kind_of
from bot.documents.names import extension_of
from bot.library.index import SCAN_LAYER_CHARS, index_file
from bot.library.names import first_line_title, unique_name
from bot.services import Services
from bot.storage.models import UserFile

__all__ = ["PAGE_BREAK", "needs_reading", "read_and_index", "read_text_of", "scanned_pages"]

log = logging.getLogger(__name__)

PAGE_BREAK = "\f"
PDF_DPI = 200  # a printed page's letters ~30 px high: what Tesseract reads best
RASTER_TIMEOUT_S = 120.0
MIN_TEXT_LAYER_CHARS = SCAN_LAYER_CHARS  # less text than this: a scan (a stray page number aside)


def needs_reading(row: UserFile) -> bool:
    """A photo, or a PDF whose text layer is empty (a scan)."""
    if vision.is_image(row.mime):
        return True
    scanned = len((row.text or "").strip()) < MIN_TEXT_LAYER_CHARS
    return kind_of(row.name, row.mime) == "pdf" and scanned


def _rasterise(data: bytes, max_pages: int) -> list[bytes]:
    """The PDF's first `max_pages` pages as grey PNGs (pdftoppm; blocking: run it in a thread)."""
    with tempfile.TemporaryDirectory(prefix="scan-") as tmp:
        source = Path(tmp) / "in.pdf"
        source.write_bytes(data)
        try:
            done = subprocess.run(["pdftoppm", "-r", str(PDF_DPI), "-gray", "-png", "-l", str(max_pages),
                                   str(source), f"{tmp}/p"], capture_output=True, timeout=RASTER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError("pdftoppm took too long") from None
        if done.returncode != 0:
            raise RuntimeError(f"pdftoppm failed: {done.stderr.decode('utf-8', 'replace')[:200]}")
        images = sorted(Path(tmp).glob("p-*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
        return [image.read_bytes() for image in images[:max_pages]]


async def scanned_pages(data: bytes, max_pages: int) -> list[str]:
    """Each page's OCR text, the first `max_pages` pages (pdftoppm, then Tesseract page by page)."""
    if max_pages <= 0:
        return []
    return [await vision.ocr(png) for png in await lanes.cpu(_rasterise, data, max_pages)]


async def read_text_of(services: Services, row: UserFile, data: bytes) -> str:
    """The text OCR reads in a photo or a scanned PDF ("" when none could be read)."""
    try:
        if vision.is_image(row.mime):
            return await vision.ocr(data)
        pages = await scanned_pages(data, services.settings.library.ocr_max_pages)
    except (vision.ImageError, RuntimeError, OSError) as exc:
        log.warning("file not read", extra={"file_id": row.id, "error": str(exc)})
        return ""
    return PAGE_BREAK.join(pages).strip()[:MAX_TEXT_CHARS] if any(p.strip() for p in pages) else ""


async def read_and_index(services: Services, db: AsyncSession, row: UserFile, text: str, *,
                         rename: bool) -> None:
    """Keeps `text` read on the file (unless the file got a text meanwhile), names a photo after
    its first line when `rename`, and indexes and embeds it (flushed, not committed)."""
    if text and not (row.text or "").strip():
        row.text = text
    title = first_line_title(row.text) if rename else ""
    if title and row.user_id is not None:  # a class's file keeps the name its teacher gave it
        ext = extension_of(row.name, row.mime)
        row.name = await unique_name(db, row.user_id, title, ext, other_than=row.id)
    await db.flush()
    await index_file(services, db, row)
