"""A file's text cut into chunks of about 200–400 words, on page, sheet, slide and paragraph
boundaries, each with where it comes from (« page 3 », « feuille Bilan »). Pure functions."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from bot.documents.extract import kind_of

__all__ = ["MAX_WORDS", "MIN_WORDS", "Chunk", "chunk_file", "chunk_sections", "pdf_pages"]

MIN_WORDS = 200  # a chunk grows paragraph by paragraph up to this
MAX_WORDS = 400  # and never past this (a longer paragraph is cut at sentences, then words)
MAX_CHUNKS = 200  # per file: the stored text is capped at 200,000 characters anyway

_SHEET = re.compile(r"^# (.+)$", re.MULTILINE)  # how bot.documents.extract writes a sheet
_SLIDE = re.compile(r"^--- (\d+) ---$", re.MULTILINE)
_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n")


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    locator: str  # "" for a file with no pages or sheets
    text: str


def pdf_pages(data: bytes) -> list[str]:
    """Each page's text (CPU-bound: run it through documents.run_cpu)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    pages, size = [], 0
    for page in reader.pages:
        text = page.extract_text() or ""
        pages.append(text)
        size += len(text)
        if size > 200_000:
            break
    return pages


def _split_marked(text: str, marker: re.Pattern[str], label: str) -> list[tuple[str, str]]:
    marks = list(marker.finditer(text))
    if not marks:
        return [("", text)]
    sections = [("", text[: marks[0].start()])] if text[: marks[0].start()].strip() else []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        sections.append((f"{label} {mark.group(1).strip()}", text[mark.end():end]))
    return sections


def _sections(text: str, kind: str, pages: list[str] | None) -> list[tuple[str, str]]:
    if pages is not None:
        return [(f"page {n}", page) for n, page in enumerate(pages, start=1)]
    if kind == "xlsx":
        return _split_marked(text, _SHEET, "feuille")
    if kind == "pptx":
        return _split_marked(text, _SLIDE, "diapositive")
    return [("", text)]


def _pieces(paragraph: str) -> list[str]:
    """A paragraph, or its sentences (then word runs) when it is longer than a chunk."""
    if len(paragraph.split()) <= MAX_WORDS:
        return [paragraph]
    out: list[str] = []
    for sentence in _SENTENCE.split(paragraph):
        words = sentence.split()
        out += [" ".join(words[i:i + MAX_WORDS]) for i in range(0, len(words), MAX_WORDS)]
    return out


def _pack(text: str) -> list[str]:
    """Paragraphs joined into chunks of MIN_WORDS to MAX_WORDS words."""
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for paragraph in _PARAGRAPHS.split(text):
        for piece in _pieces(paragraph.strip()):
            words = len(piece.split())
            if not words:
                continue
            if current and (count >= MIN_WORDS or count + words > MAX_WORDS):
                chunks.append("\n\n".join(current))
                current, count = [], 0
            current.append(piece)
            count += words
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def chunk_sections(sections: list[tuple[str, str]]) -> list[Chunk]:
    """Chunks of each section in order; a section never shares a chunk with another."""
    out: list[Chunk] = []
    for locator, text in sections:
        parts = _pack(text)
        for number, part in enumerate(parts, start=1):
            where = locator or (f"partie {number}" if len(parts) > 1 else "")
            if locator and len(parts) > 1:
                where = f"{locator} ({number}/{len(parts)})"
            out.append(Chunk(len(out), where, part))
            if len(out) >= MAX_CHUNKS:
                return out
    return out


def chunk_file(text: str | None, name: str, mime: str, pages: list[str] | None = None) -> list[Chunk]:
    """The chunks of one file's text; `pages` are a PDF's pages when its bytes were read again.
    A file without text still gets one empty chunk: it is found by its name."""
    chunks = chunk_sections(_sections(text or "", kind_of(name, mime), pages))
    return chunks or [Chunk(0, "", "")]
