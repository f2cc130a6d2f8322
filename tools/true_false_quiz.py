"""true_false_quiz: a statement to judge, sent as `1 Vrai / 2 Faux`, checked on the server."""

from __future__ import annotations

from typing import Any

from bot.quiz import (
    TRUE_FALSE,
    QuizError,
    ask,
    parse_true_false_args,
)
from bot.toolspec import Tool, ToolContext, ToolResult, tool_error
from tools.modes import modes_for

NAME = "true_false_quiz"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "statement": {"type": "string", "description": "The statement the student judges true or false"},
        "correct": {"type": "boolean", "description": "Whether the statement is true"},
        "explanation": {
            "type": "string",
            "description": "Pedagogical explanation shown after the student answers",
        },
        "subject": {"type": "string", "description": "School subject, e.g. Maths, SVT (for progress)"},
        "topic": {"type": "string", "description": "Topic within the subject (for progress)"},
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
    description=(
        "Generate a true/false quiz statement for the student. Same rules as interactive_quiz: "
        "1-3 quizzes per conversation max, never on the first message. The server sends it as a "
        "numbered menu and checks the answer itself: do not reveal the answer in your message."
    ),
    parameters=PARAMETERS,
    modes=modes_for(NAME),
    run=run,
    side_effects=True,
    exclusive=True,
)
