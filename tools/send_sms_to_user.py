"""send_sms_to_user: an SMS to the CURRENT user (urgent reminders), through the reply path.

The outbound path applies everything replies get: opt-out, delivery health, SMS transliteration
and splitting, the record of what was sent. There is no recipient argument: the user is the only
possible recipient. The result says `delivered: true` only when Twilio accepted the message;
otherwise it gives the reason and what the user can do instead.
"""

from __future__ import annotations

from typing import Any

from bot import library, school
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.channel.outbound import MODEL_ADVICE, SendResult, send_to_user
from bot.storage.models import User
from tools.modes import EVERY_PROFILE

NAME = "send_sms_to_user"
MAX_CHARS = 1000


async def send_to_current_user(ctx: ToolContext, args: dict[str, Any], channel: str) -> ToolResult:
    """Shared by the SMS and WhatsApp tools: one message to the current user on `channel`."""
    text = str(args.get("message") or args.get("text") or "").strip()
    if not text:
        return tool_error("message is required")
    if len(text) > MAX_CHARS:
        return tool_error(f"message too long ({len(text)} characters, at most {MAX_CHARS})")
    async with ctx.services.sessions() as db:
        user = await db.get(User, ctx.user_id)
        if user is None:
            return tool_error("user not found")
        media = None
        if args.get("file_id") not in (None, ""):
            classes = await school.student_classes(db, ctx.user_id)
            media = await library.get_file(db, ctx.user_id, args["file_id"], list(classes))
            if media is None:
                return tool_error(f"no file with id {args['file_id']} in this user's library")
        if user.opted_out:
            return tool_error("the user has opted out (STOP): nothing can be sent to them", opted_out=True,
                              delivered=False, reason="opted_out", what_user_can_do=MODEL_ADVICE["opted_out"])
    try:
        result = await send_to_user(ctx.services, user, text=text, media=media, channel=channel,
                                    kind=f"tool_{channel}")
    except Exception as exc:  # a bug or an outage below: nothing is known to have been sent
        return tool_error(f"the message could not be sent: {type(exc).__name__}: {str(exc)[:200]}",
                          delivered=False, reason="error",
                          what_user_can_do="Give the content here, in the conversation, instead.")
    if result.ok and media is not None and media.cohort_id is not None:
        # A class's file sent to the student: opened, as the teacher sees it.
        async with ctx.services.sessions() as db:
            await school.record_opening(db, media.id, ctx.user_id, ctx.services.clock())
            await db.commit()
    return _result(result, channel)


def _result(result: SendResult, channel: str) -> ToolResult:
    """What the model is told: delivered only when Twilio accepted it, else why and what to do."""
    used = result.channel or channel
    out: ToolResult = {"success": result.ok, **result.for_model(), "channel_used": used,
                       "requested_channel": channel}
    if not result.ok:
        out["error"] = f"the message could not be sent as asked ({result.reason})" + (
            f": {result.error[:200]}" if result.error else "")
        if result.skipped:
            out["skipped"] = result.skipped
        if result.pending_id is not None:
            out["note"] = "Tell the user the file is waiting and comes as soon as they send any message."
        return out
    if used not in (channel, "cli"):
        out["note"] = (f"Sent by {used} instead of {channel} (the WhatsApp 24-hour window is closed). "
                       "Tell the user which channel was used.")
    elif result.template:
        out["note"] = ("The WhatsApp 24-hour window is closed: it went as the approved WhatsApp template "
                       "message. Tell the user.")
    if result.file_as_link:
        out["note"] = (out.get("note", "") + " The file went as a link in the text.").strip()
    return out


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return await send_to_current_user(ctx, args, "sms")


TOOL = Tool(
    name=NAME,
    description="Short SMS to the user.",
    parameters={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    modes=EVERY_PROFILE,
    step=StepText("💬", "Envoi du SMS", "Sending the SMS"),
    run=run,
    side_effects=True,
    unavailable=lambda s: None if s.twilio_sms_from else "TWILIO_SMS_FROM is not set",
)
