"""A file's text cut into chunks of about 200–400 words, on page, sheet, slide and paragraph
boundaries, each with where it comes from (« page 3 », « feuille Bilan »). Pure functions.

A word broken at a line's end (« enre-\nmplaçant », as a PDF's text layer and OCR give it) is made
whole again before the cut, and a text read by OCR (a photo, a scan's pages) first loses the lines
that are only the noise of the picture (« | ~ = . », a stain read as letters): the keywords and
the model then read the words the page holds."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from bot.documents.extract import kind_of

__all__ = ["MAX_WORDS", "MIN_WORDS", "Chunk", "chunk_file", "chunk_sections", "mend_read_text", "pdf_pages"]

MIN_WORDS = 200  # a chunk grows paragraph by paragraph up to this
MAX_WORDS = 400  # and never past this (a longer paragraph is cut at sentences, then words)
MAX_CHUNKS = 200  # per file: the stored text is capped at 200,000 characters anyway

_SHEET = re.compile(r"^# (.+)$", re.MULTILINE)  # how bot.documents.extract writes a sheet
_SLIDE = re.compile(r"^--- (\d+) ---$", re.MULTILINE)
_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n")
# A hyphen ending a line inside a word: joined without it when the word goes on in lower case
# (« enre-\nmplaçant »), kept when the next part is a capital (« Houphouët-\nBoigny »).
_BROKEN_WORD = re.compile(r"(?<=[^\W\d_])-[ \t]*\n[ \t]*(?=[^\W\d_])")
_REAL_TOKEN = re.compile(r"[^\W_]{2,}")  # two letters or digits in a row: a word, a number


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


def _joined(match: re.Match[str]) -> str:
    after = match.string[match.end()]
    return "-" if after.isupper() else ""


def _noise(line: str) -> bool:
    """A line OCR read from no word: no token of two letters or digits, or one such token among
    mostly other signs (« | ll ~ — », « . i , »)."""
    real = len(_REAL_TOKEN.findall(line))
    signs = [ch for ch in line if not ch.isspace()]
    alnum = sum(1 for ch in signs if ch.isalnum())
    return real == 0 or (real == 1 and alnum * 2 < len(signs))


def mend_read_text(text: str, *, read: bool) -> str:
    """The text with its words broken at line ends made whole; when `read` (by OCR), without
    its noise lines too (an empty line, a paragraph break, stays)."""
    if read:
        text = "\n".join(line for line in text.split("\n") if not line.strip() or not _noise(line))
    return _BROKEN_WORD.sub(_joined, text)


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


def chunk_file(text: str | None, name: str, mime: str, pages: list[str] | None = None, *,
               read: bool = False) -> list[Chunk]:
    """The chunks of one file's text; `pages` are a PDF's pages when its bytes were read again,
    `read` says the text comes from OCR (a photo has no other: its kind is none of the
    documents'). A file without text still gets one empty chunk: it is found by its name."""
    kind = kind_of(name, mime)
    read = read or not kind
    sections = [(where, mend_read_text(part, read=read))
                for where, part in _sections(text or "", kind, pages)]
    chunks = chunk_sections(sections)
    return chunks or [Chunk(0, "", "")]
