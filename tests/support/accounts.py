"""A person's account with a bit of everything in it, and where the schema still holds them: for the
tests of the operator's console (`python -m bot users`) and of erasure."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import func, select

from bot import library
from bot.storage.models import (
    Base,
    Conversation,
    ExerciseResult,
    Memory,
    ParentLink,
    Payment,
    PendingDelivery,
    ScheduledSend,
    Task,
    ToolEffect,
    User,
)
from tests.support.harness import Harness
from tests.support.pedagogy import confirm

PHONE = "+2250700000001"
PARENT = "+2250700000002"


async def say(h: Harness, phone: str, body: str, channel: str = "whatsapp") -> list[str]:
    before = len(await h.texts_to(phone))
    status, _ = await h.inbound(phone, body, channel=channel)
    assert status == 200
    await h.settle()
    return (await h.texts_to(phone))[before:]


async def leftovers(h: Harness, user_id: int, phone: str) -> list[str]:
    """Where the schema still holds this user's id (in a column pointing at users) or number."""
    digits = phone.removeprefix("+")
    found: list[str] = []
    users_table = Base.metadata.tables["users"]
    async with h.services.sessions() as db:
        for table in Base.metadata.sorted_tables:
            id_columns = [fk.parent for fk in table.foreign_keys if fk.column.table is users_table]
            if table is users_table:
                id_columns.append(table.c.id)
            for column in id_columns:
                n = await db.scalar(select(func.count()).select_from(table).where(column == user_id))
                if n:
                    found.append(f"{table.name}.{column.name} = {user_id} ({n} rows)")
            for row in await db.execute(select(table)):
                for name, value in row._mapping.items():
                    text = json.dumps(value, default=str) if not isinstance(value, str) else value
                    if digits in text:
                        found.append(f"{table.name}.{name}: {text[:120]}")
    return found


async def rich_user(h: Harness) -> User:
    """A student with a bit of everything: a turn, a file, memories, results, tasks, a parent."""
    user = await h.make_user(PHONE, display_name="Awa")
    h.llm.push_text("Une fraction est une part d'un tout.")
    assert await say(h, PHONE, "Explique-moi les fractions") == ["Une fraction est une part d'un tout."]
    await say(h, PHONE, f"PARENT {PARENT}")
    await confirm(h, PARENT)
    now = h.clock()
    async with h.services.sessions() as db:
        conversation = await db.scalar(select(Conversation).where(Conversation.user_id == user.id))
        assert conversation is not None
        homework = await library.add_file(h.services, db, user_id=user.id, name="devoir.txt",
                                          mime="text/plain", data=b"mon devoir de maths", origin="upload")
        db.add(Memory(user_id=user.id, fact="En 4e au lycee de Cocody", created_at=now))
        db.add(ExerciseResult(user_id=user.id, conversation_id=conversation.id, subject="maths",
                              topic="fractions", correct=True, created_at=now))
        task = Task(user_id=user.id, title="Réviser les fractions", due_at=now + timedelta(days=1),
                    created_at=now)
        db.add(task)
        link = await db.scalar(select(ParentLink).where(ParentLink.student_id == user.id))
        assert link is not None and link.status == "confirmed"
        await db.flush()
        # Rows that reach the person only through another row (a task, a file, the parent link).
        db.add(ScheduledSend(key=f"reminder:{task.id}", kind="reminder_due", user_id=user.id, task_id=task.id,
                             slot_at=task.due_at, next_attempt_at=task.due_at, created_at=now))
        db.add(ScheduledSend(key=f"digest:{link.id}", kind="parent_digest", user_id=link.parent_id,
                             link_id=link.id, slot_at=now, next_attempt_at=now, created_at=now))
        db.add(PendingDelivery(user_id=user.id, file_id=homework.id, text="ton devoir", created_at=now))
        db.add(ToolEffect(key=f"effect:{user.id}:1", user_id=user.id, tool="create_task", status="done",
                          result={"to": PHONE}, created_at=now))
        db.add(Payment(user_id=user.id, provider="local", reference=f"deblo-{user.id}-abc", pack="small",
                       amount=500, currency="XOF", credits=20, status="paid", created_at=now, paid_at=now))
        await db.commit()
    return user
