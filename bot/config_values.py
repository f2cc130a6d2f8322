"""The checks of one setting's value, and the types that carry them (bot.config declares the
settings with these). A ValueError's text follows the variable's name in the error an operator
sees ("PORT must be …"), so it says what is expected and what was given.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_settings import NoDecode

__all__ = [
    "DEFAULT_SENDER_MPS", "LOWERED", "CreditPacks", "DatabaseUrl", "Hosts", "Hour", "Lower", "Names",
    "Networks", "Positive", "RedisUrl", "SenderMps", "TemplateVariable", "Upper", "Url", "WhatsAppFrom",
]


def _url(value: str) -> str:
    value = value.rstrip("/")
    if value and not value.startswith(("http://", "https://")):
        raise ValueError(f"must start with http:// or https://, got {value!r}")
    return value


def _database_url(value: str) -> str:
    if value and not value.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
        # Only the scheme: the rest may hold a password.
        raise ValueError("must start with sqlite+aiosqlite:// or postgresql+asyncpg://, "
                         f"got {value.split(':', 1)[0]!r}")
    return value


def _redis_url(value: str) -> str:
    if value and not value.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"must start with redis://, rediss:// or unix://, got {value.split(':', 1)[0]!r}")
    return value


def _whatsapp_from(value: str) -> str:
    if value and not value.startswith("whatsapp:"):
        raise ValueError(f"must look like whatsapp:+14155238886, got {value!r}")
    return value


def _template_variable(value: str) -> str:
    # Variable 1 carries the message text; a Content API variable key is at most 16 characters.
    if value and (value == "1" or len(value) > 16 or not value.isalnum()):
        raise ValueError("must be a template variable other than 1 (letters or digits, at most 16), "
                         f"got {value!r}")
    return value


def _hour(value: int) -> int:
    if not 0 <= value <= 23:
        raise ValueError(f"must be an hour from 0 to 23, got {value}")
    return value


def _names(value: Any) -> Any:
    """A comma-separated list: "a, b" is ("a", "b")."""
    return tuple(n.strip() for n in value.split(",") if n.strip()) if isinstance(value, str) else value


_HOST = re.compile(r"(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?")


def _hosts(value: Any) -> Any:
    """BROWSE_ALLOWED_HOSTS="education.gouv.ci, fr.wikipedia.org, 10.0.0.5:8080": host names (each with
    its subdomains) or host:port pairs, lower case, without scheme or path."""
    if not isinstance(value, str):
        return value
    hosts = tuple(h.strip().lower().rstrip(".") for h in value.split(",") if h.strip())
    for host in hosts:
        if not _HOST.fullmatch(host):
            raise ValueError(f"must be host names (education.gouv.ci) or host:port, got {host!r}")
    return hosts


def _credit_packs(value: Any) -> Any:
    """CREDIT_PACKS="100:500,250:1000": credits:price pairs, offered in that order."""
    if not isinstance(value, str):
        return value
    packs: list[tuple[int, int]] = []
    for item in value.split(","):
        credits, _, price = item.strip().partition(":")
        try:
            pack = (int(credits), int(price))
        except ValueError:
            raise ValueError(f"must look like 100:500,250:1000 (credits:price), got {item!r}") from None
        if pack[0] <= 0 or pack[1] <= 0:
            raise ValueError(f"needs positive credits and prices, got {item!r}")
        packs.append(pack)
    return tuple(packs)


# Twilio's default throughput: 80 messages a second per WhatsApp sender, 1 segment a second per
# long-code SMS number (docs: WhatsApp best practices and FAQs; help article 360024008153).
DEFAULT_SENDER_MPS: tuple[tuple[str, int], ...] = (("whatsapp", 80), ("sms", 1))


def _sender_mps(value: Any) -> Any:
    """TWILIO_SENDER_MPS: "80" paces every WhatsApp sender at 80 a second (SMS numbers keep 1);
    "whatsapp=80,sms=1" names both; a sender's own address overrides its channel's value
    ("whatsapp=80,sms=1,+15005550006=10": a toll-free or short code allowed more)."""
    if not isinstance(value, str):
        return value
    rates = dict(DEFAULT_SENDER_MPS)
    items = [item.strip() for item in value.split(",") if item.strip()]
    for item in items:
        name, equals, number = item.rpartition("=")
        name = name.strip().lower() if equals else "whatsapp"
        try:
            mps = int(number.strip())
        except ValueError:
            raise ValueError("must be messages a second, as 80 or whatsapp=80,sms=1 "
                             f"(whole numbers), got {item!r}") from None
        if mps < 1 or not name:
            raise ValueError(f"needs a sender and 1 or more messages a second, got {item!r}")
        rates[name] = mps
    return tuple(rates.items())


def _networks(value: Any) -> Any:
    """TRUSTED_PROXIES="10.0.0.5, 172.16.0.0/12, ::1": addresses and networks (a host's bits set in a
    network, as in 10.0.0.1/8, read as its network)."""
    if not isinstance(value, str):
        return value
    found: list[IPv4Network | IPv6Network] = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        try:
            found.append(ip_network(item, strict=False))
        except ValueError:
            raise ValueError("must list IP addresses or networks (10.0.0.5, 172.16.0.0/12), "
                             f"got {item!r}") from None
    return tuple(found)


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


Url = Annotated[str, AfterValidator(_url)]
Lower = Annotated[str, AfterValidator(str.lower)]
Upper = Annotated[str, AfterValidator(str.upper)]
Names = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_names)]
Hosts = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_hosts)]
Positive = Annotated[float, Field(gt=0)]
Networks = Annotated[tuple[IPv4Network | IPv6Network, ...], NoDecode, BeforeValidator(_networks)]

DatabaseUrl = Annotated[str, AfterValidator(_database_url)]
RedisUrl = Annotated[str, AfterValidator(_redis_url)]
WhatsAppFrom = Annotated[str, AfterValidator(_whatsapp_from)]
TemplateVariable = Annotated[str, AfterValidator(_template_variable)]
Hour = Annotated[int, AfterValidator(_hour)]
CreditPacks = Annotated[tuple[tuple[int, int], ...], NoDecode, BeforeValidator(_credit_packs)]
SenderMps = Annotated[tuple[tuple[str, int], ...], NoDecode, BeforeValidator(_sender_mps)]
LOWERED = BeforeValidator(_lower)  # a word compared lower-cased (Literal choices)
