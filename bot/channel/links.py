"""Signed, expiring links to a user's files, for Twilio to fetch (WhatsApp media) or a person to open.

`/files/{id}/{expires}/{signature}/{name}`: the HMAC covers id, expiry and name, so changing any
character of the link makes it invalid. Twilio fetches with HEAD and GET and rejects the media
when the Content-Type does not match. The name WhatsApp shows for a document is the file name of
the media: the link's last path segment, which is also the `Content-Disposition` name we serve.
So the name is readable (`bilan-syscohada-2026.pdf`): ASCII, lower case, words joined by hyphens,
no spaces, long enough to recognise the file.

Two lifetimes: FILE_LINK_TTL_S for WhatsApp media, which Twilio fetches within seconds, and
FILE_LINK_SMS_TTL_S (days) for links a person reads later: in an SMS, an e-mail or a template.

An id or expiry in a link has one spelling only: ASCII digits without a leading zero (ID_PATTERN,
also the routes' pattern), so `/files/007/…` is no link to file 7. A signature or name that is not
ASCII is simply not genuine (never an error).
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
from bot.storage.models import UserFile

MAX_NAME = 48
# The one spelling of a file or job id in a path (an aiohttp route pattern; Python's [0-9] is ASCII).
ID_PATTERN = "[1-9][0-9]{0,17}"
_NUMBER = re.compile(r"[1-9][0-9]{0,17}")


def _canonical(*numbers: str) -> bool:
    """True when each is a positive number in its one spelling: no sign, space, leading zero or
    non-ASCII digit (`str.isdigit` takes `٧` and `²`, which `int` reads as 7 or refuses)."""
    return all(_NUMBER.fullmatch(number) for number in numbers)


def short_name(name: str, max_len: int = MAX_NAME) -> str:
    """A readable ASCII file name for links: `Bilan SYSCOHADA 2026.pdf` -> `bilan-syscohada-2026.pdf`.

    Lower case, words joined by hyphens, at most `max_len` characters, the extension kept."""
    path = PurePosixPath(unidecode(name or "file").replace("\\", "/").split("/")[-1])
    ext = re.sub(r"[^A-Za-z0-9]", "", path.suffix)[:8].lower()
    stem = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-") or "file"
    room = max_len - (len(ext) + 1 if ext else 0)
    if len(stem) > room:
        # Cut at a word boundary when one is near, so the name does not end mid-word.
        cut = stem[: max(1, room)]
        stem = cut.rsplit("-", 1)[0] if "-" in cut[room // 2:] else cut
    stem = stem.strip("-") or "file"
    return f"{stem}.{ext}" if ext else stem


def _signature(secret: str, file_id: int, expires: int, name: str) -> str:
    mac = hmac.new(secret.encode(), f"{file_id}:{expires}:{name}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac[:18]).decode().rstrip("=")


def link_ttl(settings: Settings, *, read_later: bool) -> int:
    """Seconds a link stays valid: days when a person opens it later, else Twilio's fetch time."""
    return settings.file_link_sms_ttl_s if read_later else settings.file_link_ttl_s


def file_path(settings: Settings, user_file: UserFile, *, now: float | None = None,
              ttl_s: int | None = None, read_later: bool = False) -> str:
    ttl = ttl_s if ttl_s is not None else link_ttl(settings, read_later=read_later)
    expires = int((now if now is not None else time.time()) + ttl)
    name = short_name(user_file.name)
    sig = _signature(settings.secret_key, user_file.id, expires, name)
    return f"/files/{user_file.id}/{expires}/{sig}/{name}"


def file_url(settings: Settings, user_file: UserFile, *, ttl_s: int | None = None,
             read_later: bool = False) -> str:
    """The public link to `user_file`: valid FILE_LINK_TTL_S seconds, or FILE_LINK_SMS_TTL_S when
    `read_later` (a person opens it from an SMS, an e-mail or a template message)."""
    return settings.public_base_url + file_path(settings, user_file, ttl_s=ttl_s, read_later=read_later)


