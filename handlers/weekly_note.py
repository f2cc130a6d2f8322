"""BILAN / SUMMARY: the student's week (« 📅 Cette semaine : 12 questions, 9 justes, 4 jours de
suite ; à revoir : les fractions »), the note bot.learning.weekly sends once a week, now; BILAN NON /
SUMMARY OFF and BILAN OUI / SUMMARY ON stop and restart that weekly note."""

from __future__ import annotations

from bot.channel.context import Incoming
from bot.channel.keywords import keyword
from bot.learning.weekly import note_text, week_of

WORDS = frozenset({"BILAN", "SUMMARY"})
ON = frozenset({"OUI", "ON", "YES"})
OFF = frozenset({"NON", "OFF", "NO"})


def command(text: str) -> str | None:
    """"show", "on", "off", or None when the message is not this command."""
    word, _, rest = keyword(text).partition(" ")
    if word not in WORDS:
        return None
    return {"": "show", **dict.fromkeys(ON, "on"), **dict.fromkeys(OFF, "off")}.get(rest)


async def handle(msg: Incoming) -> bool:
    if (msg.user.mode or "guest") != "child":
        return False  # the note is a student's: a guest's or a pro's word goes on to the chat
    wanted = command(msg.text)
    if wanted is None:
        return False
    if wanted == "show":
        await _show(msg)
        return True
    msg.user.weekly_progress_notes = wanted == "on"
    await msg.db.commit()
    await msg.reply(msg.t(
        "C'est noté : chaque semaine, je t'enverrai ton bilan (questions, réponses justes, jours de "
        "suite). Écris BILAN NON pour arrêter.",
        "Done: every week I will send you your summary (questions, right answers, days in a row). "
        "Send SUMMARY OFF to stop.",
    ) if wanted == "on" else msg.t(
        "C'est noté : plus de bilan de la semaine. Écris BILAN quand tu veux voir le tien, ou BILAN OUI "
        "pour le recevoir à nouveau chaque semaine.",
        "Done: no more weekly summary. Send SUMMARY whenever you want to see yours, or SUMMARY ON to "
        "get it every week again.",
    ))
    return True


async def _show(msg: Incoming) -> None:
    services = msg.services
    week = await week_of(msg.db, services.settings.learning, msg.user, services.clock(),
                         services.settings.default_timezone)
    await msg.db.commit()  # a send records its row in its own session (SQLite: one writer)
    if not week.questions:
        await msg.reply(msg.t(
            "Pas encore de réponse vérifiée cette semaine. Demande-moi un quiz pour commencer !",
            "No checked answer this week yet. Ask me for a quiz to get started!",
        ))
        return
    await msg.reply(note_text(week, msg.lang, footer=False))
