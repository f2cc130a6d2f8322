"""Fetching a web page for the model without letting it reach inside our network (SSRF).

Every hop (the first URL and each redirect) is resolved here, every address it resolves to must be
public, and the connection goes to the address we checked: the URL is rewritten to that IP, with
the original name kept in `Host` and in TLS SNI/certificate checks, so a second DNS answer (DNS
rebinding) is never used. Bodies are read up to a byte cap and the whole fetch is time-boxed;
compressed bodies are inflated piece by piece within that cap, so a gzip bomb costs about the cap.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from bot.config import Settings

MAX_REDIRECTS = 5
USER_AGENT = "DebloBot/1.0 (+reader)"
_REDIRECTS = {301, 302, 303, 307, 308}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class FetchRefused(Exception):
    """The URL may not be fetched (scheme, private address…); the message says why."""


class FetchFailed(Exception):
    """The site could not be reached or answered badly; the message says how."""


@dataclass(frozen=True)
class Fetched:
    url: str  # the final URL, after redirects
    status: int
    content_type: str
    body: bytes
    truncated: bool  # the body was cut at the byte cap


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, NAT64, Teredo), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in ipaddress.IPv6Network("64:ff9b::/96") or ip in ipaddress.IPv6Network("64:ff9b:1::/48"):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in ipaddress.IPv6Network("::/96"):  # deprecated IPv4-compatible form, e.g. ::127.0.0.1
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public_address(ip: IPAddress) -> bool:
    """False for loopback, private, link-local (cloud metadata), CGNAT, multicast, reserved, unspecified."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None and not is_public_address(inner):
            return False
        if ip.is_site_local:
            return False
    return bool(
        ip.is_global
        and not ip.is_multicast
        and not ip.is_private
        and not ip.is_loopback
        and not ip.is_link_local
        and not ip.is_reserved
        and not ip.is_unspecified
    )


