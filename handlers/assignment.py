"""DEVOIR / HOMEWORK (and the notice's « Commencer » button): what the student's teachers set, and
the first one due started as a round of questions (bot.school.assignments: the class's bank, then
the student's own items on the skill), asked and checked as REVISION's (handlers/review.py) with no
model call; the round carries the assignment, so each answer counts for it too.

A student told of nothing yet (outside WhatsApp's window with no ASSIGNMENT_TEMPLATE_SID, nothing
could be sent) is told on their next message, before it is answered as usual."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from bot import school
from bot.channel.context import UNTOLD, Incoming
from bot.channel.keywords import keyword
from bot.channel.menus import set_menu
from bot.learning import REVIEW_KIND, new_round
from bot.learning.quiz import quiz_menu
from bot.storage.models import Assignment, AssignmentWork, QuizItem
from handlers.review import item_quiz, render_question

WORDS = frozenset({"DEVOIR", "DEVOIRS", "HOMEWORK"})


async def handle(msg: Incoming) -> bool:
    if (msg.user.mode or "guest") == "guest":
        return False
    if keyword(msg.text) in WORDS:
        await _start(msg)
        return True
    waiting = [] if msg.lacks(UNTOLD) else await school.untold(msg.db, msg.user.id)
    if waiting:
        await school.told(msg.db, msg.user.id, [a.id for a in waiting], msg.services.clock())
        await msg.db.commit()
        for found in waiting:
            if msg.channel == "sms":
                await msg.reply(school.notice_text(found, msg.lang, "sms"))
            else:
                await msg.reply(menu=school.notice_menu(found, msg.lang))
    return False


def _listing(msg: Incoming, work: list[tuple[Assignment, AssignmentWork]]) -> str:
    lines = [f"• {school.notice_text(a, msg.lang, 'plain')}" for a, _ in work]
    head = msg.t("Tes devoirs à faire :", "Your homework to do:")
    return "\n".join([f"📚 {head}" if msg.channel == "whatsapp" else head, *lines])


async def _items(msg: Incoming, found: Assignment, work: AssignmentWork, now: datetime) -> list[QuizItem]:
    """The questions drawn when it was started (to carry on where the student stopped), else new."""
    if work.item_ids:
        kept = [await msg.db.get(QuizItem, int(i)) for i in work.item_ids]
        return [i for i in kept if i is not None and i.user_id == msg.user.id]
    return await school.draw_items(msg.db, msg.user.id, found, now, msg.conversation.id)


async def _start(msg: Incoming) -> None:
    now = msg.services.clock()
    work = await school.open_work(msg.db, msg.user.id)
    if not work:
        await msg.db.commit()
        await msg.reply(msg.t("Aucun devoir à faire pour le moment. Écris REVISION pour réviser.",
                              "No homework to do right now. Send REVIEW to practise."))
        return
    await school.told(msg.db, msg.user.id, [a.id for a, _ in work], now)
    found, mine = work[0]
    items = await _items(msg, found, mine, now)
    listing = _listing(msg, work)
    if not items or mine.asked >= len(items):
        await msg.db.commit()
        skill = found.skill_label
        await msg.reply(listing + "\n\n" + msg.t(
            f"Pas encore de questions sur {skill} : demande-moi un quiz sur {skill} !",
            f"No questions on {skill} yet: ask me for a quiz on {skill}!"))
        return
    mine.item_ids, mine.started_at = [i.id for i in items], mine.started_at or now
    current = replace(new_round(msg.user.id, msg.conversation.id, items, now, assignment=found.id),
                      index=mine.asked, right=mine.correct)
    ttl_s = msg.services.settings.quiz_ttl_s
    quiz = item_quiz(items[current.index], msg.conversation.id, now, ttl_s)
    go = msg.t(f"On commence : {found.skill_label}.", f"Let's start: {found.skill_label}.")
    text = f"{listing}\n\n{go}\n\n{render_question(msg, quiz, current.index + 1, len(items), True)}"
    menu_id = await set_menu(msg.services, msg.conversation.id, REVIEW_KIND, current.to_menu(), ttl_s,
                             db=msg.db)
    await msg.db.commit()
    await msg.reply(menu=quiz_menu(quiz, text, msg.lang, menu_id))
