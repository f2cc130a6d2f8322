"""true_false_quiz: a statement to judge, sent as `1 Vrai / 2 Faux`, checked on the server."""

from __future__ import annotations

from typing import Any

from bot.agent.toolspec import StepText, Tool, ToolContext, ToolResult, tool_error
from bot.learning.quiz import TRUE_FALSE, QuizError, ask, parse_true_false_args
from tools.modes import CHILD_AND_PRO

NAME = "true_false_quiz"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "statement": {"type": "string"},
        "correct": {"type": "boolean"},
        "explanation": {"type": "string"},
        "subject": {"type": "string"},
        "topic": {"type": "string"},
    },
    "required": ["statement", "correct", "explanation"],
}


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    try:
        statement, correct, explanation = parse_true_false_args(args)
    except QuizError as exc:
        return tool_error(str(exc))
    return await ask(ctx, args, quiz_type=TRUE_FALSE, question=statement, options=("true", "false"),
                     correct_index=0 if correct else 1, explanation=explanation)


TOOL = Tool(
    name=NAME,
    description="True/false quiz.",
    parameters=PARAMETERS,
    modes=CHILD_AND_PRO,
    step=StepText("⚖️", "Préparation du vrai ou faux", "Preparing the true-or-false question"),
    run=run,
    side_effects=True,
    exclusive=True,
)
