"""send_email_to_user: an e-mail (HTML, with attachments from the library) to the CURRENT user only.

The only recipient is the address the user registered and confirmed with `EMAIL` / `CODE`; the
schema has no recipient field, and a `to`, `cc` or `bcc` the model adds anyway is refused unless it
is that same address. Nothing the model writes becomes a header except the one-line subject.
A file of a class the student is in now can be attached; sending it counts as opening it.
"""

from __future__ import annotations

from typing import Any

from bot import school
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.channel.email import (
    Attachment,
    EmailError,
    build_message,
    load_attachments,
    normalize_address,
    send_message,
    sender_address,
    smtp_configured,
)
from bot.storage.models import User
from tools.modes import EVERY_PROFILE

NAME = "send_email_to_user"
_RECIPIENT_KEYS = ("to", "cc", "bcc", "recipient", "recipients", "email", "address", "reply_to", "headers")


def _other_recipients(args: dict[str, Any], own: str | None) -> list[str]:
    """Every recipient-like value the model passed that is not the user's own address."""
    others: list[str] = []
    for key in _RECIPIENT_KEYS:
        value = args.get(key)
        if value in (None, "", [], {}):
            continue
        if key == "headers":
            others.append("headers")
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            address = normalize_address(item) if isinstance(item, str) else None
            if address is None or own is None or address.lower() != own.lower():
                others.append(str(item)[:100])
    return others


async def _record_openings(ctx: ToolContext, attachments: list[Attachment]) -> None:
    """A class's file sent to the student: opened, as the teacher sees it."""
    sent = [a.file_id for a in attachments if a.cohort_id is not None and a.file_id is not None]
    if not sent:
        return
    async with ctx.services.sessions() as db:
        for file_id in sent:
            await school.record_opening(db, file_id, ctx.user_id, ctx.services.clock())
        await db.commit()


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    settings = ctx.services.settings
    async with ctx.services.sessions() as db:
        user = await db.get(User, ctx.user_id)
        classes = await school.student_classes(db, ctx.user_id)  # their files can be attached
    if user is None:
        return tool_error("user not found")
    own = user.email if user.email and user.email_verified else None
    others = _other_recipients(args, own)
    if others:
        return tool_error(
            "refused: this tool only writes to the user's own confirmed address; other recipients "
            f"or headers are not allowed ({', '.join(others)}). Use draft_email for a mail to someone "
            "else (pro mode), or tell the user.",
            refused=True,
        )
    if own is None:
        return tool_error(
            "the user has no confirmed e-mail address. Tell them to send 'EMAIL their@address' "
            "and then the 6-digit code they receive, e.g. 'CODE 123456'.",
            needs_email=True,
        )
    subject = str(args.get("subject") or "").strip()
    body = str(args.get("body") or args.get("body_html") or "").strip()
    if not subject or not body:
        return tool_error("subject and body are required")
    try:
        attachments = await load_attachments(ctx.services, ctx.user_id, args.get("file_ids") or [],
                                             list(classes))
        message = build_message(
            from_addr=sender_address(settings), to=[own], subject=subject, body=body,
            text=args.get("text") if isinstance(args.get("text"), str) else None,
            attachments=attachments,
        )
        await send_message(settings, message)
    except EmailError as exc:
        # Only a message the mail server accepted is reported as sent.
        reason = "not_configured" if smtp_configured(settings) else "refused"
        return tool_error(f"the e-mail was not sent: {exc}", delivered=False, reason=reason,
                          what_user_can_do="Nothing was sent by e-mail. Give the content here, in the "
                          "conversation, or try again later.")
    await _record_openings(ctx, attachments)
    return {
        "success": True,
        "delivered": True,
        "sent_to": own,
        "subject": message["Subject"],
        "attachments": [a.name for a in attachments],
    }


TOOL = Tool(
    name=NAME,
    description="E-mail to the user's confirmed address (EMAIL sets it).",
    parameters={
        "type": "object",
        "properties": {
            "subject": {"type": "string", "maxLength": 200},
            "body": {"type": "string"},
            "file_ids": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["subject", "body"],
    },
    modes=EVERY_PROFILE,
    step=StepText("✉️", "Envoi de l'e-mail", "Sending the e-mail"),
    run=run,
    side_effects=True,
    progress_note={"fr": "J'envoie l'e-mail…", "en": "Sending the e-mail…"},
    unavailable=smtp_configured,
)
