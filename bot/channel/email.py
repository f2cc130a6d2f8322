"""Outgoing e-mail: building a message (HTML with a plain-text alternative, attachments) and SMTP.

Addresses and subjects are checked here so that no caller can smuggle a header (CR/LF) or a second
recipient into a message. Sending goes through aiosmtplib with STARTTLS, implicit TLS or plain.

A message carries no remote resource: the HTML keeps a short list of text tags and no style,
image, font or stylesheet, and every link is shown with its full address, « texte
(https://site/page) », the address alone being what can be clicked. A mail client that loads a
remote image, or a user who clicks a link whose text hides its address, would tell a third party
(an injected page) what the model put in the address.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from email.utils import format_datetime, formataddr, make_msgid, parseaddr
from html import escape
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

import aiosmtplib
import nh3
from markupsafe import Markup
from sqlalchemy import or_, select

from bot.config import Settings
from bot.render import render
from bot.storage.models import UserFile

if TYPE_CHECKING:
    from bot.services import Services

# Deliberately strict: one plain mailbox, no display name, no comments, no list.
_EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$")
SUBJECT_MAX = 200


class EmailError(Exception):
    """The e-mail could not be built or sent; the message says why."""


@dataclass(frozen=True)
class Attachment:
    name: str
    mime: str
    data: bytes
    file_id: int | None = None  # the library file it was read from
    cohort_id: int | None = None  # a class's file


def normalize_address(raw: str) -> str | None:
    """A single valid address (domain lower-cased), or None."""
    if not isinstance(raw, str):
        return None
    value = raw.strip()
    if len(value) > 254 or not _EMAIL.match(value) or ".." in value:
        return None
    local, domain = value.rsplit("@", 1)
    return f"{local}@{domain.lower()}"


def clean_subject(subject: str) -> str:
    """One line: line breaks (a header injection attempt or not) become spaces."""
    text = re.sub(r"[\r\n\t\x00-\x1f\x7f]+", " ", subject or "").strip()
    return re.sub(r"\s{2,}", " ", text)[:SUBJECT_MAX]


class _TextMaker(HTMLParser):
    _BLOCK = {"p", "div", "br", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "table",
              "section", "article", "blockquote", "pre", "hr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.links: list[tuple[str, int]] = []  # (href, where its text starts in `parts`)
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head"):
            self._skip += 1
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag in self._BLOCK:
            self.parts.append("\n")
        elif tag == "a":
            self.links.append((dict(attrs).get("href") or "", len(self.parts)))
        elif tag == "td":
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head"):
            self._skip = max(0, self._skip - 1)
        elif tag in self._BLOCK or tag == "li":
            self.parts.append("\n")
        elif tag == "a" and self.links:
            href, start = self.links.pop()
            shown = href.removeprefix("mailto:")
            if href.startswith(_LINK_SCHEMES) and "".join(self.parts[start:]).strip() != shown:
                self.parts.append(f" ({shown})")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    """A readable plain-text version of an HTML body (the alternative part of the mail)."""
    maker = _TextMaker()
    maker.feed(html or "")
    maker.close()
    lines = [line.strip() for line in "".join(maker.parts).splitlines()]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def looks_like_html(body: str) -> bool:
    return bool(re.search(r"<(p|div|br|h[1-6]|ul|ol|li|table|b|strong|em|i|a|span|html|body)\b", body, re.I))


def text_to_html(text: str) -> str:
    """Plain text or Markdown (what models usually write) as HTML; raw HTML in it stays text."""
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable("table")
    html: str = renderer.render(text or "")
    return html


# Text structure only: nothing a mail client would fetch (img, link, style, fonts, media, frames).
_MAIL_TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "b", "em", "i", "u", "s",
              "del", "sub", "sup", "code", "pre", "blockquote", "ul", "ol", "li", "table", "thead",
              "tbody", "tr", "th", "td", "div", "span"}
_MAIL_ATTRIBUTES = {"ol": {"start"}, "td": {"colspan", "rowspan"}, "th": {"colspan", "rowspan"}}
_LINK_SCHEMES = ("http://", "https://", "mailto:")


class _LinksAsText(HTMLParser):
    """Re-writes cleaned HTML with each `<a href>` as its text and « (address) », only the address
    being a link (an address with no text is shown once)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._links: list[tuple[str, int]] = []  # (href, where its text starts in `out`)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._links.append(((dict(attrs).get("href") or "").strip(), len(self.out)))
            return
        kept = "".join(f' {k}="{escape(v or "")}"' for k, v in attrs)
        self.out.append(f"<{tag}{kept}>")

    def handle_endtag(self, tag: str) -> None:
        if tag != "a":
            self.out.append(f"</{tag}>")
        elif self._links:
            href, start = self._links.pop()
            shown = href.removeprefix("mailto:")
            text = re.sub(r"<[^>]*>", "", "".join(self.out[start:])).strip()
            if not href.lower().startswith(_LINK_SCHEMES):
                return  # no address (refused scheme, relative link): the text alone
            link = f'<a href="{escape(href)}">{escape(shown)}</a>'
            if text in (escape(shown), escape(href)):
                self.out[start:] = [link]
            else:
                self.out.append(f" ({link})")

    def handle_data(self, data: str) -> None:
        self.out.append(escape(data, quote=False))