def check_link(settings: Settings, file_id: str, expires: str, sig: str, name: str,
               *, now: float | None = None) -> int | None:
    """The file id when the link is genuine and unexpired, else None."""
    if not _canonical(file_id, expires) or len(expires) > 12 or not (sig.isascii() and name.isascii()):
        return None
    expected = _signature(settings.secret_key, int(file_id), int(expires), name)
    if not hmac.compare_digest(expected, sig):
        return None
    if int(expires) < (now if now is not None else time.time()):
        return None
    return int(file_id)


# --- progress pages of background jobs: /jobs/{id}?sig=<expires>.<mac> -----------------------


def _job_mac(secret: str, job_id: int, expires: int) -> str:
    mac = hmac.new(secret.encode(), f"job:{job_id}:{expires}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac[:18]).decode().rstrip("=")


def job_signature(settings: Settings, job_id: int, *, now: float | None = None,
                  ttl_s: int | None = None) -> str:
    """The `sig` of a job's progress page: its expiry and an HMAC of id and expiry, so the link
    opens that one job only, until it expires (FILE_LINK_SMS_TTL_S unless `ttl_s`)."""
    ttl = ttl_s if ttl_s is not None else settings.file_link_sms_ttl_s
    expires = int((now if now is not None else time.time()) + ttl)
    return f"{expires}.{_job_mac(settings.secret_key, job_id, expires)}"


def job_page_url(settings: Settings, job_id: int, *, now: float | None = None) -> str:
    """The public link to a job's live progress page, sent with STATUT, the long-work note and the answer."""
    return f"{settings.public_base_url}/jobs/{job_id}?sig={job_signature(settings, job_id, now=now)}"


def check_job_signature(settings: Settings, job_id: str, sig: str, *, now: float | None = None) -> int | None:
    """The job id when `sig` is genuine for it and unexpired, else None."""
    expires, _, mac = (sig or "").partition(".")
    if not _canonical(job_id, expires) or len(expires) > 12 or not mac.isascii():
        return None
    if not hmac.compare_digest(_job_mac(settings.secret_key, int(job_id), int(expires)), mac):
        return None
    if int(expires) < (now if now is not None else time.time()):
        return None
    return int(job_id)


# --- a student's progress page: /progress/{id}?sig=<expires>.<mac> ----------------------------


def _progress_mac(secret: str, student_id: int, expires: int) -> str:
    # Its own prefix: a job page's sig for the same number opens no progress page, nor the reverse.
    mac = hmac.new(secret.encode(), f"progress:{student_id}:{expires}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac[:18]).decode().rstrip("=")


def progress_signature(settings: Settings, student_id: int, *, now: float | None = None,
                       ttl_s: int | None = None) -> str:
    """The `sig` of a student's progress page: its expiry and an HMAC of id and expiry, so the link
    opens that one student's page only, until it expires (PROGRESS_LINK_TTL_S unless `ttl_s`)."""
    ttl = ttl_s if ttl_s is not None else settings.learning.progress_link_ttl_s
    expires = int((now if now is not None else time.time()) + ttl)
    return f"{expires}.{_progress_mac(settings.secret_key, student_id, expires)}"


def progress_page_url(settings: Settings, student_id: int, *, now: float | None = None) -> str:
    """The public link to a student's progress page, at the end of PROGRES and ENFANTS by SMS."""
    sig = progress_signature(settings, student_id, now=now)
    return f"{settings.public_base_url}/progress/{student_id}?sig={sig}"


def check_progress_signature(settings: Settings, student_id: str, sig: str, *,
                             now: float | None = None) -> int | None:
    """The student id when `sig` is genuine for it and unexpired, else None."""
    expires, _, mac = (sig or "").partition(".")
    if not _canonical(student_id, expires) or len(expires) > 12 or not mac.isascii():
        return None
    if not hmac.compare_digest(_progress_mac(settings.secret_key, int(student_id), int(expires)), mac):
        return None
    if int(expires) < (now if now is not None else time.time()):
        return None
    return int(student_id)
