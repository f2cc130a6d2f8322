"""interactive_quiz: a multiple-choice question sent as a numbered menu, checked on the server."""

from __future__ import annotations

from typing import Any

from bot.quiz import (
    MCQ,
    QuizError,
    ask,
    parse_mcq_args,
)
from bot.toolspec import Tool, ToolContext, ToolResult, tool_error
from tools.modes import modes_for

NAME = "interactive_quiz"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The quiz question text"},
        "options": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 2,
            "maxItems": 4,
            "description": "Answer options (2-4 choices)",
        },
        "correct_index": {"type": "integer", "description": "Zero-based index of the correct answer"},
        "explanation": {
            "type": "string",
            "description": "Pedagogical explanation shown after the student answers",
        },
        "subject": {"type": "string", "description": "School subject, e.g. Maths, Français (for progress)"},
        "topic": {"type": "string", "description": "Topic within the subject, e.g. fractions (for progress)"},
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
    description=(
        "Generate an interactive multiple-choice quiz question for the student. "
        "Use after explaining a concept, to consolidate understanding, or to break "
        "monotony. 1-3 quizzes per conversation max. Never on the first message. "
        "The server sends it as a numbered menu and checks the answer itself: do not repeat "
        "the options or reveal the answer in your message."
    ),
    parameters=PARAMETERS,
    modes=modes_for(NAME),
    run=run,
    side_effects=True,
    exclusive=True,
)
