"""browse_url and bot.agent.web_fetch: real fetches from local servers, and every SSRF refusal."""

from __future__ import annotations

import asyncio
import functools
import gzip
import ipaddress
import socket
import zlib
from collections.abc import Callable

import brotli
import pytest
from aiohttp import web

from bot.agent.toolspec import ToolContext
from bot.agent.web_fetch import FetchFailed, FetchRefused, _Inflater, fetch, is_public_address
from tests.support.ports import free_port
from tools.browse_url import MAX_CONTENT
from tools.browse_url import TOOL as BROWSE

ARTICLE = """<!DOCTYPE html><html><head><title>Les fractions</title></head><body>
<nav>Accueil | Cours | Contact</nav>
<article><h1>Les fractions</h1>
<p>Une fraction représente une partie d'un tout. Le numérateur est en haut et le dénominateur en bas.</p>
<p>Pour additionner deux fractions, on les met au même dénominateur, puis on additionne les numérateurs.</p>
<p>Exemple : un demi plus un tiers égale trois sixièmes plus deux sixièmes, soit cinq sixièmes.</p>
</article><footer>© Site de cours</footer><script>var tracking = 1;</script></body></html>"""


def _site(app: web.Application, _requests: list) -> None:
    async def article(_r: web.Request) -> web.Response:
        return web.Response(text=ARTICLE, content_type="text/html", charset="utf-8")

    async def long_page(_r: web.Request) -> web.Response:
        paragraphs = "".join(f"<p>Paragraphe {i} : " + "du texte utile " * 40 + "</p>" for i in range(200))
        return web.Response(text=f"<html><body><article>{paragraphs}</article></body></html>",
                            content_type="text/html")

    async def huge(_r: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(_r)
        for _ in range(200):
            await resp.write(b"a" * 65536)
        return resp

    async def slow(_r: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.Response(text="late")

    async def drip(_r: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(_r)
        for _ in range(50):
            await resp.write(b"x")
            await asyncio.sleep(0.1)
        return resp

    async def pdf(_r: web.Request) -> web.Response:
        return web.Response(body=b"%PDF-1.4", content_type="application/pdf")

    async def redirect(r: web.Request) -> web.Response:
        raise web.HTTPFound(r.query["to"])

    async def echo_host(r: web.Request) -> web.Response:
        return web.Response(text=f"host={r.headers.get('Host')}", content_type="text/plain")

    app.router.add_get("/article", article)
    app.router.add_get("/long", long_page)
    app.router.add_get("/huge", huge)
    app.router.add_get("/slow", slow)
    app.router.add_get("/drip", drip)
    app.router.add_get("/doc.pdf", pdf)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/host", echo_host)


async def _browse(services, url: str) -> dict:
    # browse_url reads nothing of a pro user: no user row is needed (a student's is read: see below).
    ctx = ToolContext(services=services, user_id=1, conversation_id=1, channel="whatsapp", mode="pro",
                      language="fr")
    return await BROWSE.run(ctx, {"url": url})


@pytest.fixture
async def site(http_stub):
    return await http_stub(_site)


async def test_reads_readable_text_of_an_allowed_site(make_services, site):
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{site.port}")
    result = await _browse(services, f"{site.base_url}/article")
    assert result["success"] is True, result
    assert result["title"] == "Les fractions"
    assert "on les met au même dénominateur" in result["content"]
    assert "tracking" not in result["content"]
    assert result["truncated"] is False


async def test_content_capped_at_8000_characters(make_services, site):
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{site.port}")
    result = await _browse(services, f"{site.base_url}/long")
    assert result["success"] is True
    assert result["truncated"] is True
    assert len(result["content"]) <= MAX_CONTENT + len("\n[...tronqué]")
    assert result["content"].endswith("[...tronqué]")
    assert "Paragraphe 0" in result["content"]


async def test_body_size_cap_stops_reading(make_services, site):
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{site.port}",
                                   BROWSE_MAX_BYTES="100000")
    fetched = await fetch(f"{site.base_url}/huge", services.settings)
    assert fetched.truncated is True and len(fetched.body) == 100000
    result = await _browse(services, f"{site.base_url}/huge")
    assert result["success"] is True and len(result["content"]) <= MAX_CONTENT + 20


async def test_slow_site_gives_an_error_result(make_services, site):
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{site.port}",
                                   BROWSE_TIMEOUT_S="0.5")
    result = await _browse(services, f"{site.base_url}/slow")
    assert result["success"] is False and "too long" in result["error"]


async def test_dripping_site_is_cut_by_the_total_time_cap(make_services, site):
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{site.port}",
                                   BROWSE_TIMEOUT_S="0.5")
    # Each byte comes well within the read timeout; only the total cap can stop this one.
    result = await _browse(services, f"{site.base_url}/drip")
    assert result["success"] is False and "too long" in result["error"]


