"""send_whatsapp_to_user: a WhatsApp message (text and/or a document) to the CURRENT user.

Outside the 24-hour window the outbound path uses the approved template or falls back to SMS; a
file goes as a link (SMS, or the template's link variable) or waits for the user's next message.
The result tells the model which channel was used and whether it was delivered (`delivered`,
`reason`, `what_user_can_do`).
"""

from __future__ import annotations

from typing import Any

from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult
from tools.modes import EVERY_PROFILE
from tools.send_sms_to_user import send_to_current_user

NAME = "send_whatsapp_to_user"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return await send_to_current_user(ctx, args, "whatsapp")


TOOL = Tool(
    name=NAME,
    description="WhatsApp to the user; file_id: a file of theirs.",
    parameters={
        "type": "object",
        "properties": {"message": {"type": "string", "maxLength": 1000}, "file_id": {"type": "integer"}},
        "required": ["message"],
    },
    modes=EVERY_PROFILE,
    step=StepText("📲", "Envoi du message WhatsApp", "Sending the WhatsApp message"),
    run=run,
    side_effects=True,
    unavailable=lambda s: None if s.twilio_whatsapp_from else "TWILIO_WHATSAPP_FROM is not set",
)
