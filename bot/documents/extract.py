"""Text out of a user's file, for reading, search and the model. Pure functions on bytes.

Anything unreadable (a photo, a damaged document) gives None rather than an error: the file is
still kept, it just has no text.
"""

from __future__ import annotations

import csv
import io
import logging
import zipfile

from bot.documents.names import extension_of

log = logging.getLogger(__name__)

# Stored text per file; the model sees at most 8,000 characters of it at a time anyway.
MAX_TEXT_CHARS = 200_000  # PostgreSQL tsvector stays well under its 1 MB cap
# An Office file is a zip: refuse ones that would inflate past this (zip bombs).
MAX_UNZIPPED_BYTES = 200 * 1024 * 1024

TEXT_EXTS = {".txt", ".md", ".csv", ".json", ".log", ".tsv"}


def kind_of(name: str, mime: str) -> str:
    """One of pdf, docx, xlsx, pptx, html, text, or "" (no text to extract)."""
    mime = mime.split(";")[0].strip().lower()
    ext = extension_of(name, mime)
    if ext == ".pdf" or mime == "application/pdf":
        return "pdf"
    if ext in (".docx", ".xlsx", ".pptx"):
        return ext[1:]
    for kind in ("wordprocessingml", "spreadsheetml", "presentationml"):
        if kind in mime:
            return {"wordprocessingml": "docx", "spreadsheetml": "xlsx", "presentationml": "pptx"}[kind]
    if ext in (".html", ".htm") or mime == "text/html":
        return "html"
    if ext in TEXT_EXTS or mime.startswith("text/") or mime == "application/json":
        return "text"
    return ""


def extract_text(data: bytes, name: str, mime: str) -> str | None:
    kind = kind_of(name, mime)
    if not kind:
        return None
    try:
        text = _EXTRACTORS[kind](data)
    except Exception as exc:  # a damaged or hostile file must not stop the upload
        log.info("no text from %s (%s): %s", name, kind, exc)
        return None
    # French typography glues "45 000 FCFA" with non-breaking spaces: searches type plain ones.
    text = text.replace("\x00", "").translate(_PLAIN_SPACES).strip()
    return text[:MAX_TEXT_CHARS] if text else None


_PLAIN_SPACES = str.maketrans({c: " " for c in "\u00a0\u202f\u2007\u2009"})


def decode_text(data: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _text(data: bytes) -> str:
    return decode_text(data)


def _html(data: bytes) -> str:
    import re

    import nh3

    # Keep block boundaries as line breaks, then drop every tag (script/style bodies included).
    html = re.sub(r"(?i)<\s*(br|/p|/div|/h[1-6]|/li|/tr)\b[^>]*>", "\n", decode_text(data))
    text = nh3.clean(html, tags=set())
    import html as html_lib

    return re.sub(r"\n\s*\n+", "\n\n", html_lib.unescape(text))


def _check_zip(data: bytes) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        if sum(info.file_size for info in zf.infolist()) > MAX_UNZIPPED_BYTES:
            raise ValueError("archive inflates too much")


def _pdf(data: bytes) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    parts: list[str] = []
    size = 0
    for page in reader.pages:
        text = page.extract_text() or ""
        parts.append(text)
        size += len(text)
        if size > MAX_TEXT_CHARS:
            break
    return "\n\n".join(parts)


def _docx(data: bytes) -> str:
    import docx

    _check_zip(data)
    document = docx.Document(io.BytesIO(data))
    lines: list[str] = []
    body = document.element.body
    # Paragraphs and tables in document order.
    for child in body.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            text = "".join(t.text or "" for t in child.iter() if t.tag.endswith("}t"))
            lines.append(text)
        elif tag == "tbl":
            for row in child.iter():
                if not row.tag.endswith("}tr"):
                    continue
                cells = []
                for cell in row:
                    if cell.tag.endswith("}tc"):
                        cells.append("".join(t.text or "" for t in cell.iter() if t.tag.endswith("}t")))
                lines.append(" | ".join(cells))
    return "\n".join(lines)


def _xlsx(data: bytes) -> str:
    import openpyxl

    from bot.documents.calc import with_values

    _check_zip(data)
    # A workbook saved without its formulas' values (by a program that does not compute them)
    # gets them computed, so its totals are read and searched as a spreadsheet shows them.
    data = with_values(data).data
    wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    out = io.StringIO()
    size = 0
    try:
        for ws in wb.worksheets:
            out.write(f"# {ws.title}\n")
            writer = csv.writer(out, delimiter=";", lineterminator="\n")
            for row in ws.iter_rows(values_only=True):
                values = ["" if v is None else str(v) for v in row]
                while values and values[-1] == "":
                    values.pop()
                if values:
                    writer.writerow(values)
                size = out.tell()
                if size > MAX_TEXT_CHARS:
                    return out.getvalue()
            out.write("\n")
    finally:
        wb.close()
    return out.getvalue()


def _pptx(data: bytes) -> str:
    from pptx import Presentation

    _check_zip(data)
    prs = Presentation(io.BytesIO(data))
    parts: list[str] = []
    for number, slide in enumerate(prs.slides, start=1):
        lines = [f"--- {number} ---"]
        for shape in slide.shapes:
            if shape.has_text_frame:
                lines.extend(p.text for p in shape.text_frame.paragraphs if p.text)
            if getattr(shape, "has_table", False) and shape.has_table:
                for row in shape.table.rows:
                    lines.append(" | ".join(cell.text for cell in row.cells))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame.text if slide.notes_slide.notes_text_frame else ""
            if notes:
                lines.append(f"[notes] {notes}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


_EXTRACTORS = {
    "pdf": _pdf,
    "docx": _docx,
    "xlsx": _xlsx,
    "pptx": _pptx,
    "html": _html,
    "text": _text,
}
