"""Signed, expiring links to a user's files, for Twilio to fetch (WhatsApp media) or a person to open.

`/files/{id}/{expires}/{signature}/{name}`: the HMAC covers id, expiry and name, so changing any
character of the link makes it invalid. Twilio fetches with HEAD and GET and rejects the media
when the Content-Type does not match; WhatsApp shows the `Content-Disposition` file name, which
must be short (≤ 20 characters) and without spaces.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from pathlib import PurePosixPath

from unidecode import unidecode

from bot.config import Settings
from bot.models import UserFile

MAX_NAME = 20


def short_name(name: str, max_len: int = MAX_NAME) -> str:
    """An ASCII file name without spaces, at most `max_len` characters, keeping the extension."""
    path = PurePosixPath(unidecode(name or "file").replace("\\", "/").split("/")[-1])
    ext = re.sub(r"[^A-Za-z0-9]", "", path.suffix)[:8].lower()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", path.stem).strip("._-") or "file"
    room = max_len - (len(ext) + 1 if ext else 0)
    stem = stem[: max(1, room)].rstrip("._-") or "file"
    return f"{stem}.{ext}" if ext else stem


def _signature(secret: str, file_id: int, expires: int, name: str) -> str:
    mac = hmac.new(secret.encode(), f"{file_id}:{expires}:{name}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac[:18]).decode().rstrip("=")


def file_path(settings: Settings, user_file: UserFile, *, now: float | None = None,
              ttl_s: int | None = None) -> str:
    expires = int((now if now is not None else time.time()) + (ttl_s or settings.file_link_ttl_s))
    name = short_name(user_file.name)
    sig = _signature(settings.secret_key, user_file.id, expires, name)
    return f"/files/{user_file.id}/{expires}/{sig}/{name}"


def file_url(settings: Settings, user_file: UserFile, *, ttl_s: int | None = None) -> str:
    """The public link to `user_file`, valid for FILE_LINK_TTL_S seconds."""
    return settings.public_base_url + file_path(settings, user_file, ttl_s=ttl_s)


def check_link(settings: Settings, file_id: str, expires: str, sig: str, name: str,
               *, now: float | None = None) -> int | None:
    """The file id when the link is genuine and unexpired, else None."""
    if not (file_id.isdigit() and expires.isdigit()) or len(file_id) > 18 or len(expires) > 12:
        return None
    expected = _signature(settings.secret_key, int(file_id), int(expires), name)
    if not hmac.compare_digest(expected, sig):
        return None
    if int(expires) < (now if now is not None else time.time()):
        return None
    return int(file_id)