def safe_html(html: str) -> str:
    """The model's HTML as text structure: no scripts, handlers, styles or remote resources, and
    links written out as « text (address) » (see the module's docstring)."""
    cleaned = nh3.clean(html or "", tags=_MAIL_TAGS | {"a"}, attributes={**_MAIL_ATTRIBUTES, "a": {"href"}},
                        clean_content_tags={"script", "style", "title", "head"}, link_rel=None,
                        url_schemes={"http", "https", "mailto"}, generic_attribute_prefixes=set())
    rewriter = _LinksAsText()
    rewriter.feed(cleaned)
    rewriter.close()
    # Cleaned once more: what the rewriter put together is held to the same rules.
    return nh3.clean("".join(rewriter.out), tags=_MAIL_TAGS | {"a"}, url_schemes={"http", "https", "mailto"},
                     attributes={**_MAIL_ATTRIBUTES, "a": {"href"}}, link_rel=None)


def wrap_html(body_html: str, title: str) -> str:
    """The HTML part around a body already cleaned by safe_html (bot/templates/email/message.html)."""
    return render("email/message.html", title=title, body=Markup(body_html))


def build_message(
    *,
    from_addr: str | None,
    to: list[str],
    subject: str,
    body: str,
    text: str | None = None,
    attachments: list[Attachment] | None = None,
    cc: list[str] | None = None,
    extra_headers: dict[str, str] | None = None,
    allow_no_recipient: bool = False,
    html: bool = True,
) -> EmailMessage:
    """A multipart message: text/plain + text/html alternative, then attachments.

    `body` may be HTML or plain text; each address must be a single valid mailbox. With `html`
    False, `body` is plain text whatever it looks like and the message has no HTML part: for text
    that quotes someone else's words (a safety alert), which no markup may turn into a link.
    """
    recipients = []
    for raw in [*to, *(cc or [])]:
        address = normalize_address(raw)
        if address is None:
            raise EmailError(f"invalid e-mail address: {raw!r}")
        recipients.append(address)
    if not recipients and not allow_no_recipient:
        raise EmailError("no recipient")
    sender = format_sender(from_addr) if from_addr else None
    markup = None
    if not html:
        plain = (text or "").strip() or body.strip()
    elif looks_like_html(body):
        markup = safe_html(body)
        plain = (text or "").strip() or html_to_text(markup)
    else:
        markup = safe_html(text_to_html(body))
        plain = (text or "").strip() or body.strip()
    subject_line = clean_subject(subject)
    msg = EmailMessage(policy=SMTP_POLICY)
    if sender:
        msg["From"] = sender
    if to:
        msg["To"] = ", ".join(recipients[: len(to)])
    if cc:
        msg["Cc"] = ", ".join(recipients[len(to):])
    msg["Subject"] = subject_line
    msg["Date"] = format_datetime(datetime.now(UTC))
    domain = parseaddr(sender or "")[1].rsplit("@", 1)[-1] or "deblo.local"
    msg["Message-ID"] = make_msgid(idstring=secrets.token_hex(4), domain=domain)
    for name, value in (extra_headers or {}).items():
        msg[name] = clean_subject(value)
    msg.set_content(plain or " ", subtype="plain", charset="utf-8")
    if markup is not None:
        msg.add_alternative(wrap_html(markup, subject_line), subtype="html", charset="utf-8")
    for att in attachments or []:
        maintype, _, subtype = (att.mime or "application/octet-stream").partition("/")
        msg.add_attachment(att.data, maintype=maintype or "application",
                           subtype=subtype or "octet-stream", filename=_safe_filename(att.name))
    return msg