def check_url_shape(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL; refuses other schemes, credentials and odd hosts."""
    if not isinstance(url, str) or not url.strip():
        raise FetchRefused("empty URL")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise FetchRefused(f"malformed URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchRefused(f"only http and https URLs can be read, not {scheme or 'this'!r}")
    if parts.username or parts.password:
        raise FetchRefused("URLs with a user name or password are refused")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise FetchRefused("the URL has no host name")
    return scheme, host, port or (443 if scheme == "https" else 80)


def _literal_ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _numeric_ipv4(host: str) -> IPAddress | None:
    """Numeric forms resolvers read as IPv4 (2130706433, 0x7f.1, 0177.0.0.1, 127.1), whatever
    the resolver in use makes of them."""
    if not re.fullmatch(r"[0-9a-fA-Fx.]+", host) or not re.match(r"[0-9]", host):
        return None
    try:
        return ipaddress.ip_address(socket.inet_aton(host))
    except OSError:
        return None


def refuse_obviously_private(url: str) -> None:
    """A check without DNS (names are not resolved): `check_public_url` is the full one."""
    _scheme, host, _port = check_url_shape(url)
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        raise FetchRefused(f"{host} is a private address")
    ip = _literal_ip(host) or _numeric_ipv4(host)
    if ip is not None and not is_public_address(ip):
        raise FetchRefused(f"{host} is a private address")


async def check_public_url(url: str, settings: Settings) -> None:
    """The checks of a direct fetch's first hop, for a URL a remote reader (Jina) fetches itself:
    the name is resolved here and every address must be public, so the reader is never sent to a
    private address, however the address is spelled."""
    _scheme, host, port = check_url_shape(url)
    await resolve_checked(host, port, settings)


async def resolve_checked(host: str, port: int, settings: Settings) -> IPAddress:
    """The address to connect to; refuses if ANY address the name resolves to is not public."""
    literal = _literal_ip(host) or _numeric_ipv4(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            raise FetchFailed(f"the name {host} could not be resolved") from None
        except UnicodeError:
            raise FetchRefused(f"malformed host name {host[:80]!r}") from None
        addresses = []
        for info in infos:
            ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            if ip not in addresses:
                addresses.append(ip)
        if not addresses:
            raise FetchFailed(f"the name {host} has no address")
    for ip in addresses:
        if is_public_address(ip) or settings.browse_allow_private:
            continue
        if _allowed_for_tests(ip, port, settings):
            continue
        raise FetchRefused(f"{host} leads to a private or reserved address ({ip}); it cannot be read")
    return addresses[0]


def _allowed_for_tests(ip: IPAddress, port: int, settings: Settings) -> bool:
    host = f"[{ip}]" if ip.version == 6 else str(ip)
    return f"{host}:{port}" in settings.browse_test_allow


def _pinned_request(
    client: httpx.AsyncClient, url: str, scheme: str, host: str, port: int, ip: IPAddress
) -> httpx.Request:
    target = httpx.URL(url).copy_with(host=str(ip))
    default_port = 443 if scheme == "https" else 80
    host_header = host if port == default_port else f"{host}:{port}"
    if ":" in host and not host.startswith("["):
        host_header = f"[{host}]" if port == default_port else f"[{host}]:{port}"
    headers = {"Host": host_header, "User-Agent": USER_AGENT, "Accept-Encoding": accept_encoding(),
               "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"}
    extensions = {"sni_hostname": host} if scheme == "https" and _literal_ip(host) is None else {}
    return client.build_request("GET", target, headers=headers, extensions=extensions)


async def fetch(url: str, settings: Settings, *, max_bytes: int | None = None) -> Fetched:
    """GETs `url`, following redirects, each hop checked; raises FetchRefused or FetchFailed.

    BROWSE_TIMEOUT_S bounds the whole fetch, so a server dripping bytes cannot hold it open.
    """
    try:
        async with asyncio.timeout(settings.browse_timeout_s):
            return await _fetch(url, settings, max_bytes or settings.browse_max_bytes)
    except TimeoutError:
        raise FetchFailed("the site took too long to answer") from None


async def _fetch(url: str, settings: Settings, cap: int) -> Fetched:
    timeout = httpx.Timeout(settings.browse_timeout_s, connect=min(10.0, settings.browse_timeout_s))
    # trust_env=False: a proxy from the environment would resolve names itself, unchecked.
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False) as client:
        current = url.strip()
        for _hop in range(MAX_REDIRECTS + 1):
            scheme, host, port = check_url_shape(current)
            ip = await resolve_checked(host, port, settings)
            try:
                request = _pinned_request(client, current, scheme, host, port, ip)
            except (httpx.InvalidURL, ValueError) as exc:
                raise FetchRefused(f"malformed URL: {exc}") from None
            try:
                response = await client.send(request, stream=True)
            except httpx.TimeoutException:
                raise FetchFailed(f"{host} did not answer in time") from None
            except httpx.HTTPError as exc:
                raise FetchFailed(f"could not connect to {host}: {type(exc).__name__}") from None
            try:
                if response.status_code in _REDIRECTS and response.headers.get("location"):
                    current = urljoin(current, response.headers["location"])
                    continue
                body, truncated = await _read_capped(response, cap)
            except httpx.TimeoutException:
                raise FetchFailed(f"{host} was too slow sending the page") from None
            except httpx.HTTPError as exc:
                raise FetchFailed(f"reading from {host} failed: {type(exc).__name__}") from None
            finally:
                await response.aclose()
            return Fetched(
                url=current,
                status=response.status_code,
                content_type=response.headers.get("content-type", ""),
                body=body,
                truncated=truncated,
            )
    raise FetchFailed(f"more than {MAX_REDIRECTS} redirects")


class _Inflater:
    """Decompresses a body piece by piece, never producing more than asked for.

    httpx's own decoders inflate each network chunk whole: a few hundred KB of gzip can become
    gigabytes before any cap is checked. Here every call is bounded by `limit`.
    """

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.brotli: Any = None
        self.zlib: Any = None
        self.raw_deflate_tried = False
        if encoding == "br" and _brotli_module() is not None:
            self.brotli = _brotli_module().Decompressor()
        elif encoding in ("gzip", "x-gzip"):
            self.zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self.zlib = zlib.decompressobj()
        elif encoding not in ("", "identity"):
            raise FetchFailed(f"the site sent an unsupported encoding ({encoding[:40]})")

    def feed(self, data: bytes, limit: int) -> bytes:
        """At most about `limit` bytes of output for `data` (the rest of it is dropped with the cap)."""
        if self.brotli is not None:
            try:
                return bytes(self.brotli.process(data, output_buffer_limit=max(1, limit)))
            except _brotli_module().error:
                raise FetchFailed("the site sent a damaged compressed body") from None
        if self.zlib is None:
            return data[:limit]
        try:
            out = self.zlib.decompress(data, max(1, limit))
        except zlib.error:
            if self.encoding != "deflate" or self.raw_deflate_tried:
                raise FetchFailed("the site sent a damaged compressed body") from None
            # Some servers send raw deflate without the zlib header that HTTP's "deflate" means.
            self.raw_deflate_tried = True
            self.zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.feed(data, limit)
        self.raw_deflate_tried = True
        if self.zlib.eof and self.zlib.unused_data and len(out) < limit and self.encoding != "deflate":
            rest = self.zlib.unused_data  # the next member of a multi-member gzip body
            self.zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += self.feed(rest, limit - len(out))
        return bytes(out)


    def finish(self) -> None:
        """At the end of the body: a compressed stream must have ended too."""
        ended = True
        if self.brotli is not None:
            ended = bool(self.brotli.is_finished())
        elif self.zlib is not None:
            ended = bool(self.zlib.eof)
        if not ended:
            raise FetchFailed("the site sent a damaged compressed body (it ends too early)")


def _brotli_module() -> Any:
    """The brotli module when it can bound its output (brotli >= 1.2), else None."""
    try:
        import brotli
    except ImportError:
        return None
    if "output_buffer_limit" not in (getattr(brotli.Decompressor.process, "__doc__", "") or ""):
        return None
    return brotli


def accept_encoding() -> str:
    return "gzip, deflate, br" if _brotli_module() is not None else "gzip, deflate"


async def _read_capped(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """The body decoded, at most `cap` bytes of it, reading the wire raw so a compression bomb
    costs about `cap` of memory; compressed input is capped at `cap` bytes as well."""
    encodings = [e.strip() for e in response.headers.get("content-encoding", "").lower().split(",")]
    encodings = [e for e in encodings if e not in ("", "identity")]
    if len(encodings) > 1:
        raise FetchFailed(f"the site sent a body encoded {len(encodings)} times; it is not read")
    inflater = _Inflater(encodings[0] if encodings else "")
    body = bytearray()
    received = 0
    async for raw in response.aiter_raw():
        received += len(raw)
        body += inflater.feed(raw, cap + 1 - len(body))
        if len(body) > cap or received > cap:
            return bytes(body[:cap]), True
    inflater.finish()
    return bytes(body), False


def charset_of(content_type: str) -> str | None:
    match = re.search(r"charset=[\"']?([A-Za-z0-9._-]+)", content_type or "", re.I)
    return match.group(1) if match else None


def readable_text(fetched: Fetched) -> tuple[str, str]:
    """(title, text) of a fetched page: readable text for HTML, the text itself for text/*.

    CPU-bound: call it in a thread.
    """
    ctype = fetched.content_type.split(";", 1)[0].strip().lower()
    charset = charset_of(fetched.content_type) or "utf-8"
    if ctype in ("text/html", "application/xhtml+xml", "") or fetched.body.lstrip()[:15].lower().startswith(
        (b"<!doctype html", b"<html")
    ):
        import trafilatura

        html = _decode(fetched.body, charset)
        title = ""
        match = re.search(r"<title[^>]*>(.*?)</title>", html, re.I | re.S)
        if match:
            title = re.sub(r"\s+", " ", match.group(1)).strip()
        text = trafilatura.extract(html, url=fetched.url, include_tables=True, include_comments=False,
                                   output_format="markdown", favor_recall=True)
        if not text:
            text = trafilatura.html2txt(html) or ""
        return title, text.strip()
    if ctype.startswith("text/") or ctype in ("application/json", "application/xml"):
        return "", _decode(fetched.body, charset).strip()
    raise FetchRefused(f"this page is not text (it is {ctype}); it cannot be read here")


def _decode(body: bytes, charset: str) -> str:
    try:
        return body.decode(charset, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")