async def test_down_site_and_non_text_give_error_results(make_services, site):
    dead = free_port()
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{site.port},127.0.0.1:{dead}")
    down = await _browse(services, f"http://127.0.0.1:{dead}/")
    assert down["success"] is False and "could not connect" in down["error"]
    pdf = await _browse(services, f"{site.base_url}/doc.pdf")
    assert pdf["success"] is False and "application/pdf" in pdf["error"]


PRIVATE_URLS = [
    "http://127.0.0.1/",
    "http://127.0.0.1:8080/admin",
    "http://10.0.0.1/",
    "http://169.254.169.254/latest/meta-data/iam/",
    "http://localhost/",
    "http://LOCALHOST.:9000/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[fd00:ec2::254]/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0.0.0.0/",
    "http://100.64.0.1/",
    "http://192.168.1.1/",
    "http://224.0.0.1/",
]
OTHER_SHAPES = ["ftp://example.com/x", "file:///etc/passwd", "gopher://x/", "http://user:pw@example.com/",
                "javascript:alert(1)", "http:///nohost", "http://a..b/", "http://[::1"]


async def test_refuses_private_addresses_and_other_shapes(make_services):
    services = await make_services()
    for url in PRIVATE_URLS + OTHER_SHAPES:
        result = await _browse(services, url)
        assert result["success"] is False and result.get("refused") is True, (url, result)
        with pytest.raises(FetchRefused):
            await fetch(url, services.settings)


async def test_refuses_a_hostname_resolving_to_loopback_of_a_real_server(make_services, site):
    # The server is there and answers on 127.0.0.1: only the address check stands in the way.
    services = await make_services()
    for url in (f"http://localhost:{site.port}/article", f"{site.base_url}/article"):
        result = await _browse(services, url)
        assert result["success"] is False and result.get("refused") is True
    assert site.requests == []


async def test_refuses_redirects_into_the_private_network(make_services, site, http_stub):
    other = await http_stub(_site)  # a second loopback server that is NOT allowed
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{site.port}")
    targets = [
        f"http://127.0.0.1:{other.port}/article",
        f"http://localhost:{other.port}/article",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::1]:80/",
        "file:///etc/passwd",
    ]
    for target in targets:
        result = await _browse(services, f"{site.base_url}/redirect?to={target}")
        assert result["success"] is False and result.get("refused") is True, (target, result)
    assert other.requests == []
    # Control: the same redirect to an allowed address is followed.
    ok = await _browse(services, f"{site.base_url}/redirect?to={site.base_url}/article")
    assert ok["success"] is True and ok["url"] == f"{site.base_url}/article"


async def test_connects_to_the_checked_address_and_keeps_the_host_name(make_services, site):
    services = await make_services(BROWSE_ALLOW_PRIVATE_FOR_TESTS="true")
    fetched = await fetch(f"http://localhost:{site.port}/host", services.settings)
    assert fetched.body == f"host=localhost:{site.port}".encode()


async def test_allow_private_setting_is_what_lets_tests_through(make_services, site):
    off = await make_services()
    on = await make_services(BROWSE_ALLOW_PRIVATE_FOR_TESTS="true")
    assert (await _browse(off, f"{site.base_url}/article"))["success"] is False
    assert (await _browse(on, f"{site.base_url}/article"))["success"] is True


def _jina(app: web.Application, _requests: list) -> None:
    async def read(request: web.Request) -> web.Response:
        target = request.raw_path[1:]
        if request.headers.get("Authorization") != "Bearer jina_test":
            return web.json_response({"data": None, "code": 401, "name": "AuthenticationRequiredError",
                                      "status": 40103, "message": "bad key",
                                      "readableMessage": "AuthenticationRequiredError: bad key"}, status=401)
        if "slow" in target:
            await asyncio.sleep(5)
        if "broken" in target:
            return web.json_response({"data": None, "code": 422, "name": "AssertionFailureError",
                                      "status": 42206, "message": "Failed to goto " + target,
                                      "readableMessage": "AssertionFailureError: Failed to goto"}, status=422)
        content = "Titre\n\n" + "Contenu de la page lue par Jina. " * (600 if "long" in target else 3)
        return web.json_response({"code": 200, "status": 20000, "data": {
            "title": "Page via Jina", "description": "", "url": target, "content": content,
            "usage": {"tokens": 42}}})

    app.router.add_get("/{tail:.*}", read)


