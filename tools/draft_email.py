"""draft_email (pro, parent): an e-mail to anyone, written for the user to review and send themselves.

The bot never sends a draft. It is saved in the user's library as an `.eml` file (marked
`X-Unsent: 1`, so mail clients open it as an editable draft) and shown to the user: the text as a
message, with a signed link to the file to open and forward.
"""

from __future__ import annotations

from email.message import EmailMessage
from typing import Any

from bot import library
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.channel.email import EmailError, build_message, clean_subject, load_attachments, normalize_address
from bot.channel.links import file_url
from bot.storage.models import User
from bot.texts import fr_en
from tools.modes import PRO_AND_PARENT

NAME = "draft_email"
PREVIEW_MAX = 1200


def _addresses(value: Any, field: str) -> list[str]:
    if value in (None, "", []):
        return []
    items = value if isinstance(value, list) else str(value).replace(";", ",").split(",")
    out = []
    for item in items:
        address = normalize_address(str(item))
        if address is None:
            raise EmailError(f"invalid address in {field}: {str(item)[:100]!r}")
        out.append(address)
    if len(out) > 20:
        raise EmailError(f"too many addresses in {field} (at most 20)")
    return out


def _plain(message: EmailMessage) -> str:
    """The text of the draft's plain part."""
    body = message.get_body(("plain",))
    assert body is not None  # build_message always writes a text/plain part
    return body.get_content()


def _filename(subject: str) -> str:
    stem = "".join(c if c.isalnum() else "_" for c in subject)[:40].strip("_") or "brouillon"
    return f"brouillon_{stem}.eml"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    subject = clean_subject(str(args.get("subject") or ""))
    body = str(args.get("body") or "").strip()
    if not subject or not body:
        return tool_error("subject and body are required")
    try:
        to = _addresses(args.get("to"), "to")
        cc = _addresses(args.get("cc"), "cc")
        attachments = await load_attachments(ctx.services, ctx.user_id, args.get("file_ids") or [])
        async with ctx.services.sessions() as db:
            user = await db.get(User, ctx.user_id)
            own = user.email if user is not None and user.email_verified else None
            message = build_message(
                from_addr=own, to=to, cc=cc, subject=subject, body=body, attachments=attachments,
                extra_headers={"X-Unsent": "1"}, allow_no_recipient=True,
            )
            saved = await library.add_file(
                ctx.services, db, user_id=ctx.user_id, name=_filename(subject), mime="message/rfc822",
                data=bytes(message), origin="generated",
                text_content=f"{subject}\n\n{_plain(message)}",
            )
            await db.commit()
    except EmailError as exc:
        return tool_error(f"the draft was not created: {exc}")
    plain = _plain(message).strip()
    if len(plain) > PREVIEW_MAX:
        plain = plain[:PREVIEW_MAX] + "…"
    header_fr = [f"✉️ Brouillon (non envoyé)\nÀ : {', '.join(to) or '—'}"]
    header_en = [f"✉️ Draft (not sent)\nTo: {', '.join(to) or '—'}"]
    if cc:
        header_fr.append(f"Cc : {', '.join(cc)}")
        header_en.append(f"Cc: {', '.join(cc)}")
    header_fr.append(f"Objet : {subject}")
    header_en.append(f"Subject: {subject}")
    header = fr_en(ctx.language, header_fr, header_en)
    # A link rather than a WhatsApp document: WhatsApp does not accept message/rfc822 files. The
    # user may open it days later: it lasts FILE_LINK_SMS_TTL_S.
    link = file_url(ctx.services.settings, saved, read_later=True)
    hint = fr_en(ctx.language,
                 f"Pour le modifier et l'envoyer depuis une messagerie, ouvrir ce fichier .eml : {link}",
                 f"To edit and send it from your mailbox, open this .eml file: {link}")
    shown = await ctx.send(text="\n".join(header) + f"\n\n{plain}\n\n{hint}")
    out: dict[str, Any] = {
        "success": True,
        "file_id": saved.id,
        "file_name": saved.name,
        "shown_to_user": True,
        "link": link,
        "sent": False,
        "note": "The draft was shown to the user with a link to its .eml file; it was NOT sent. "
                "Tell them to review it and send it themselves.",
    }
    # The outbound result, when the context gives it: the draft is "shown" only if it went out.
    if shown is not None and not getattr(shown, "ok", True):
        out["shown_to_user"] = False
        out["delivery"] = shown.for_model()
        out["note"] = ("The draft is saved in the user's library but could not be shown to them now "
                       "(see delivery). It was NOT sent to anyone. Give them the text and link in your "
                       "answer.")
    return out


TOOL = Tool(
    name=NAME,
    description="Draft e-mail to anyone, NOT sent: an .eml file.",
    parameters={
        "type": "object",
        "properties": {
            "to": {"type": "string"},  # one address or several, comma-separated (a list is read too)
            "cc": {"type": "string"},
            "subject": {"type": "string", "maxLength": 200},
            "body": {"type": "string"},
            "file_ids": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["subject", "body"],
    },
    modes=PRO_AND_PARENT,
    step=StepText("📧", "Rédaction du brouillon d'e-mail", "Drafting the e-mail"),
    run=run,
    side_effects=True,
)
