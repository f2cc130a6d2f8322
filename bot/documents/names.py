"""File names a user will see. Never used as a storage path: keys are ours (see bot.library)."""

from __future__ import annotations

import re
import unicodedata

MAX_NAME_CHARS = 100

_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*]+')
_SPACES = re.compile(r"\s+")

MIME_BY_EXT: dict[str, str] = {
    ".pdf": "application/pdf",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".html": "text/html",
    ".md": "text/markdown",
    ".txt": "text/plain",
    ".csv": "text/csv",
    ".json": "application/json",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".ogg": "audio/ogg",
    ".mp3": "audio/mpeg",
    ".mp4": "video/mp4",
}
EXT_BY_MIME: dict[str, str] = {}
for _ext, _mime in MIME_BY_EXT.items():
    EXT_BY_MIME.setdefault(_mime, _ext)
EXT_BY_MIME["text/x-markdown"] = ".md"
EXT_BY_MIME["application/msword"] = ".doc"
EXT_BY_MIME["audio/amr"] = ".amr"


def safe_filename(raw: str | None, ext: str = "", default: str = "document") -> str:
    """A name safe to show and to put in a Content-Disposition header.

    Directory parts are dropped ("../../etc/passwd" becomes "passwd"), control and reserved
    characters removed, leading dots stripped (no hidden files), and `ext` forced when given.
    """
    text = unicodedata.normalize("NFC", raw or "")
    text = re.split(r"[/\\]", text)[-1]
    text = _UNSAFE.sub(" ", text)
    text = _SPACES.sub(" ", text).strip().lstrip(". ").rstrip(". ")
    stem, dot, suffix = text.rpartition(".")
    if ext:
        ext = ext if ext.startswith(".") else "." + ext
        if dot and "." + suffix.lower() == ext.lower():
            text = stem.rstrip(". ")
        text = text or default
        return text[: MAX_NAME_CHARS - len(ext)].rstrip(". ") + ext
    text = text or default
    if len(text) > MAX_NAME_CHARS:
        stem, dot, suffix = text.rpartition(".")
        if dot and 0 < len(suffix) <= 8:
            return stem[: MAX_NAME_CHARS - len(suffix) - 1] + "." + suffix
        return text[:MAX_NAME_CHARS]
    return text


def extension_of(name: str, mime: str = "") -> str:
    """The lower-case extension (with its dot) from the name, else from the MIME type, else ""."""
    _stem, dot, suffix = name.rpartition(".")
    if dot and 0 < len(suffix) <= 8 and suffix.isalnum():
        return "." + suffix.lower()
    return EXT_BY_MIME.get(mime.split(";")[0].strip().lower(), "")


_MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,62}/[a-z0-9][a-z0-9!#$&^_.+-]{0,62}$")


def mime_for(name: str, declared: str = "") -> str:
    """The declared MIME type when it is a plain, specific one; else one from the extension."""
    declared = (declared or "").split(";")[0].strip().lower()
    if not _MIME.match(declared):
        declared = ""
    if declared and declared != "application/octet-stream":
        return declared
    return MIME_BY_EXT.get(extension_of(name), declared or "application/octet-stream")
