"""Quizzes checked on the server: stored with a TTL, shown as a numbered menu, answered by number.

Two phases, as in the product's design: the model's tool call stores the quiz (with its answer) in
shared state and gets back a sanitised copy without the answer; the student's reply is checked
against the stored copy by `handlers/quiz_answer.py`, without any model call. Until the student
has answered, the answer and the explanation exist only in the server's state: not in any message
sent to the user, nor in the tool result or the tool-call arguments the model sees again
(`redact_tool_arguments` is for the history writer).

Server rules (the model's prompt says the same, the server enforces it): at most
`MAX_QUIZZES_PER_CONVERSATION` per conversation, never on the conversation's first user message,
except a question that teaches again an item missed twice in a row (its `replaces` argument,
bot.learning.reteach): it comes with its new explanation, and REVISION may be the first message.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.agent.toolspec import ToolContext, tool_error
from bot.channel.buttons import Menu
from bot.channel.menus import get_menu, set_menu
from bot.learning import item_topic, keep_item, mark_retaught, pending_item, subject_for
from bot.learning.errors import LearningError
from bot.learning.quiz_types import MCQ as MCQ
from bot.learning.quiz_types import QUIZ_TYPES, QuizType, normalise, quiz_type_of
from bot.learning.quiz_types import TRUE_FALSE as TRUE_FALSE
from bot.services import Services
from bot.storage.db import rowcount
from bot.storage.models import Conversation
from bot.texts import fr_en

MAX_QUIZZES_PER_CONVERSATION = 3
QUIZ_TOOL_NAMES = frozenset(t.tool_name for t in QUIZ_TYPES.values())
MENU_KIND = "quiz"


class QuizError(LearningError, ValueError):
    """The quiz cannot be asked; the message says why, for the model."""


@dataclass(frozen=True)
class Quiz:
    quiz_id: str
    quiz_type: str  # a code of bot.learning.quiz_types (mcq | tf)
    user_id: int
    conversation_id: int
    question: str
    options: tuple[str, ...]
    correct_index: int
    explanation: str
    subject: str
    topic: str
    asked_at: datetime
    expires_at: datetime

    def to_menu(self) -> dict[str, Any]:
        return {
            "quiz_id": self.quiz_id,
            "quiz_type": self.quiz_type,
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
            "question": self.question,
            "options": list(self.options),
            "correct_index": self.correct_index,
            "explanation": self.explanation,
            "subject": self.subject,
            "topic": self.topic,
            "asked_at": self.asked_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
        }

    @property
    def kind(self) -> QuizType:
        """The quiz's type: how it is shown and how a reply is read."""
        return quiz_type_of(self.quiz_type)


