"""Who a web request comes from, for every limit kept per client: the dashboard's login throttle
(bot.web.admin.throttle) and a job page's streams (bot.web.job_stream).

The client is the TCP peer, unless the peer is one of TRUSTED_PROXIES. Then X-Forwarded-For is read
from the right, where each proxy appended the address it got the request from, and the client is
the first address that is not a trusted proxy: what lies left of it was written by the client
itself and proves nothing. With TRUSTED_PROXIES empty (the default) the header is never read, since
anyone can send one. An IPv6 client counts as its /64: a home or a phone is given a whole /64 and
may take any address in it, so a limit per IPv6 address would be no limit."""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address, IPv6Address, IPv6Network, ip_address

from aiohttp import web

from bot.config_groups import Proxies

Address = IPv4Address | IPv6Address


def parsed(text: str) -> Address | None:
    """An address as a peer or a proxy writes it: bare, with a port (`203.0.113.7:51234`,
    `[2001:db8::1]:443`), an IPv4 client seen by a dual-stack socket (`::ffff:203.0.113.7`)."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ip_address(text)
    except ValueError:
        return None
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: Address, proxies: Proxies) -> bool:
    return any(address in network for network in proxies)


def _key(address: Address) -> str:
    if isinstance(address, IPv6Address):
        return str(IPv6Network((address, 64), strict=False))
    return str(address)


def resolve(peer: str | None, forwarded: Iterable[str], proxies: Proxies) -> str:
    """The client's key from the TCP peer and the X-Forwarded-For headers (in their order)."""
    address = parsed(peer or "")
    if address is None:
        return peer or "unknown"  # not an IP socket: nothing to tell clients apart by
    if not proxies or not _trusted(address, proxies):
        return _key(address)
    hops = [hop for header in forwarded for hop in header.split(",") if hop.strip()]
    for hop in reversed(hops):
        found = parsed(hop)
        if found is None:
            break  # what a trusted proxy passed on unread: the last address known stands
        address = found
        if not _trusted(found, proxies):
            break
    return _key(address)


def client_of(request: web.Request, proxies: Proxies) -> str:
    """The request's client: its address, or its /64 for IPv6 (see the module's docstring)."""
    return resolve(request.remote, request.headers.getall("X-Forwarded-For", []), proxies)
