"""Facts the bot remembers about a user across conversations (save_memory, MEMOIRE, OUBLIE n).

Facts are numbered oldest first, the way the MEMOIRE command shows them, and are given to the
model in the system prompt (`facts_for_prompt`).
"""

from __future__ import annotations

import re
import unicodedata

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.assistant.errors import AssistantError
from bot.storage.db import rowcount
from bot.storage.models import Memory, utcnow

MAX_FACTS = 50
MAX_FACT_CHARS = 300
# What the system prompt gets at most, so memory cannot crowd out the conversation.
MAX_PROMPT_CHARS = 3000


class MemoryFull(AssistantError):
    pass


def normalize(fact: str) -> str:
    """Comparison key: case, accents, punctuation and spacing do not make a fact new."""
    text = unicodedata.normalize("NFKD", fact.casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(re.findall(r"\w+", text))


def clean_fact(fact: str) -> str:
    text = " ".join((fact or "").split())
    return text[:MAX_FACT_CHARS].strip()


async def list_facts(db: AsyncSession, user_id: int) -> list[Memory]:
    rows = await db.execute(select(Memory).where(Memory.user_id == user_id).order_by(Memory.id))
    return list(rows.scalars())


async def save_fact(
    db: AsyncSession, user_id: int, fact: str, *, now: object = None
) -> tuple[str, Memory | None]:
    """Returns ("saved", row), ("known", existing row) or ("empty", None); raises MemoryFull.

    A fact that contains an existing one ("aime les maths" then "aime les maths et la physique")
    replaces it rather than piling up."""
    text = clean_fact(fact)
    key = normalize(text)
    if not key:
        return "empty", None
    facts = await list_facts(db, user_id)
    for row in facts:
        old = normalize(row.fact)
        if old == key or key in old:
            return "known", row
    for row in facts:
        old = normalize(row.fact)
        if len(old) >= 8 and re.search(r"(^| )" + re.escape(old) + r"( |$)", key):
            row.fact = text
            await db.flush()
            return "saved", row
    if len(facts) >= MAX_FACTS:
        raise MemoryFull
    row = Memory(user_id=user_id, fact=text, created_at=now or utcnow())
    db.add(row)
    await db.flush()
    return "saved", row


async def delete_fact_number(db: AsyncSession, user_id: int, number: int) -> Memory | None:
    """Deletes the n-th fact as listed (1-based); None when there is no such number."""
    facts = await list_facts(db, user_id)
    if not 1 <= number <= len(facts):
        return None
    row = facts[number - 1]
    await db.execute(delete(Memory).where(Memory.id == row.id, Memory.user_id == user_id))
    return row


async def delete_all(db: AsyncSession, user_id: int) -> int:
    result = await db.execute(delete(Memory).where(Memory.user_id == user_id))
    return rowcount(result)


async def facts_for_prompt(db: AsyncSession, user_id: int) -> list[str]:
    """The facts to put in the system prompt, newest kept first when they exceed the budget."""
    facts = [row.fact for row in await list_facts(db, user_id)]
    kept: list[str] = []
    size = 0
    for fact in reversed(facts):
        size += len(fact) + 3
        if size > MAX_PROMPT_CHARS:
            break
        kept.append(fact)
    return list(reversed(kept))
