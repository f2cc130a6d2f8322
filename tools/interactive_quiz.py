"""interactive_quiz: a multiple-choice question sent as a numbered menu, checked on the server."""

from __future__ import annotations

from typing import Any

from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.learning.quiz import MCQ, QuizError, ask, parse_mcq_args
from tools.modes import CHILD_AND_PRO

NAME = "interactive_quiz"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string"},
        # minItems/maxItems as in the seed's schema: strict tool-calling enforces them at generation.
        "options": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 4},
        "correct_index": {"type": "integer", "description": "0-based"},
        "explanation": {"type": "string"},
        "subject": {"type": "string"},
        "topic": {"type": "string"},
        "replaces": {"type": "integer"},
    },
    "required": ["question", "options", "correct_index", "explanation"],
}


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    try:
        question, options, correct_index, explanation = parse_mcq_args(args)
    except QuizError as exc:
        return tool_error(str(exc))
    return await ask(ctx, args, quiz_type=MCQ, question=question, options=options,
                     correct_index=correct_index, explanation=explanation)


TOOL = Tool(
    name=NAME,
    description="Multiple-choice quiz, 2-4 options.",
    parameters=PARAMETERS,
    modes=CHILD_AND_PRO,
    step=StepText("❓", "Préparation du quiz", "Preparing the quiz"),
    run=run,
    side_effects=True,
    exclusive=True,
)
