"""Credentials a provider refused: said out loud to the operator, never to the user.

A 401/403 from the model's API, Twilio (error 20003) or another provider means a setting is wrong,
and every message fails the same way until someone fixes it. The user keeps getting the polite
« réessaie » message; the operator gets one ERROR line per provider per minute that names the
variable to fix (not one per message: a busy bot would drown its own log), a counter
(`deblo_credentials_refused_total{provider}`) and the same finding in `python -m bot doctor`."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from prometheus_client import Counter

__all__ = ["LOG_EVERY_S", "REFUSED", "refused"]

log = logging.getLogger("bot.credentials")

REFUSED = Counter("deblo_credentials_refused_total",
                  "Calls a provider refused for their credentials (401/403, Twilio 20003), by provider",
                  ["provider"])
LOG_EVERY_S = 60.0
_last_logged: dict[str, float] = {}
# A provider's refusal often quotes the key it refused (« Incorrect API key provided: sk-… »); a log
# line is read and shipped by more people than the settings are. Long tokens mixing letters and digits
# are cut to their first 4 characters, and a URL's user:password@ is hidden.
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.]{16,}")
_USERINFO = re.compile(r"(://)[^/@\s]+@")


def _masked(detail: str) -> str:
    def cut(found: re.Match[str]) -> str:
        token = found.group(0)
        mixed = any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
        return f"{token[:4]}…" if mixed else token

    return _TOKEN.sub(cut, _USERINFO.sub(r"\1***@", detail))


def refused(provider: str, variable: str, detail: str, *, now: Callable[[], float] = time.monotonic) -> bool:
    """Counts one refusal and logs it at ERROR unless this provider's was logged in the last minute.
    Returns whether it was logged."""
    REFUSED.labels(provider).inc()
    at = now()
    last = _last_logged.get(provider)
    if last is not None and at - last < LOG_EVERY_S:
        return False
    _last_logged[provider] = at
    log.error("%s refused the credentials: check %s (%s)", provider, variable, _masked(detail[:200]),
              extra={"provider": provider, "variable": variable})
    return True
