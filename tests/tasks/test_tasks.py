"""create_task, TACHES/FAIT, and reminders: on time, once, across restarts and workers, opt-out.

Through the real app (tests/support/harness.py): the webhook, the worker, FakeTwilio and FakeLLM.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, update

from bot.agent.toolspec import ToolContext
from bot.assistant.tasks import send_due_reminders
from bot.storage.models import ParentLink, Task
from tools import for_mode
from tools.create_task import TOOL as CREATE_TASK

STUDENT = "+2250700000001"
PARENT = "+2250700000002"
OTHER = "+2250700000003"
START = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)  # 10:00 in Abidjan (UTC+0), 11:00 in Lagos (UTC+1)
ENV = {"REMINDER_LEAD_MINUTES": "60"}


@pytest.fixture
async def h(make_harness):
    harness = await make_harness(**ENV)
    harness.clock.now = START
    return harness


async def second_process(make_harness, h):
    """Another process on the same database (a restart, or a second worker): nothing shared in memory."""
    other = await make_harness(**ENV)
    other.clock.now = h.clock.now
    return other


def bodies(h, address: str) -> list[str]:
    return [m.get("Body", "") for m in h.twilio.to(address)]


async def create(h, user_id: int, **args) -> dict:
    ctx = ToolContext(
        services=h.services,
        user_id=user_id,
        conversation_id=0,
        channel="whatsapp",
        mode="child",
        language="fr",
    )
    return await CREATE_TASK.run(ctx, args)


async def tasks_of(h, user_id: int) -> list[Task]:
    async with h.services.sessions() as db:
        return list(await db.scalars(select(Task).where(Task.user_id == user_id).order_by(Task.id)))


async def remind(h) -> int:
    count = await send_due_reminders(h.services, h.clock())
    await h.twilio.idle()
    return count


async def test_offered_to_child_and_pro_with_side_effects(h) -> None:
    assert "create_task" in [t.name for t in for_mode("child", h.settings)]
    assert "create_task" in [t.name for t in for_mode("pro", h.settings)]
    assert "create_task" not in [t.name for t in for_mode("guest", h.settings)]
    assert CREATE_TASK.side_effects


async def test_model_creates_a_task_through_the_webhook(h) -> None:
    await h.make_user(STUDENT, timezone="Africa/Lagos")
    h.llm.push_tool_calls(
        (
            "create_task",
            {
                "title": "Réviser les fractions",
                "priority": "high",
                "due_date": "2026-03-11",
                "due_time": "14:30",
                "tags": ["maths"],
            },
        )
    )
    h.llm.push_text("C'est noté : je te le rappellerai demain.")
    status, _ = await h.inbound(STUDENT, "Rappelle-moi de réviser les fractions demain à 14h30")
    assert status == 200
    await h.settle()
    user = await h.user(STUDENT)
    [task] = await tasks_of(h, user.id)
    assert task.title == "Réviser les fractions" and task.priority == "high" and task.tags == ["maths"]
    assert task.due_at == datetime(2026, 3, 11, 13, 30, tzinfo=UTC)  # 14:30 in Lagos
    tool_result = [m for m in h.llm.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert '"due_local": "11/03/2026 14:30"' in tool_result
    assert "C'est noté" in (await h.texts_to(STUDENT))[-1]


async def test_default_time_zone_is_abidjan(h) -> None:
    user = await h.make_user(STUDENT)
    assert user.timezone == "Africa/Abidjan"
    result = await create(h, user.id, title="Exposé", due_date="2026-03-12", due_time="8h15")
    assert result["success"], result
    [task] = await tasks_of(h, user.id)
    assert task.due_at == datetime(2026, 3, 12, 8, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"title": ""}, "title"),
        ({"title": "x", "priority": "urgent"}, "priority"),
        ({"title": "x", "due_date": "12/03/2026"}, "due_date"),
        ({"title": "x", "due_date": "2026-03-12", "due_time": "25:00"}, "due_time"),
        ({"title": "x", "due_date": "2026-03-09"}, "past"),
        ({"title": "x", "due_time": "10:00"}, "due_date"),
        ({"title": "x" * 300}, "too long"),
    ],
)
async def test_bad_input_is_refused_and_nothing_stored(h, args, error) -> None:
    user = await h.make_user(STUDENT)
    result = await create(h, user.id, **args)
    assert result["success"] is False
    assert error in result["error"]
    assert await tasks_of(h, user.id) == []


async def test_reminders_at_lead_time_and_due_time_once_each(h) -> None:
    user = await h.make_user(STUDENT)
    await create(h, user.id, title="Rendre le devoir", due_date="2026-03-10", due_time="13:00")
    assert await remind(h) == 0
    h.clock.advance(hours=1, minutes=59)  # 11:59: more than an hour before
    assert await remind(h) == 0
    h.clock.advance(minutes=1)  # 12:00: lead time
    assert await remind(h) == 1
    assert await remind(h) == 0
    [lead] = bodies(h, f"whatsapp:{STUDENT}")
    assert "Rendre le devoir" in lead and "60 min" in lead and "13:00" in lead
    h.clock.advance(minutes=59)
    assert await remind(h) == 0
    h.clock.advance(minutes=1)  # 13:00: due
    assert await remind(h) == 1
    h.clock.advance(hours=5)
    assert await remind(h) == 0
    texts = bodies(h, f"whatsapp:{STUDENT}")
    assert len(texts) == 2 and "C'est l'heure" in texts[1]


async def test_registered_job_sends_the_reminder(h) -> None:
    user = await h.make_user(STUDENT)
    await create(h, user.id, title="Piscine", due_date="2026-03-10", due_time="10:30")
    h.clock.advance(minutes=30)
    await h.run_jobs("task_reminders")
    await h.twilio.idle()
    assert "Piscine" in bodies(h, f"whatsapp:{STUDENT}")[-1]


async def test_task_due_within_lead_time_gets_only_the_due_reminder(h) -> None:
    user = await h.make_user(STUDENT, language="en")
    await create(h, user.id, title="Call grandma", due_date="2026-03-10", due_time="10:30")
    assert await remind(h) == 0
    h.clock.advance(minutes=30)
    assert await remind(h) == 1
    [text] = bodies(h, f"whatsapp:{STUDENT}")
    assert text.startswith("⏰ It's time") and "Call grandma" in text


async def test_reminder_survives_a_restart(make_harness, h) -> None:
    user = await h.make_user(STUDENT)
    await create(h, user.id, title="Dictée", due_date="2026-03-10", due_time="12:00")
    h.clock.advance(hours=1)  # 11:00: the lead reminder
    assert await remind(h) == 1
    await h.close()
    second = await second_process(make_harness, h)
    assert await remind(second) == 0  # already sent before the restart
    # The worker was down at 12:00 and is back at 12:30: sent late, not lost (hours late, past
    # SEND_MAX_AGE_S, it would be dropped: tests/core/test_send_expiry.py).
    second.clock.advance(minutes=90)
    assert await remind(second) == 1
    third = await second_process(make_harness, second)
    assert await remind(third) == 0
    assert len(bodies(h, f"whatsapp:{STUDENT}")) == 1
    assert "C'est l'heure" in bodies(second, f"whatsapp:{STUDENT}")[0]
    assert bodies(third, f"whatsapp:{STUDENT}") == []


async def test_two_workers_at_once_send_each_reminder_once(make_harness, h) -> None:
    user = await h.make_user(STUDENT)
    for n in range(6):
        await create(h, user.id, title=f"Tâche {n}", due_date="2026-03-10", due_time=f"12:0{n}")
    other = await second_process(make_harness, h)
    for harness in (h, other):
        harness.clock.advance(hours=3)
    counts = await asyncio.gather(remind(h), remind(other), remind(h), remind(other))
    assert sum(counts) == 6
    texts = bodies(h, f"whatsapp:{STUDENT}") + bodies(other, f"whatsapp:{STUDENT}")
    titles = sorted(t.split("«")[1].split("»")[0].strip() for t in texts)
    assert titles == [f"Tâche {n}" for n in range(6)]


async def test_a_reminder_goes_to_the_student_only_parents_get_the_daily_digest(h) -> None:
    student = await h.make_user(STUDENT, display_name="Awa")
    parent = await h.make_user(PARENT, mode="pro")
    async with h.services.sessions() as db:
        db.add(ParentLink(student_id=student.id, parent_id=parent.id, status="confirmed"))
        await db.commit()
    await create(h, student.id, title="Révision bac blanc", due_date="2026-03-10", due_time="11:20")
    h.clock.advance(minutes=20)  # the lead reminder
    assert await remind(h) == 1
    h.clock.advance(hours=1)  # the due reminder
    assert await remind(h) == 1
    assert len(bodies(h, f"whatsapp:{STUDENT}")) == 2
    assert h.twilio.to(PARENT) == []  # tests/pedagogy/test_parent_digest.py: one digest a day instead


async def test_opted_out_user_and_parent_get_nothing(h) -> None:
    student = await h.make_user(STUDENT, opted_out=True)
    parent = await h.make_user(PARENT, mode="pro", opted_out=True)
    async with h.services.sessions() as db:
        db.add(ParentLink(student_id=student.id, parent_id=parent.id, status="confirmed"))
        await db.commit()
    await create(h, student.id, title="Sport", due_date="2026-03-10", due_time="12:00")
    for _ in range(3):
        h.clock.advance(hours=1)
        await remind(h)
    assert h.twilio.sent == []
    [task] = await tasks_of(h, student.id)
    assert task.reminder_sent_at is not None  # handled, not retried for ever


async def test_user_who_says_stop_gets_no_reminder(h) -> None:
    user = await h.make_user(STUDENT)
    await create(h, user.id, title="Sport", due_date="2026-03-10", due_time="12:00")
    await h.inbound(STUDENT, "STOP")
    await h.settle()
    sent_before = len(h.twilio.sent)
    h.clock.advance(hours=3)
    await remind(h)
    assert len(h.twilio.sent) == sent_before


async def test_done_task_is_not_reminded(h) -> None:
    user = await h.make_user(STUDENT)
    await create(h, user.id, title="Lire", due_date="2026-03-10", due_time="12:00")
    async with h.services.sessions() as db:
        await db.execute(update(Task).values(done=True))
        await db.commit()
    h.clock.advance(hours=3)
    assert await remind(h) == 0
    assert h.twilio.sent == []


async def say(h, phone: str, text: str) -> str:
    status, _ = await h.inbound(phone, text)
    assert status == 200
    await h.settle()
    return (await h.texts_to(phone))[-1]


async def test_taches_lists_and_fait_closes(h) -> None:
    user = await h.make_user(STUDENT)
    await create(h, user.id, title="Maths", due_date="2026-03-12", due_time="09:00", priority="high")
    await create(h, user.id, title="Histoire", due_date="2026-03-11", due_time="18:00", tags=["bac"])
    await create(h, user.id, title="Sans date")
    lines = (await say(h, STUDENT, "Tâches")).splitlines()
    assert lines[1].startswith("1. Histoire") and "#bac" in lines[1] and "11/03/2026 18:00" in lines[1]
    assert lines[2].startswith("2. Maths")
    assert lines[3] == "3. Sans date"
    # A task created after the listing does not shift the numbers the user saw.
    await create(h, user.id, title="Urgent", due_date="2026-03-10", due_time="20:00")
    assert "Maths" in await say(h, STUDENT, "fait 2")
    assert [t.title for t in await tasks_of(h, user.id) if t.done] == ["Maths"]
    assert "déjà" in await say(h, STUDENT, "FAIT 2")
    assert "n°9" in await say(h, STUDENT, "FAIT 9")
    assert [t.title for t in await tasks_of(h, user.id) if t.done] == ["Maths"]
    assert h.llm.requests == []  # all handled without the model


async def test_fait_cannot_close_another_users_task(h) -> None:
    owner = await h.make_user(STUDENT)
    await h.make_user(PARENT, mode="pro", language="en")
    await create(h, owner.id, title="À moi")
    assert "no task number 1" in await say(h, PARENT, "DONE 1")
    assert not any(t.done for t in await tasks_of(h, owner.id))


async def test_empty_list_in_english(h) -> None:
    await h.make_user(STUDENT, language="en")
    assert "no open tasks" in await say(h, STUDENT, "TASKS")


async def test_open_tasks_are_capped_with_a_clear_tool_error(make_harness) -> None:
    h = await make_harness(MAX_OPEN_TASKS="3", **ENV)
    h.clock.now = START
    user = await h.make_user(STUDENT)
    for i in range(3):
        assert (await create(h, user.id, title=f"Tâche {i}"))["success"]
    refused = await create(h, user.id, title="Une de trop", due_date="2026-03-12")
    assert refused["success"] is False and refused["limit"] == 3
    assert "3 open tasks" in refused["error"] and "FAIT n" in refused["error"]
    assert [t.title for t in await tasks_of(h, user.id)] == ["Tâche 0", "Tâche 1", "Tâche 2"]
    # Another user's tasks do not count; a closed task frees a place.
    other = await h.make_user(OTHER)
    assert (await create(h, other.id, title="À moi"))["success"]
    await say(h, STUDENT, "TACHES")
    await say(h, STUDENT, "FAIT 1")
    assert (await create(h, user.id, title="Une de plus"))["success"]
    assert (await create(h, user.id, title="Encore une"))["success"] is False


async def test_the_model_is_told_when_the_cap_is_reached(make_harness) -> None:
    h = await make_harness(MAX_OPEN_TASKS="1", **ENV)
    h.clock.now = START
    user = await h.make_user(STUDENT)
    assert (await create(h, user.id, title="Déjà là"))["success"]
    h.llm.push_tool_calls(("create_task", {"title": "Réviser"}))
    h.llm.push_text("Tu as déjà trop de tâches : termines-en une d'abord.")
    status, _ = await h.inbound(STUDENT, "Rappelle-moi de réviser")
    assert status == 200
    await h.settle()
    tool_result = [m for m in h.llm.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert '"success": false' in tool_result and "1 open task," in tool_result
    assert [t.title for t in await tasks_of(h, user.id)] == ["Déjà là"]
    assert "trop de tâches" in (await h.texts_to(STUDENT))[-1]


@pytest.mark.parametrize("raw", ["0", "-1", "beaucoup"])
def test_max_open_tasks_must_be_a_positive_number(raw: str) -> None:
    from bot.config import ConfigError, load_settings

    with pytest.raises(ConfigError, match="MAX_OPEN_TASKS"):
        load_settings({"MAX_OPEN_TASKS": raw})
    assert load_settings({}).max_open_tasks == 50
