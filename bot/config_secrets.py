"""Which settings are secrets, what `serve` and `worker` refuse to start with, and `redact`, the one
function that takes every secret out of a text before it is printed or logged.

SECRET_KEY signs every file link, job page and progress page: a short key, one copied from an
example or a tutorial, or the Twilio auth token (which Twilio and whoever manages the account also
know) would let anyone forge a link to any child's files and progress, so nothing lifts that rule.
The other placeholders of examples (.env.example's PUBLIC_BASE_URL=https://bot.example.org, a
tutorial's `your_auth_token`) stop the start too, unless ALLOW_PLACEHOLDERS=1 for a local trial,
which the log then says at WARNING. A field of `Settings` or of one of its groups declared with
`repr=False` is a secret: a new one is covered without being listed here.
"""

from __future__ import annotations

import re
from base64 import b64encode
from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from bot.config import Settings

__all__ = ["MAKE_SECRET", "MIN_SECRET_KEY", "Refusal", "example_host", "placeholders", "redact", "refusal",
           "secrets_of", "weak_secret_key"]

MIN_SECRET_KEY = 32
MAKE_SECRET = 'python -c "import secrets; print(secrets.token_urlsafe(48))"'
# The domains reserved for examples (RFC 2606): nobody's bot is reached there.
EXAMPLE_DOMAINS = ("example.org", "example.com", "example.net", "example")
# Values of examples and tutorials, compared lower-cased without punctuation (change-me is changeme).
PLACEHOLDER_WORDS = frozenset({
    "changeme", "changethis", "changeit", "replaceme", "secret", "secretkey", "mysecret", "mysecretkey",
    "supersecret", "password", "passwd", "placeholder", "token", "apikey", "authtoken", "todo", "fixme",
})
# Besides: anything starting with "your" (your_auth_token, YOUR_API_KEY), x's (xxxx, Twilio's
# ACxxxx…), or a word in brackets (<token>, {{key}}, [secret]).
_PLACEHOLDER_SHAPE = re.compile(r"(your|changeme|replace).*|(ac)?x{3,}")
_BRACKETED = re.compile(r"[<{\[].*[>}\]]")
# A secret's value is not searched for below this length: replacing every "k" of a text would
# garble it, and such a value is no secret anyway.
MIN_REDACTED = 4
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD")


@dataclass(frozen=True)
class Refusal:
    """Why serve would not start, and what to do: `line` is what the operator reads."""

    reason: str
    fix: str

    @property
    def line(self) -> str:
        return f"{self.reason}: {self.fix}"


def _groups(settings: Settings) -> Iterator[Any]:
    """The settings and each group of them (limits, safety, library, …)."""
    yield settings
    yield from (value for f in fields(settings) if is_dataclass(value := getattr(settings, f.name)))


def _variables(settings: Settings) -> Iterator[tuple[str, Any, bool]]:
    """(variable, value, is a secret) for every setting, the groups' included."""
    for group in _groups(settings):
        for f in fields(group):
            yield f.metadata.get("variable", f.name.upper()), getattr(group, f.name), not f.repr


def _urls(settings: Settings) -> Iterator[tuple[str, str]]:
    for name, value, _secret in _variables(settings):
        if isinstance(value, str) and "://" in value:
            yield name, value


def secrets_of(settings: Settings) -> list[tuple[str, str]]:
    """(variable, value) of every secret that is set: the keys, tokens and passwords, the DEBLO_*
    variables named like one, and the passwords inside URL settings (DATABASE_URL, REDIS_URL, …),
    as written and as sent in a Basic authorization."""
    found = [(name, value) for name, value, secret in _variables(settings)
             if secret and isinstance(value, str) and value]
    found += [(name, value) for name, value in settings.extra.items() if _SECRET_NAME.search(name) and value]
    for name, url in _urls(settings):
        parts = urlsplit(url)
        if parts.password:
            # As an HTTP client sends it too: Basic base64(user:password), which a provider may echo.
            password = unquote(parts.password)
            basic = b64encode(f"{unquote(parts.username or '')}:{password}".encode()).decode()
            found += [(f"{name} password", value) for value in (parts.password, password, basic)]
    return found


def redact(text: str, settings: Settings) -> str:
    """`text` without any URL's userinfo and without the value of any secret, each replaced by the
    name of its variable (a provider that echoes the key says `[LLM_API_KEY]`)."""
    text = _USERINFO.sub(r"\1***@", text)
    for name, value in sorted(secrets_of(settings), key=lambda pair: -len(pair[1])):
        if len(value) >= MIN_REDACTED:
            text = text.replace(value, f"[{name}]")
    return text


def _placeholder(value: str) -> bool:
    word = re.sub(r"[^a-z0-9]", "", value.lower())
    return (word in PLACEHOLDER_WORDS or bool(_PLACEHOLDER_SHAPE.fullmatch(word))
            or bool(_BRACKETED.fullmatch(value.strip())))


def example_host(url: str) -> bool:
    """Whether `url` is on a domain reserved for examples (bot.example.org)."""
    host = (urlsplit(url).hostname or "").lower()
    return any(host == domain or host.endswith("." + domain) for domain in EXAMPLE_DOMAINS)


def weak_secret_key(settings: Settings) -> Refusal | None:
    """What is wrong with SECRET_KEY, if anything."""
    key, fix = settings.secret_key, f"make one with `{MAKE_SECRET}`"
    if settings.twilio_auth_token and key == settings.twilio_auth_token:
        return Refusal("SECRET_KEY must be the bot's own secret, not the value of TWILIO_AUTH_TOKEN", fix)
    if _placeholder(key):
        return Refusal("SECRET_KEY is a placeholder copied from an example", fix)
    if len(key) < MIN_SECRET_KEY:
        return Refusal(f"SECRET_KEY is {len(key)} characters long, at least {MIN_SECRET_KEY} are needed", fix)
    if len(set(key)) < 8:
        return Refusal(f"SECRET_KEY is not random ({len(set(key))} different characters)", fix)
    return None


def placeholders(settings: Settings) -> list[str]:
    """The variables (SECRET_KEY aside) that hold a placeholder of an example: a secret or the
    Twilio account like `your_auth_token`, a URL on an example domain like https://bot.example.org."""
    named = [(name, value) for name, value in secrets_of(settings)
             if name != "SECRET_KEY" and " " not in name and _placeholder(value)]
    if _placeholder(settings.twilio_account_sid):
        named.append(("TWILIO_ACCOUNT_SID", settings.twilio_account_sid))
    named += [(name, url) for name, url in _urls(settings) if example_host(url)]
    # A value is named once, by the first variable that holds it: TRANSCRIBE_API_KEY unset is
    # LLM_API_KEY's value, and the operator wrote only the latter.
    first: dict[str, str] = {}
    for name, value in named:
        first.setdefault(value, name)
    return list(first.values())


def refusal(settings: Settings) -> Refusal | None:
    """Why `serve` and `worker` must not start with these settings; None when they may."""
    weak = weak_secret_key(settings)
    if weak is not None:
        return weak
    found = placeholders(settings)
    if not found or settings.allow_placeholders:
        return None
    others = f" (and {', '.join(found[1:])})" if found[1:] else ""
    return Refusal(f"{found[0]}{others} holds a placeholder copied from an example",
                   "set the real value (see .env.example), or ALLOW_PLACEHOLDERS=1 for a local trial")