def jina_env(jina, closed_port: int) -> dict[str, str]:
    """Jina's stand-in, and a host the Jina path may name: `localhost` on a closed port, allowed as
    test addresses, so the name resolves with no DNS and the direct fallback is refused at once."""
    allowed = f"127.0.0.1:{closed_port},[::1]:{closed_port}"
    return {"JINA_API_KEY": "jina_test", "JINA_BASE_URL": jina.base_url,
            "BROWSE_ALLOW_ADDRS_FOR_TESTS": allowed}


async def test_jina_reader(make_services, http_stub):
    jina = await http_stub(_jina)
    port = free_port()
    services = await make_services(**jina_env(jina, port))
    result = await _browse(services, f"https://localhost:{port}/cours?id=3")
    assert result["success"] is True, result
    assert result["title"] == "Page via Jina" and "lue par Jina" in result["content"]
    assert jina.requests[0]["path_qs"] == f"/https://localhost:{port}/cours?id=3"
    assert jina.requests[0]["headers"]["Accept"] == "application/json"
    long = await _browse(services, f"https://localhost:{port}/long")
    assert long["truncated"] is True and len(long["content"]) <= MAX_CONTENT + 20


async def test_jina_never_asked_for_private_addresses(make_services, http_stub):
    jina = await http_stub(_jina)
    services = await make_services(JINA_API_KEY="jina_test", JINA_BASE_URL=jina.base_url)
    for url in ("http://127.0.0.1/", "http://localhost:8000/", "http://169.254.169.254/", "file:///etc/passwd"):
        result = await _browse(services, url)
        assert result["success"] is False and result.get("refused") is True
    assert jina.requests == []


async def test_jina_errors_and_slowness_give_error_results(make_services, http_stub):
    jina = await http_stub(_jina)
    port = free_port()
    services = await make_services(**jina_env(jina, port), BROWSE_TIMEOUT_S="0.5")
    # Jina fails; the direct fallback finds nothing listening there either.
    broken = await _browse(services, f"https://localhost:{port}/broken")
    assert broken["success"] is False and "422" in broken["error"]
    slow = await _browse(services, f"https://localhost:{port}/slow")
    assert slow["success"] is False
    bad_key = await make_services(**{**jina_env(jina, port), "JINA_API_KEY": "wrong"})
    denied = await _browse(bad_key, f"https://localhost:{port}/page")
    assert denied["success"] is False and "401" in denied["error"]
    unresolvable = await _browse(services, "https://example.invalid/")
    assert unresolvable["success"] is False and "could not be resolved" in unresolvable["error"]
    assert not [r for r in jina.requests if "example.invalid" in r["path_qs"]]


# --- compressed bodies: inflated within the cap ---------------------------------------------------

BOMB_BYTES = 16 * 1024 * 1024  # what the small compressed bodies below expand to
CAP = 200_000


def _deflate_raw(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


BOMBS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda d: gzip.compress(d, 9),
    "deflate": lambda d: zlib.compress(d, 9),
    "deflate-raw": _deflate_raw,
    "br": lambda d: brotli.compress(d, quality=5),
}


@functools.cache
def bombs() -> dict[str, bytes]:
    return {name: pack(b"a" * BOMB_BYTES) for name, pack in BOMBS.items()}


def _compressed(app: web.Application, _requests: list) -> None:
    made = bombs()
    article = ARTICLE.encode()

    async def bomb(r: web.Request) -> web.Response:
        name = r.match_info["name"]
        encoding = "deflate" if name == "deflate-raw" else name
        headers = {"Content-Type": "text/plain", "Content-Encoding": encoding}
        return web.Response(body=made[name], headers=headers)

    async def page(r: web.Request) -> web.Response:
        body = gzip.compress(article[:400]) + gzip.compress(article[400:])  # two gzip members
        return web.Response(body=body, headers={"Content-Type": "text/html; charset=utf-8",
                                                "Content-Encoding": "gzip"})

    async def odd(r: web.Request) -> web.Response:
        encoding = r.query["encoding"]
        body = b"\x1f\x8b\x08\x00garbage" if encoding == "gzip" else gzip.compress(gzip.compress(b"x"))
        return web.Response(body=body, headers={"Content-Type": "text/plain", "Content-Encoding": encoding})

    app.router.add_get("/bomb/{name}", bomb)
    app.router.add_get("/page", page)
    app.router.add_get("/odd", odd)


