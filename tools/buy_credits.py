"""buy_credits: shows the credit packs as a numbered menu, or gives the payment link for one pack."""

from __future__ import annotations

from typing import Any

from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.billing import payments
from bot.billing.payments.provider import PaymentError
from bot.config import Settings
from tools.modes import EVERY_PROFILE


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    settings = ctx.services.settings
    reason = payments.unavailable_reason(settings)
    if reason:
        return tool_error(f"buying credits is unavailable right now ({reason})")
    offered = payments.packs(settings)
    choice = args.get("pack")
    if choice is None:
        menu = await payments.show_menu(ctx.services, ctx.conversation_id, ctx.language)
        await ctx.send(text=menu.body, menu=menu)
        return {
            "success": True,
            "menu_sent": True,
            "packs": [
                {"number": p.number, "credits": p.credits, "price": p.price, "currency": p.currency}
                for p in offered
            ],
            "note": "The numbered list was sent to the user; they answer with a number. Do not repeat it.",
        }
    if not isinstance(choice, int) or not 1 <= choice <= len(offered):
        return tool_error(f"pack must be a number from 1 to {len(offered)}")
    pack = offered[choice - 1]
    try:
        payment, checkout = await payments.start_purchase(ctx.services, ctx.user_id, pack)
    except PaymentError as exc:
        return tool_error(f"the payment service is unavailable right now: {exc}")
    await ctx.send(text=payments.payment_link_text(pack, checkout, ctx.language))
    return {
        "success": True,
        "link_sent": True,
        "reference": payment.reference,
        "credits": pack.credits,
        "price": pack.price,
        "currency": pack.currency,
        "note": "The payment link was sent to the user; credits are added when the payment is confirmed.",
    }


def _unavailable(settings: Settings) -> str | None:
    return payments.unavailable_reason(settings)


TOOL = Tool(
    name="buy_credits",
    description="Credit packs; pack (the user's pick): a payment link.",
    parameters={"type": "object", "properties": {"pack": {"type": "integer"}}},
    modes=EVERY_PROFILE,
    step=StepText("💳", "Préparation de l'achat de crédits", "Preparing the credit purchase"),
    run=run,
    side_effects=True,
    unavailable=_unavailable,
)
