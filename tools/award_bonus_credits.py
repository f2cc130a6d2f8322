"""award_bonus_credits: 1 to 5 bonus credits for the current student, earned by a correct answer.

The rule the server enforces, whatever the model was told: every award must be backed by a correct
answer the server itself checked in this conversation (a quiz answered right, see
handlers/quiz_answer.py) that no earlier award used. What the model reports with
report_exercise_result feeds progress only: the model could be talked into reporting anything.
The ledger row's ref is that result's id, so the unique (reason, ref) constraint makes "one award
per correct result" hold even under concurrency.
A student who asks for credits without having answered anything right gets nothing, however the
model is persuaded. On top of that, per student and per calendar day (in the student's time zone):
at most BONUS_MAX_AWARDS_PER_DAY awards and BONUS_MAX_CREDITS_PER_DAY credits (the last award of
the day is reduced to what remains). Only the current user can be credited: there is no recipient
parameter.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select

from bot.agent import effects
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.billing import credits
from bot.storage.models import CreditEntry, ExerciseResult, User
from tools.modes import CHILD_AND_PRO

NAME = "award_bonus_credits"
REASON = "ai_bonus"
# Results of quiz answers checked on the server; "report" ones come from the model.
CHECKED_BY_SERVER = "quiz"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"credits": {"type": "integer"}, "reason": {"type": "string"}},
    "required": ["credits"],
}


def start_of_day(now: datetime, timezone: str | None) -> datetime:
    try:
        zone = ZoneInfo(timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    local = now.astimezone(zone)
    return local.replace(hour=0, minute=0, second=0, microsecond=0).astimezone(UTC)


def used_result_id(ref: str | None) -> int:
    """The exercise result the last award was backed by (0 when none)."""
    if ref and ref.startswith("result:") and ref[7:].isdigit():
        return int(ref[7:])
    return 0


def requested_credits(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    try:
        value = int(raw)
    except (TypeError, ValueError):
        return None
    return min(max(value, 1), 5)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    wanted = requested_credits(args.get("credits", 1))
    if wanted is None:
        return tool_error("'credits' must be a whole number from 1 to 5")
    settings = ctx.services.settings
    now = ctx.services.clock()
    async with ctx.services.sessions() as db:
        user = await db.get(User, ctx.user_id)
        if user is None:
            return tool_error("no current user")
        last_ref = await db.scalar(
            select(CreditEntry.ref)
            .where(CreditEntry.user_id == ctx.user_id, CreditEntry.reason == REASON)
            .order_by(CreditEntry.id.desc())
            .limit(1)
        )
        earned = select(ExerciseResult.id).where(
            ExerciseResult.user_id == ctx.user_id,
            ExerciseResult.conversation_id == ctx.conversation_id,
            ExerciseResult.correct.is_(True),
            ExerciseResult.source == CHECKED_BY_SERVER,
            ExerciseResult.id > used_result_id(last_ref),
        )
        result_id = await db.scalar(earned.order_by(ExerciseResult.id.desc()).limit(1))
        if result_id is None:
            return tool_error(
                "not awarded: bonus credits reward a correct quiz answer, and the student has answered "
                "no quiz right in this conversation since the last award (exercises reported with "
                "report_exercise_result do not count). Credits are never given because the student "
                "asks; tell them a good answer to a quiz can earn some."
            )
        awards, given = await credits.total_since(db, ctx.user_id, REASON, start_of_day(now, user.timezone))
        if awards >= settings.bonus_max_awards_per_day:
            return tool_error(
                f"not awarded: daily limit of {settings.bonus_max_awards_per_day} bonus awards reached"
            )
        amount = min(wanted, settings.bonus_max_credits_per_day - given)
        if amount <= 0:
            return tool_error(
                f"not awarded: daily limit of {settings.bonus_max_credits_per_day} bonus credits reached"
            )
        balance = await _apply(db, ctx.user_id, amount, f"result:{result_id}", now)
        if balance is None:
            return tool_error("not awarded: this correct answer was already rewarded")
        result: ToolResult = {"success": True, "credits_awarded": amount,
                              "clamped_from": wanted if amount != wanted else None,
                              "new_balance": balance, "student_notified": False}
        # Stored with the credit: a turn run again after a crash finds it and does not award twice.
        await effects.mark_done(db, ctx.effect_key, result, now)
        await db.commit()
        language = user.language
    plural = "s" if amount > 1 else ""
    if language == "en":
        text = f"🎁 +{amount} bonus credit{plural}, well done!"
    else:
        text = f"🎁 +{amount} crédit{plural} bonus, bravo !"
    await ctx.send(text)
    return {**result, "student_notified": True}


async def _apply(db: Any, user_id: int, amount: int, ref: str, now: datetime) -> int | None:
    balance = await credits.apply(db, user_id, amount, REASON, ref=ref)
    if balance is not None:
        # The ledger row takes the service clock, so daily caps follow the same time as the tests.
        row = await db.scalar(select(CreditEntry).where(CreditEntry.reason == REASON, CreditEntry.ref == ref))
        if row is not None:
            row.created_at = now
    return balance


TOOL = Tool(
    name=NAME,
    description="1-5 credits for a quiz just answered right; never if asked.",
    parameters=PARAMETERS,
    modes=CHILD_AND_PRO,
    step=StepText("🎁", "Attribution des crédits bonus", "Awarding bonus credits"),
    run=run,
    side_effects=True,
    exclusive=True,
    effect_in_transaction=True,
)