def _safe_filename(name: str) -> str:
    cleaned = re.sub(r"[\r\n\"\\/\x00-\x1f]+", "_", name or "fichier").strip() or "fichier"
    return cleaned[:120]


def format_sender(from_addr: str) -> str:
    """SMTP_FROM as a From header: `bot@x` or `Deblo <bot@x>`."""
    name, address = parseaddr(from_addr or "")
    checked = normalize_address(address)
    if not checked:
        raise EmailError(f"invalid sender address: {from_addr!r}")
    return formataddr((clean_subject(name), checked)) if name else checked


def sender_address(settings: Settings) -> str:
    """SMTP_FROM, or SMTP_USER when it is an address."""
    return settings.smtp_from or settings.smtp_user


def smtp_configured(settings: Settings) -> str | None:
    """Why e-mail cannot be sent with these settings (None when it can)."""
    if not settings.smtp_host:
        return "SMTP_HOST is not set"
    if not normalize_address(parseaddr(sender_address(settings))[1]):
        return "SMTP_FROM is not set to a valid address"
    return None


async def send_message(settings: Settings, msg: EmailMessage) -> None:
    """Sends through the configured SMTP server; raises EmailError on any failure."""
    reason = smtp_configured(settings)
    if reason:
        raise EmailError(reason)
    security = settings.smtp_security
    try:
        # aiosmtplib's timeout is per command: this bounds the whole conversation with the server.
        async with asyncio.timeout(settings.smtp_timeout_s * 2):
            await aiosmtplib.send(
                msg,
                hostname=settings.smtp_host,
                port=settings.smtp_port,
                username=settings.smtp_user or None,
                password=settings.smtp_password or None,
                use_tls=security == "tls",
                start_tls=security == "starttls",
                timeout=settings.smtp_timeout_s,
                cert_bundle=settings.smtp_ca_file or None,
            )
    except aiosmtplib.SMTPRecipientsRefused as exc:
        raise EmailError(f"the mail server refused the recipient: {exc}") from None
    except aiosmtplib.SMTPAuthenticationError:
        raise EmailError("the mail server refused our login") from None
    except (aiosmtplib.SMTPTimeoutError, aiosmtplib.SMTPConnectTimeoutError, TimeoutError):
        raise EmailError("the mail server did not answer in time") from None
    except aiosmtplib.SMTPConnectError as exc:
        raise EmailError(f"the mail server cannot be reached: {exc}") from None
    except aiosmtplib.SMTPException as exc:
        raise EmailError(f"the mail server failed: {type(exc).__name__}: {exc}") from None
    except ssl.SSLError as exc:
        raise EmailError(f"the mail server's TLS certificate could not be verified: {exc}") from None
    except OSError as exc:
        raise EmailError(f"the mail server cannot be reached: {exc.strerror or exc}") from None


async def load_attachments(services: Services, user_id: int, file_ids: list[Any],
                           cohorts: Sequence[int] = ()) -> list[Attachment]:
    """The user's own files by id, and those of the classes `cohorts` (the ones the caller says the
    student is in now), as attachments; refuses ids that are neither or too large."""
    ids: list[int] = []
    for raw in file_ids or []:
        try:
            ids.append(int(raw))
        except (TypeError, ValueError):
            raise EmailError(f"invalid file id: {raw!r}") from None
    if not ids:
        return []
    if len(ids) > 10:
        raise EmailError("at most 10 attachments per e-mail")
    async with services.sessions() as db:
        rows = (await db.scalars(
            select(UserFile).where(or_(UserFile.user_id == user_id, UserFile.cohort_id.in_(list(cohorts))),
                                   UserFile.id.in_(ids))
        )).all()
    found = {row.id: row for row in rows}
    missing = [i for i in ids if i not in found]
    if missing:
        raise EmailError(f"no file with id {missing[0]} in this user's library")
    total = sum(found[i].size for i in ids)
    if total > services.settings.email_max_attachment_bytes:
        raise EmailError(
            f"attachments too large ({total // 1024} KB, limit "
            f"{services.settings.email_max_attachment_bytes // 1024} KB)"
        )
    attachments = []
    for i in ids:
        row = found[i]
        try:
            data = await services.files.get(row.storage_key)
        except (OSError, ValueError):
            raise EmailError(f"the file {row.name!r} could not be read") from None
        attachments.append(Attachment(name=row.name, mime=row.mime, data=data, file_id=row.id,
                                      cohort_id=row.cohort_id))
    return attachments
