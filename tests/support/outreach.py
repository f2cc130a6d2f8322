"""Fixtures and helpers for the outreach tools: a real SQLite database, a real SMTP server (aiosmtpd)
and local HTTP servers that speak Tavily's, SearXNG's and Jina Reader's wire formats.

The fixtures are exposed by tests/outreach/conftest.py, and `http_stub` by tests/agent/conftest.py too.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from bot.agent.toolspec import ToolContext
from bot.config import load_settings
from bot.services import Services, build_services
from bot.storage.models import User, UserFile
from tests.support.harness import Database, fresh_database
from tests.support.ports import free_port


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    tls: bool = False


class _Inbox:
    def __init__(self) -> None:
        self.received: list[Received] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        msg = message_from_bytes(envelope.original_content, policy=policy.default)
        self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), msg,
                                      tls=session.ssl is not None
                                      or server.transport.get_extra_info("ssl_object") is not None))
        return "250 Message accepted"


@dataclass
class SMTPServer:
    host: str
    port: int
    inbox: _Inbox
    controller: Controller

    @property
    def received(self) -> list[Received]:
        return self.inbox.received

    def env(self, **extra: str) -> dict[str, str]:
        return {"SMTP_HOST": self.host, "SMTP_PORT": str(self.port), "SMTP_SECURITY": "none",
                "SMTP_FROM": "Deblo <bot@deblo.test>", **extra}


def _authenticator(user: str, password: str) -> Callable[..., AuthResult]:
    def check(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        ok = (isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user
              and auth_data.password.decode() == password)
        return AuthResult(success=ok, handled=False)

    return check


@pytest.fixture
def smtp_server() -> Any:
    started: list[Controller] = []

    def start(*, auth: tuple[str, str] | None = None, starttls: ssl.SSLContext | None = None,
              implicit_tls: ssl.SSLContext | None = None) -> SMTPServer:
        inbox = _Inbox()
        port = free_port()
        kwargs: dict[str, Any] = {}
        if auth:
            kwargs.update(authenticator=_authenticator(*auth), auth_require_tls=False, auth_required=True)
        if starttls:
            kwargs.update(tls_context=starttls, require_starttls=True)
        if implicit_tls:
            kwargs.update(ssl_context=implicit_tls)
        controller = Controller(inbox, hostname="127.0.0.1", port=port, **kwargs)
        controller.start()
        started.append(controller)
        return SMTPServer("127.0.0.1", port, inbox, controller)

    yield start
    for controller in started:
        controller.stop()


BASE_ENV = {
    "TWILIO_ACCOUNT_SID": "ACtest",
    "TWILIO_AUTH_TOKEN": "token",
    "LLM_API_KEY": "k",
    "AGENT_TOOL_TIMEOUT_S": "10",
}


@pytest.fixture
async def make_services(backend_name: str, migrated_template: str, test_database: Database,
                        tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Services]]]:
    """Services on the test's backend, each with a data dir of its own and an empty database: the
    first on the test's database, each next one on a new copy of the migrated template (on PostgreSQL,
    the same database emptied: a test uses its services one after the other)."""
    built: list[Services] = []

    async def make(**env: str) -> Services:
        data_dir = tmp_path / f"data{len(built)}"
        database = test_database
        if built:
            data_dir.mkdir(parents=True)
            database = await fresh_database(backend_name, migrated_template, data_dir)
        settings = load_settings({**BASE_ENV, "DATA_DIR": str(data_dir), "DATABASE_URL": database.url, **env})
        services = await build_services(settings)
        built.append(services)
        return services

    yield make
    for services in built:
        await services.close()


async def add_user(services: Services, phone: str = "+2250700000001", **fields: Any) -> User:
    values: dict[str, Any] = {"mode": "pro", "language": "fr", "onboarding_step": None,
                              "last_channel": "whatsapp", **fields}
    async with services.sessions() as db:
        user = User(phone=phone, **values)
        db.add(user)
        await db.commit()
        return user


async def add_file(services: Services, user_id: int, name: str, mime: str, data: bytes) -> UserFile:
    from bot import library

    async with services.sessions() as db:
        row = await library.add_file(services, db, user_id=user_id, name=name, mime=mime, data=data,
                                     origin="generated", text_content="")
        await db.commit()
        return row


@dataclass
class Delivered:
    items: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, text: str = "", media: Any = None) -> None:
        self.items.append({"text": text, "media": media})


def tool_ctx(services: Services, user: User, *, mode: str = "pro", language: str = "fr",
             delivered: Delivered | None = None) -> ToolContext:
    return ToolContext(services=services, user_id=user.id, conversation_id=4242, channel="whatsapp",
                       mode=mode, language=language, tool_call_id="call_1", deliver=delivered)


@dataclass
class HTTPStub:
    """A local HTTP server; `requests` records (method, path_qs, headers, body)."""

    base_url: str
    port: int
    requests: list[dict[str, Any]]


@pytest.fixture
async def http_stub() -> AsyncIterator[Callable[..., Awaitable[HTTPStub]]]:
    runners: list[web.AppRunner] = []

    async def start(routes: Callable[[web.Application, list[dict[str, Any]]], None]) -> HTTPStub:
        requests: list[dict[str, Any]] = []

        @web.middleware
        async def record(request: web.Request, handler: Any) -> web.StreamResponse:
            requests.append({"method": request.method, "path_qs": request.raw_path,
                             "headers": dict(request.headers), "body": await request.read()})
            return await handler(request)

        app = web.Application(middlewares=[record])
        routes(app, requests)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        runners.append(runner)
        return HTTPStub(f"http://127.0.0.1:{port}", port, requests)

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """A TCP port that accepts connections and never says anything (a hung service)."""
    writers: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    yield int(server.sockets[0].getsockname()[1])
    for writer in writers:
        writer.close()
    server.close()


@dataclass(frozen=True)
class TestCA:
    ca_file: str
    server_context: ssl.SSLContext


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    """A private CA and a server certificate for 127.0.0.1 / localhost (for TLS servers in tests)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory = tmp_path_factory.mktemp("ca")
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Deblo Test CA")])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=30))
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False,
                                            encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
               .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_file = directory / "ca.pem"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_file = directory / "server.pem"
    key_file = directory / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return TestCA(str(ca_file), context)
