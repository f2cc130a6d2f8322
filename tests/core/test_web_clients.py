"""Who a web request comes from (bot.web.clients), for the limits kept per client: the TCP peer,
or behind a trusted proxy the first address of X-Forwarded-For, read from the right, that is no
trusted proxy; an IPv6 client is its /64; TRUSTED_PROXIES is checked at start-up."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, load_settings
from bot.web.clients import resolve

PROXIES = load_settings({"TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8"}).trusted_proxies


@pytest.mark.parametrize(("peer", "forwarded", "client"), [
    ("127.0.0.1", ["198.51.100.7"], "198.51.100.7"),  # the proxy says who it got the request from
    ("127.0.0.1", ["198.51.100.7, 203.0.113.9"], "203.0.113.9"),  # the left part is the browser's own
    ("127.0.0.1", ["198.51.100.7, 10.1.2.3", "10.4.5.6"], "198.51.100.7"),  # through two proxies
    ("127.0.0.1", ["10.1.2.3"], "10.1.2.3"),  # only proxies: the farthest one
    ("127.0.0.1", [], "127.0.0.1"),  # nothing said: the proxy itself
    ("127.0.0.1", ["not an address, 10.1.2.3"], "10.1.2.3"),  # what the proxy passed on unread
    ("127.0.0.1", ["203.0.113.9:51234"], "203.0.113.9"),  # with a port
    ("127.0.0.1", ["[2001:db8:5:6::1]:443"], "2001:db8:5:6::/64"),
    ("::ffff:127.0.0.1", ["198.51.100.7"], "198.51.100.7"),  # a dual-stack socket's IPv4 proxy
    ("192.0.2.1", ["198.51.100.7"], "192.0.2.1"),  # no trusted proxy: the header is anyone's
    ("2001:db8:1:2:aaaa::9", [], "2001:db8:1:2::/64"),  # any address of one /64 is one client
    (None, ["198.51.100.7"], "unknown"),
])
def test_the_client_is_the_first_address_no_trusted_proxy_wrote(
    peer: str | None, forwarded: list[str], client: str,
) -> None:
    assert resolve(peer, forwarded, PROXIES) == client


def test_without_trusted_proxies_no_header_is_believed() -> None:
    assert load_settings({}).trusted_proxies == ()
    assert resolve("127.0.0.1", ["198.51.100.7"], ()) == "127.0.0.1"


def test_trusted_proxies_is_checked_at_start_up() -> None:
    with pytest.raises(ConfigError, match=r"^TRUSTED_PROXIES must list IP addresses .*'proxy\.lan'"):
        load_settings({"TRUSTED_PROXIES": "10.0.0.5, proxy.lan"})
