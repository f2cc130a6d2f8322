"""TACHES / TASKS lists the user's open tasks; FAIT n / DONE n closes the n-th of that list."""

from __future__ import annotations

import json
import re

from unidecode import unidecode

from bot import clock
from bot.assistant import tasks
from bot.channel.context import Incoming
from bot.storage.models import Task
from handlers.help import to_audience

_LIST = re.compile(r"^(taches|tasks|mes taches|my tasks)$")
_DONE = re.compile(r"^(fait|done|termine)\s*#?\s*(\d{1,4})$")
_LIST_TTL_S = 7 * 24 * 3600
_SHOWN = 30


def _key(user_id: int) -> str:
    return f"tasks-list:{user_id}"


def _normalized(text: str) -> str:
    return re.sub(r"\s+", " ", unidecode(text).strip().lower().rstrip(".!"))


async def handle(msg: Incoming) -> bool:
    text = _normalized(msg.text)
    if _LIST.match(text):
        await _list(msg)
        return True
    match = _DONE.match(text)
    if match:
        await _done(msg, int(match.group(2)))
        return True
    return False


async def _list(msg: Incoming) -> None:
    open_ = await tasks.open_tasks(msg.db, msg.user.id)
    if not open_:
        await msg.reply(
            to_audience(
                msg,
                "Tu n'as aucune tâche en cours. Demande-moi d'en créer une !",
                "Vous n'avez aucune tâche en cours. Demandez-moi d'en créer une !",
                "You have no open tasks. Ask me to create one!",
            )
        )
        return
    shown = open_[:_SHOWN]
    # The numbers the user sees are remembered, so that FAIT 2 closes the task that was shown as 2.
    await msg.services.state.kv_set(_key(msg.user.id), json.dumps([t.id for t in shown]), _LIST_TTL_S)
    tz = clock.zone(msg.user.timezone, msg.services.settings.default_timezone)
    lines = [to_audience(msg, "📋 Tes tâches :", "📋 Vos tâches :", "📋 Your tasks:")]
    for number, task in enumerate(shown, 1):
        mark = {"high": " ❗", "low": ""}.get(task.priority, "")
        due = f" — {tasks.local_time(task.due_at, tz)}" if task.due_at else ""
        tags = " " + " ".join(f"#{t}" for t in task.tags) if task.tags else ""
        lines.append(f"{number}. {task.title}{mark}{due}{tags}")
    if len(open_) > _SHOWN:
        lines.append(msg.t(f"… et {len(open_) - _SHOWN} autres.", f"… and {len(open_) - _SHOWN} more."))
    lines.append(msg.t("FAIT n pour terminer la tâche n.", "Reply DONE n to close task n."))
    await msg.reply("\n".join(lines))


async def _done(msg: Incoming, number: int) -> None:
    raw = await msg.services.state.kv_get(_key(msg.user.id))
    ids = json.loads(raw) if raw else [t.id for t in await tasks.open_tasks(msg.db, msg.user.id)][:_SHOWN]
    if not 1 <= number <= len(ids):
        await msg.reply(
            msg.t(
                f"Je ne trouve pas de tâche n°{number}. TACHES pour voir la liste.",
                f"There is no task number {number}. Send TASKS to see the list.",
            )
        )
        return
    task_id = ids[number - 1]
    closed = await tasks.close(msg.db, msg.user.id, task_id, msg.services.clock())
    task = await msg.db.get(Task, task_id)
    # Committed before replying: the reply is recorded by another session, which SQLite would block.
    await msg.db.commit()
    if not closed:
        await msg.reply(
            msg.t(
                f"La tâche n°{number} est déjà terminée. TACHES pour la liste à jour.",
                f"Task {number} is already done. Send TASKS for the current list.",
            )
        )
        return
    title = task.title if task else ""
    await msg.reply(
        msg.t(f"✅ Bravo ! Tâche terminée : « {title} ».", f"✅ Well done! Task closed: “{title}”.")
    )