def quiz_from_menu(menu: dict[str, Any]) -> Quiz | None:
    """The quiz held in a pending menu, or None when the menu is something else."""
    if menu.get("kind") != MENU_KIND:
        return None
    try:
        return Quiz(
            quiz_id=str(menu["quiz_id"]),
            quiz_type=str(menu["quiz_type"]),
            user_id=int(menu["user_id"]),
            conversation_id=int(menu["conversation_id"]),
            question=str(menu["question"]),
            options=tuple(str(o) for o in menu["options"]),
            correct_index=int(menu["correct_index"]),
            explanation=str(menu.get("explanation", "")),
            subject=str(menu.get("subject", "")),
            topic=str(menu.get("topic", "")),
            asked_at=datetime.fromisoformat(menu["asked_at"]),
            expires_at=datetime.fromisoformat(menu["expires_at"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


# --- checking what the model asked for --------------------------------------------------------


def _text(args: dict[str, Any], name: str, *, required: bool, limit: int) -> str:
    value = args.get(name)
    if value is None or value == "":
        if required:
            raise QuizError(f"'{name}' is required")
        return ""
    if not isinstance(value, str):
        raise QuizError(f"'{name}' must be a string")
    value = value.strip()
    if required and not value:
        raise QuizError(f"'{name}' must not be empty")
    if len(value) > limit:
        raise QuizError(f"'{name}' is too long (at most {limit} characters)")
    return value


def parse_mcq_args(args: dict[str, Any]) -> tuple[str, tuple[str, ...], int, str]:
    """(question, options, correct_index, explanation) checked against the seed's schema."""
    question = _text(args, "question", required=True, limit=1000)
    options = args.get("options")
    if not isinstance(options, list) or not 2 <= len(options) <= 4:
        raise QuizError("'options' must be a list of 2 to 4 strings")
    if not all(isinstance(o, str) and o.strip() for o in options):
        raise QuizError("every option must be a non-empty string")
    cleaned = tuple(o.strip() for o in options)
    if any(len(o) > 200 for o in cleaned):
        raise QuizError("an option is too long (at most 200 characters)")
    if len({normalise(o) for o in cleaned}) != len(cleaned):
        raise QuizError("two options are the same")
    index = args.get("correct_index")
    if isinstance(index, bool) or not isinstance(index, int):
        raise QuizError("'correct_index' must be an integer (zero-based)")
    if not 0 <= index < len(cleaned):
        raise QuizError(f"'correct_index' must be between 0 and {len(cleaned) - 1} (zero-based)")
    explanation = _text(args, "explanation", required=True, limit=1500)
    return question, cleaned, index, explanation


def parse_true_false_args(args: dict[str, Any]) -> tuple[str, bool, str]:
    statement = _text(args, "statement", required=True, limit=1000)
    correct = args.get("correct")
    if not isinstance(correct, bool):
        raise QuizError("'correct' must be a boolean (true or false)")
    explanation = _text(args, "explanation", required=True, limit=1500)
    return statement, correct, explanation


def subject_and_topic(args: dict[str, Any]) -> tuple[str, str]:
    try:
        subject = _text(args, "subject", required=False, limit=100)
        return subject, _text(args, "topic", required=False, limit=200)
    except QuizError:
        # Optional labels: a wrong type loses the label, not the quiz.
        return "", ""


# --- storing -------------------------------------------------------------------------------------


async def claim_quiz_slot(services: Services, conversation_id: int, user_id: int, *,
                          reteach: bool = False) -> int:
    """Counts one more quiz for the conversation, or raises QuizError saying why it is refused
    (`reteach`: a question teaching an item again, which may come on the first message).

    One conditional UPDATE, so two quizzes asked at once can never both take the last slot.
    """
    first = 0 if reteach else 1
    async with services.sessions() as db:
        result = await db.execute(
            update(Conversation)
            .where(
                Conversation.id == conversation_id,
                Conversation.user_id == user_id,
                Conversation.quiz_count < MAX_QUIZZES_PER_CONVERSATION,
                Conversation.user_message_count > first,
            )
            .values(quiz_count=Conversation.quiz_count + 1)
        )
        if rowcount(result) == 1:
            count = await db.scalar(select(Conversation.quiz_count).where(Conversation.id == conversation_id))
            await db.commit()
            return int(count or 0)
        row = (
            await db.execute(
                select(Conversation.user_id, Conversation.quiz_count, Conversation.user_message_count).where(
                    Conversation.id == conversation_id
                )
            )
        ).first()
    if row is None or row.user_id != user_id:
        raise QuizError("no such conversation for this user")
    if row.user_message_count <= first:
        raise QuizError(
            "quiz refused: never on the conversation's first message. Answer the student first; "
            "a quiz can come later in the conversation."
        )
    idle_h = f"{services.settings.learning.session_idle_s / 3600:g}"
    raise QuizError(
        f"quiz refused: this session already had {MAX_QUIZZES_PER_CONVERSATION} quizzes, the maximum per "
        "session (a session stays a short lesson, not a stream of quizzes). A new session starts after "
        f"{idle_h} h without a message from the student, or at once when they send NOUVEAU (NEW). "
        "Continue without a quiz (ask a question in plain text if useful)."
    )


async def store_quiz(
    services: Services,
    *,
    user_id: int,
    conversation_id: int,
    quiz_type: str,
    question: str,
    options: tuple[str, ...],
    correct_index: int,
    explanation: str,
    subject: str = "",
    topic: str = "",
    replaces: int | None = None,
) -> Quiz:
    """Keeps the quiz as the conversation's pending menu (replacing any previous one) and as a
    quiz item for review, under its canonical subject (the conversation's last one when the model
    named none). A quiz that `replaces` an item waiting to be taught again is linked to it, on its
    subject and skill."""
    now = services.clock()
    ttl_s = services.settings.quiz_ttl_s
    async with services.sessions() as db:
        old = None if replaces is None else await pending_item(db, user_id, replaces)
        if old is not None:
            subject, topic = old.subject, await item_topic(db, old)
        quiz = Quiz(
            quiz_id=secrets.token_hex(6),
            quiz_type=quiz_type,
            user_id=user_id,
            conversation_id=conversation_id,
            question=question,
            options=options,
            correct_index=correct_index,
            explanation=explanation,
            subject=await subject_for(db, conversation_id, subject),
            topic=topic,
            asked_at=now,
            expires_at=now + timedelta(seconds=ttl_s),
        )
        item = await keep_item(db, quiz_id=quiz.quiz_id, quiz_type=quiz_type, user_id=user_id,
                               conversation_id=conversation_id, question=question, options=options,
                               correct_index=correct_index, explanation=explanation,
                               subject=quiz.subject, topic=topic, now=now)
        if old is not None:
            mark_retaught(old, item, now)
        await db.commit()
    await set_menu(services, conversation_id, MENU_KIND, quiz.to_menu(), ttl_s, menu_id=quiz.quiz_id)
    return quiz


async def pending_quiz(services: Services, conversation_id: int, user_id: int, *,
                       db: AsyncSession | None = None) -> Quiz | None:
    """The conversation's pending quiz if it belongs to this user (expired or not); a row is read in
    `db` when given."""
    menu = await get_menu(services, conversation_id, db=db)
    quiz = None if menu is None else quiz_from_menu(menu)
    if quiz is None or quiz.user_id != user_id or quiz.conversation_id != conversation_id:
        return None
    return quiz


async def ask(
    ctx: ToolContext,
    args: dict[str, Any],
    *,
    quiz_type: str,
    question: str,
    options: tuple[str, ...],
    correct_index: int,
    explanation: str,
) -> dict[str, Any]:
    """What both quiz tools do once their arguments are parsed: enforce the per-conversation
    rules, store the quiz, send the menu, and give the model the quiz without its answer."""
    try:
        replaces = await replaced_item(ctx, args)
        await claim_quiz_slot(ctx.services, ctx.conversation_id, ctx.user_id, reteach=replaces is not None)
    except QuizError as exc:
        return tool_error(str(exc))
    subject, topic = subject_and_topic(args)
    quiz = await store_quiz(
        ctx.services,
        user_id=ctx.user_id,
        conversation_id=ctx.conversation_id,
        quiz_type=quiz_type,
        question=question,
        options=options,
        correct_index=correct_index,
        explanation=explanation,
        subject=subject,
        topic=topic,
        replaces=replaces,
    )
    text = render_quiz(quiz, ctx.channel, ctx.language)
    await ctx.send(text, menu=quiz_menu(quiz, text, ctx.language))
    shown = sanitised_result(quiz)
    if replaces is not None:
        shown["replaces"] = replaces
    return shown


async def replaced_item(ctx: ToolContext, args: dict[str, Any]) -> int | None:
    """The item the `replaces` argument names, checked to be the student's and waiting to be taught
    again; None when not given."""
    value = args.get("replaces")
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise QuizError("'replaces' must be an integer (the id given in the prompt)")
    async with ctx.services.sessions() as db:
        if await pending_item(db, ctx.user_id, value) is None:
            raise QuizError(f"replaces={value} is not a question of this student waiting to be "
                            "taught again: ask the quiz without it")
    return value


def sanitised_result(quiz: Quiz) -> dict[str, Any]:
    """What the model gets back: the quiz as shown, never the answer nor the explanation."""
    shown: dict[str, Any] = {"success": True, "status": "sent_to_student", "quiz_id": quiz.quiz_id}
    shown.update(quiz.kind.shown(quiz.question, quiz.options))
    shown["note"] = (
        "The quiz was sent to the student as a numbered menu. The server checks the reply and "
        "sends the verdict and the explanation itself. Do not repeat the options, do not give the "
        "answer or a hint that reveals it; at most one short line of encouragement."
    )
    return shown


_SHOWN_ARGUMENTS = frozenset({"subject", "topic", "replaces"}).union(
    *(t.shown_arguments for t in QUIZ_TYPES.values()))


def redact_tool_arguments(name: str, arguments: str) -> str:
    """Tool-call arguments as the history may keep them: a quiz's answer and explanation removed.

    The model wrote them, but once the quiz is asked they must not travel again in any request
    before the student answers; the note recorded after the answer tells the outcome instead.
    """
    if name not in QUIZ_TOOL_NAMES:
        return arguments
    try:
        parsed = json.loads(arguments)
    except (TypeError, ValueError):
        return "{}"
    if not isinstance(parsed, dict):
        return "{}"
    kept = {k: v for k, v in parsed.items() if k in _SHOWN_ARGUMENTS}
    return json.dumps(kept, ensure_ascii=False)


# --- showing ------------------------------------------------------------------------------------


def render_quiz(quiz: Quiz, channel: str, language: str) -> str:
    """The numbered menu: `1️⃣ …` lines on WhatsApp, `1) …` on SMS, one line on how to answer."""
    return quiz.kind.render(quiz.question, quiz.options, channel == "whatsapp", language)


def quiz_menu(quiz: Quiz, text: str, language: str, menu_id: str | None = None) -> Menu:
    """The quiz as a menu of buttons or a list (bot.channel.buttons), `text` its numbered body."""
    labels = quiz.kind.labels(quiz.options, language)
    return Menu(menu_id=menu_id or quiz.quiz_id, body=text, options=tuple(labels), language=language)


def option_label(quiz: Quiz, index: int, language: str) -> str:
    return quiz.kind.option_label(quiz.options, index, language)


def render_verdict(quiz: Quiz, chosen: int, language: str, channel: str = "whatsapp") -> str:
    """✅ or ❌, the right option, the explanation (SMS has no emoji: the words carry the verdict)."""
    right = option_label(quiz, quiz.correct_index, language)
    if chosen == quiz.correct_index:
        mark = "✅ "
        head = fr_en(language, f"Bravo, bonne réponse : {right}", f"Well done, that's right: {right}")
    else:
        mark = "❌ "
        head = fr_en(language, f"Pas tout à fait. La bonne réponse : {right}",
                     f"Not quite. The right answer: {right}")
    if channel != "sms":
        head = mark + head
    return f"{head}\n{quiz.explanation}" if quiz.explanation else head


def history_note(quiz: Quiz, chosen: int, seconds: float) -> str:
    """The line the tutor reads on its next turn (in English: it is for the model)."""
    kind = quiz.kind.note_name
    verdict = "correct" if chosen == quiz.correct_index else "wrong"
    return (
        f"[{kind}] The student answered the quiz \"{quiz.question}\" with "
        f"{option_label(quiz, chosen, 'en')} ({verdict}, after {round(seconds)} s). "
        f"Right answer: {option_label(quiz, quiz.correct_index, 'en')}. "
        "The verdict and the explanation were already sent to the student."
    )


# --- reading an answer --------------------------------------------------------------------------


_NUMBER = re.compile(r"^\(?([1-9])\s*[\).:]?$")
_KEYCAP = re.compile(r"^([1-9])\ufe0f?\u20e3$")


def number_in(reply: str) -> int | None:
    """The menu number in a reply (`2`, `2.`, `2)`, `2️⃣`, ` 2 `), or None."""
    text = reply.strip()
    keycap = _KEYCAP.match(text)
    if keycap:
        return int(keycap.group(1))
    match = _NUMBER.match(text)
    return int(match.group(1)) if match else None


def parse_answer(quiz: Quiz, reply: str) -> int | None:
    """The zero-based option the reply chooses, or None when the reply is not an answer."""
    kind = quiz.kind
    number = number_in(reply)
    if number is not None:
        return number - 1 if number <= kind.count(quiz.options) else None
    return kind.parse_words(quiz.options, reply)
