"""report_exercise_result: silently records whether the student got an exercise right.

For exercises checked in conversation (quizzes record their own result when answered). Nothing is
sent to the student; the result feeds PROGRES, the parents' weekly summary and bonus eligibility.
"""

from __future__ import annotations

from typing import Any

from bot.models import ExerciseResult
from bot.toolspec import Tool, ToolContext, ToolResult, tool_error
from tools.modes import modes_for

NAME = "report_exercise_result"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subject": {"type": "string", "description": "School subject, e.g. Maths, Français, SVT"},
        "topic": {"type": "string", "description": "Topic within the subject, e.g. fractions"},
        "correct": {"type": "boolean", "description": "Whether the student's answer was correct"},
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
        db.add(
            ExerciseResult(
                user_id=ctx.user_id,
                conversation_id=ctx.conversation_id,
                subject=subject.strip()[:100],
                topic=topic.strip()[:200],
                correct=correct,
                source="report",
                created_at=ctx.services.clock(),
            )
        )
        await db.commit()
    return {"success": True, "recorded": True}


TOOL = Tool(
    name=NAME,
    description=(
        "Silently record whether the student answered an exercise correctly (for exercises checked "
        "in the conversation; quizzes record their own results). Nothing is shown to the student."
    ),
    parameters=PARAMETERS,
    modes=modes_for(NAME),
    run=run,
    side_effects=True,
)
