"""report_bug: the user's description of a problem, with the conversation id, to the team.

It goes by e-mail to BUG_REPORT_EMAIL and by WhatsApp to BUG_REPORT_WHATSAPP (whichever are set);
the user is thanked right away. Reports per user are capped per day so that a loop cannot flood the
team's inbox.
"""

from __future__ import annotations

from typing import Any

from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.channel.email import EmailError, build_message, send_message, sender_address, smtp_configured
from bot.channel.outbound import send_to_number
from bot.config import Settings
from bot.render import render
from bot.storage.models import User
from bot.texts import fr_en
from tools.modes import EVERY_PROFILE

NAME = "report_bug"
MAX_DESCRIPTION = 2000
MAX_REPORTS_PER_DAY = 5


def unavailable(settings: Settings) -> str | None:
    email_ok = bool(settings.bug_report_email) and smtp_configured(settings) is None
    whatsapp_ok = bool(settings.bug_report_whatsapp) and bool(settings.twilio_whatsapp_from)
    if email_ok or whatsapp_ok:
        return None
    return "neither BUG_REPORT_EMAIL (with SMTP) nor BUG_REPORT_WHATSAPP is configured"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    settings = ctx.services.settings
    description = str(args.get("description") or "").strip()
    if not description:
        return tool_error("description is required")
    description = description[:MAX_DESCRIPTION]
    count = await ctx.services.state.incr(f"bug-reports:{ctx.user_id}", 86400)
    if count > MAX_REPORTS_PER_DAY:
        return tool_error("this user already sent several reports today; the team has them")
    async with ctx.services.sessions() as db:
        user = await db.get(User, ctx.user_id)
    name = user.display_name if user is not None else None
    who = f"user {ctx.user_id}" + (f" ({name})" if name else "")
    summary = (f"Bug report — conversation {ctx.conversation_id}, {who}, mode {ctx.mode}, "
               f"channel {ctx.channel}")
    delivered: list[str] = []
    failures: list[str] = []
    if settings.bug_report_email and smtp_configured(settings) is None:
        try:
            message = build_message(
                from_addr=sender_address(settings), to=[settings.bug_report_email],
                subject=f"[Deblo bug] conversation {ctx.conversation_id}",
                body=render("email/bug_report.txt", summary=summary, description=description),
            )
            await send_message(settings, message)
            delivered.append("email")
        except EmailError as exc:
            failures.append(f"email: {exc}")
    if settings.bug_report_whatsapp and settings.twilio_whatsapp_from:
        try:
            sent = await send_to_number(ctx.services, settings.bug_report_whatsapp,
                                        text=f"🐞 {summary}\n\n{description}", channel="whatsapp",
                                        kind="bug_report")
            if sent.ok:
                delivered.append(sent.channel or "whatsapp")
            else:
                failures.append(f"whatsapp: {sent.skipped or sent.error}")
        except Exception as exc:  # the messaging provider is down: still try to report the rest
            failures.append(f"whatsapp: {type(exc).__name__}")
    if not delivered:
        return tool_error("the report could not be delivered: " + "; ".join(failures or ["not configured"]))
    await ctx.send(text=fr_en(ctx.language, "Merci d'avoir signalé ce problème ! L'équipe l'a bien reçu.",
                              "Thank you for reporting this problem! The team has received it."))
    return {
        "success": True,
        "delivered_by": delivered,
        "conversation_id": ctx.conversation_id,
        "user_thanked": True,
        "note": "The user has already been thanked in a message; do not repeat it at length.",
    }


TOOL = Tool(
    name=NAME,
    description="A problem with Deblo, for the team.",
    parameters={
        "type": "object",
        "properties": {"description": {"type": "string"}},
        "required": ["description"],
    },
    modes=EVERY_PROFILE,
    step=StepText("🐞", "Signalement du problème", "Reporting the problem"),
    run=run,
    side_effects=True,
    unavailable=unavailable,
)
