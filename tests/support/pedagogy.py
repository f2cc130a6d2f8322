"""The pedagogy tests' people and steps: a student taking a quiz through the webhook, a parent
confirming a link with the code they received, and, for the unit tests, a student made directly in
the database and a tool context that records what the tool delivers."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot.agent.toolspec import ToolContext
from bot.clock import ManualClock
from bot.services import Services
from bot.storage.models import Conversation, ParentLink, User

STUDENT = "+2250700000001"
OTHER = "+2250700000002"
SECRET = "EXPLICATION-SECRETE"
MCQ_ARGS: dict[str, Any] = {
    "question": "Combien font 3 × 5 ?",
    "options": ["12", "15", "18", "20"],
    "correct_index": 1,
    "explanation": f"{SECRET} : 3 fois 5 font quinze.",
    "subject": "Maths",
    "topic": "multiplication",
}


def to_the_afternoon(clock: ManualClock, hour: int = 16) -> None:
    """Moves a test's clock on to the next `hour`:00 UTC (Abidjan's time): a missed question is due
    at the student's study hour, so a test that checks when it comes back must not depend on the
    hour it runs at (at 23:00 the study hour is brought to 19:00, two evenings on)."""
    later = clock.now.replace(hour=hour, minute=0, second=0, microsecond=0)
    clock.now = later if later >= clock.now else later + timedelta(days=1)


async def say(h: Any, phone: str, body: str, channel: str = "whatsapp") -> list[str]:
    """Sends one inbound message, waits until it is processed, returns the texts it produced."""
    before = len(await h.texts_to(phone))
    status, _ = await h.inbound(phone, body, channel=channel)
    assert status == 200
    await h.settle()
    return (await h.texts_to(phone))[before:]


async def ask_quiz(h: Any, phone: str = STUDENT, channel: str = "whatsapp", tool: str = "interactive_quiz",
                   args: dict[str, Any] | None = None, first: bool = True) -> list[str]:
    if first:  # a quiz is never allowed on the conversation's first message
        h.llm.push_text("Bonjour ! On révise quoi ?")
        await say(h, phone, "Bonjour", channel)
    h.llm.push_tool_calls((tool, args or MCQ_ARGS))
    h.llm.push_text("À toi de jouer !")
    return await say(h, phone, "Fais-moi un quiz", channel)


PARENT = "+2250700000009"
MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SUNDAY_SLOT = datetime(2026, 3, 8, 18, 0, tzinfo=UTC)  # PARENT_SUMMARY_WEEKDAY=6, HOUR=18 (defaults)
_CODE = re.compile(r"\b(?:OUI|YES) (\d{4})\b")


def code_in(text: str) -> str:
    found = _CODE.search(text)
    assert found, f"no code in {text!r}"
    return found.group(1)


async def latest_code(h: Any, parent: str = PARENT) -> str:
    """The code in the latest message the parent received that carries one (invitation or reply)."""
    texts = [t for t in await h.texts_to(parent) if _CODE.search(t)]
    assert texts, f"{parent} received no code"
    return code_in(texts[-1])


async def confirm(h: Any, parent: str = PARENT, *, word: str = "OUI", channel: str = "sms") -> list[str]:
    """The parent answers with the code they received, as the SMS tells them to."""
    return await say(h, parent, f"{word} {await latest_code(h, parent)}", channel=channel)


async def link_status(h: Any, student: str = STUDENT, parent: str = PARENT) -> str | None:
    async with h.services.sessions() as db:
        s = await db.scalar(select(User.id).where(User.phone == student))
        p = await db.scalar(select(User.id).where(User.phone == parent))
        return await db.scalar(
            select(ParentLink.status).where(ParentLink.student_id == s, ParentLink.parent_id == p)
        )


START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday


async def make_student(services: Services, phone: str = "+2250701020304", *, user_messages: int = 2,
                       language: str = "fr") -> tuple[User, Conversation]:
    async with services.sessions() as db:
        user = User(phone=phone, mode="child", role="student", language=language, display_name="Awa")
        db.add(user)
        await db.flush()
        conversation = Conversation(user_id=user.id, user_message_count=user_messages)
        db.add(conversation)
        await db.commit()
        return user, conversation


def context(services: Services, user_id: int, conversation_id: int, sent: list[str],
            channel: str = "whatsapp", language: str = "fr") -> ToolContext:
    async def deliver(text: str = "", media: Any = None, menu: Any = None) -> None:
        sent.append(menu.body if menu is not None else text)

    return ToolContext(services=services, user_id=user_id, conversation_id=conversation_id, channel=channel,
                       mode="child", language=language, tool_call_id="call_1", deliver=deliver)