@pytest.fixture
async def packed(http_stub):
    return await http_stub(_compressed)


async def test_compression_bombs_stop_at_the_cap(make_services, packed):
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{packed.port}",
                                   BROWSE_MAX_BYTES=str(CAP))
    for name in BOMBS:
        assert len(bombs()[name]) < CAP  # small on the wire, 16 MB once inflated
        fetched = await fetch(f"{packed.base_url}/bomb/{name}", services.settings)
        assert fetched.truncated is True, name
        assert fetched.body == b"a" * CAP, name
    assert "br" in packed.requests[0]["headers"]["Accept-Encoding"]
    result = await _browse(services, f"{packed.base_url}/bomb/gzip")
    assert result["success"] is True and result["truncated"] is True
    assert len(result["content"]) <= MAX_CONTENT + 20


def test_each_inflate_step_is_bounded() -> None:
    """One network chunk holding a whole bomb still yields no more than asked for."""
    for name, body in bombs().items():
        inflater = _Inflater("deflate" if name == "deflate-raw" else name)
        assert len(inflater.feed(body, 1000)) <= 64 * 1024, name  # brotli may round up to a block


async def test_compressed_page_reads_whole(make_services, packed):
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{packed.port}")
    result = await _browse(services, f"{packed.base_url}/page")
    assert result["success"] is True, result
    assert result["title"] == "Les fractions" and "cinq sixièmes" in result["content"]
    fetched = await fetch(f"{packed.base_url}/page", services.settings)
    assert fetched.body == ARTICLE.encode() and fetched.truncated is False


async def test_odd_encodings_give_clear_errors(make_services, packed):
    services = await make_services(BROWSE_ALLOW_ADDRS_FOR_TESTS=f"127.0.0.1:{packed.port}")
    cases = {"zstd": "unsupported encoding", "compress": "unsupported encoding",
             "gzip, gzip": "encoded 2 times", "gzip": "damaged compressed body",
             "br": "damaged compressed body"}
    for encoding, message in cases.items():
        result = await _browse(services, f"{packed.base_url}/odd?encoding={encoding}")
        assert result["success"] is False and message in result["error"], (encoding, result)


# --- the Jina path checks hosts as the direct path does -------------------------------------------

SPELLED_PRIVATE = [
    "http://0x7f.1/", "http://2130706433/", "http://0177.0.0.1/", "http://0x7f000001/", "http://127.1/",
    "http://0/", "http://017700000001/", "http://0xa9.0xfe.0xa9.0xfe/latest/meta-data/", "http://3232235777/",
    "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[::ffff:a9fe:a9fe]/",
    "http://[64:ff9b::a00:1]/", "http://[::127.0.0.1]/", "http://[2002:7f00:1::]/",
    "http://localhost./", "http://LOCALHOST:8080/", "http://ip6-localhost/",
]


async def test_jina_path_refuses_private_addresses_however_spelled(make_services, http_stub):
    jina = await http_stub(_jina)
    services = await make_services(JINA_API_KEY="jina_test", JINA_BASE_URL=jina.base_url)
    own_name = socket.gethostname()  # a plain name that resolves (hosts file) to a private address
    resolved = {str(info[4][0]) for info in socket.getaddrinfo(own_name, 80, type=socket.SOCK_STREAM)}
    assert resolved and not any(is_public_address(ipaddress.ip_address(a.split("%")[0])) for a in resolved)
    for url in [*SPELLED_PRIVATE, f"http://{own_name}/", f"https://{own_name}:8443/x"]:
        result = await _browse(services, url)
        assert result["success"] is False, (url, result)
        assert result.get("refused") is True or "could not be resolved" in result["error"], (url, result)
        with pytest.raises((FetchRefused, FetchFailed)):
            await fetch(url, services.settings)
    assert jina.requests == []
