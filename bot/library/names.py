"""Names people recognise for the files they send: the caption they wrote, else the file's own
title (a PDF's metadata or first line, a DOCX's title or first heading, a workbook's first sheet,
a photo's first line of text), cleaned, and made unique among the user's files
(« Leçon photosynthèse.jpg », « Leçon photosynthèse (2).jpg »)."""

from __future__ import annotations

import io
import re

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.documents.extract import kind_of
from bot.documents.names import safe_filename
from bot.storage.models import UserFile

__all__ = ["clean_title", "document_title", "first_line_title", "unique_name"]

MAX_TITLE_CHARS = 60
MIN_LETTERS = 3
# Names a program gives by itself: no help telling two files apart.
_DEFAULT_TITLES = re.compile(r"^(sheet|feuil|feuille|tabelle|hoja|untitled|sans titre|document|"
                             r"microsoft word|diapositive|slide)\s*\d*(\.\w+)?$", re.IGNORECASE)
_LETTER = re.compile(r"[^\W\d_]")
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")  # bullets, dashes and dots around a heading


def clean_title(raw: str | None) -> str:
    """A short label from a line of text ("" when it holds too few letters to name anything)."""
    line = next((ln for ln in (raw or "").splitlines() if len(_LETTER.findall(ln)) >= MIN_LETTERS), "")
    line = _EDGES.sub("", re.sub(r"\s+", " ", line)).strip()
    if len(line) > MAX_TITLE_CHARS:  # cut at a word, not inside one
        line = line[:MAX_TITLE_CHARS].rsplit(" ", 1)[0]
    line = safe_filename(line, default="").strip(" .")
    if len(_LETTER.findall(line)) < MIN_LETTERS or _DEFAULT_TITLES.match(line):
        return ""
    return line


def first_line_title(text: str | None) -> str:
    """The first line of a text that can name it (a photo's OCR text: its heading)."""
    for line in (text or "").splitlines()[:8]:
        title = clean_title(line)
        if title:
            return title
    return ""


def _pdf_title(data: bytes) -> str:
    from pypdf import PdfReader

    meta = PdfReader(io.BytesIO(data)).metadata
    return clean_title(str(meta.title)) if meta is not None and meta.title else ""


def _docx_title(data: bytes) -> str:
    import docx

    document = docx.Document(io.BytesIO(data))
    title = clean_title(document.core_properties.title)
    if title:
        return title
    for paragraph in document.paragraphs[:80]:
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        if style.startswith(("Heading", "Title", "Titre")) and clean_title(paragraph.text):
            return clean_title(paragraph.text)
    return ""


def _xlsx_title(data: bytes) -> str:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    try:
        return clean_title(book.sheetnames[0]) if book.sheetnames else ""
    finally:
        book.close()


def document_title(data: bytes, name: str, mime: str, text: str | None) -> str:
    """The document's own title, "" when it has none (CPU-bound: run it through documents.run_cpu).
    A PDF or DOCX without one is named by its first line of text."""
    kind = kind_of(name, mime)
    readers = {"pdf": _pdf_title, "docx": _docx_title, "xlsx": _xlsx_title}
    title = ""
    if kind in readers:
        try:
            title = readers[kind](data)
        except Exception:  # a damaged file keeps the name it came with
            title = ""
    if not title and kind in ("pdf", "docx", "pptx", "text"):
        title = first_line_title(text)
    return title


async def unique_name(db: AsyncSession, user_id: int, title: str, ext: str, *,
                      other_than: int | None = None) -> str:
    """`title` + `ext`, or « title (2) » + `ext`… the first that none of the user's other files has."""
    taken_rows = await db.execute(select(UserFile.id, UserFile.name).where(
        UserFile.user_id == user_id, UserFile.name.like(f"{title[:20].replace('%', '_')}%")))
    taken = {name.casefold() for file_id, name in taken_rows if file_id != other_than}
    candidate, number = f"{title}{ext}", 1
    while candidate.casefold() in taken:
        number += 1
        candidate = f"{title} ({number}){ext}"
    return candidate
