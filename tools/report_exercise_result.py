"""report_exercise_result: silently records whether the student got an exercise right.

For exercises checked in conversation (quizzes record their own result when answered). Nothing is
sent to the student. The model only says so, so the result is kept unverified (source "report"):
under its canonical subject and skill, shown apart from checked answers, and it never moves mastery
nor backs bonus credits (only answers the server checked do: tools/award_bonus_credits.py).
"""

from __future__ import annotations

from typing import Any

from bot.agent import effects
from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.learning import record_reported, subject_for
from tools.modes import EVERY_PROFILE

NAME = "report_exercise_result"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subject": {"type": "string"},
        "topic": {"type": "string"},
        "correct": {"type": "boolean"},
    },
    "required": ["subject", "correct"],
}


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    subject = args.get("subject")
    topic = args.get("topic") or ""
    correct = args.get("correct")
    if not isinstance(subject, str) or not subject.strip():
        return tool_error("'subject' must be a non-empty string")
    if not isinstance(topic, str):
        return tool_error("'topic' must be a string")
    if not isinstance(correct, bool):
        return tool_error("'correct' must be a boolean (true or false)")
    async with ctx.services.sessions() as db:
        await record_reported(
            db, user_id=ctx.user_id, conversation_id=ctx.conversation_id,
            subject=await subject_for(db, ctx.conversation_id, subject.strip()[:100]),
            topic=topic.strip()[:200], correct=correct, now=ctx.services.clock(),
        )
        result: ToolResult = {"success": True, "recorded": True}
        await effects.mark_done(db, ctx.effect_key, result, ctx.services.clock())
        await db.commit()
    return result


TOOL = Tool(
    name=NAME,
    description="Record an exercise result silently (no quiz).",
    parameters=PARAMETERS,
    modes=EVERY_PROFILE,
    step=StepText("📈", "Enregistrement du résultat", "Recording the result"),
    run=run,
    side_effects=True,
    effect_in_transaction=True,
)
