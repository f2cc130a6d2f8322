"""Sessions: a conversation ends after `SESSION_IDLE_S` without a message from the user, and the
next message opens a new one, so the history the model reads (and pays for) is one session's.

The new conversation starts with a carried-over note (a `note` row, which the history shows the
model as a system message): the previous session's subjects and skills, from its checked and
reported results and its quiz items, its open exercise and how far it got (bot.learning.homework:
homework started at noon is still known at 19:00), and how many items are due for review. The
previous session is the last one with anything in it: one opened by NOUVEAU and left empty is
passed over, so NOUVEAU twice keeps the note. It is built from the database alone, no model call,
and kept to about a kilobyte. Memories, tasks, files, results, items and mastery belong to the
user, not the conversation, so they carry on as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.learning.homework import exercise_line, open_exercise
from bot.learning.items import due_count
from bot.learning.subjects import canonical_subject, skill_key, skill_label
from bot.storage.models import Conversation, ExerciseResult, Message, QuizItem, SkillMastery, User

__all__ = ["NOTE_MAX_BYTES", "WORK_MAX_BYTES", "arrival", "carried_note", "current_session", "is_idle",
           "last_worked_session", "start_session"]

NOTE_MAX_BYTES = 1200  # the whole note, its open exercise (at most about 700) included
WORK_MAX_BYTES = 500  # the note without its open exercise: the work done is shortened first
_LOOK_BACK = 5  # sessions walked back to find the last one with anything in it
_MAX_SUBJECTS = 3
_MAX_SKILLS = 3  # per subject
_LABEL_CHARS = 30


def is_idle(conversation: Conversation, now: datetime, idle_s: int) -> bool:
    """True once the user has been silent for `idle_s` in this conversation. One that no message
    reached yet (just opened by NOUVEAU) is kept, its note with it; one from before sessions has
    no last message noted, so its creation counts."""
    if conversation.last_user_message_at is None and not conversation.user_message_count:
        return False
    last = conversation.last_user_message_at or conversation.created_at
    return last is not None and now - last >= timedelta(seconds=idle_s)


async def _worked_on(db: AsyncSession, user_id: int, conversation_id: int) -> dict[str, dict[str, str]]:
    """{subject: {skill key: label}} of a conversation, in the order the work came."""
    worked: dict[str, dict[str, str]] = {}
    results = await db.execute(
        select(ExerciseResult.subject, ExerciseResult.topic).where(
            ExerciseResult.user_id == user_id, ExerciseResult.conversation_id == conversation_id)
        .order_by(ExerciseResult.id))
    for subject, topic in results:
        worked.setdefault(canonical_subject(subject), {}).setdefault(skill_key(topic), skill_label(topic))
    items = await db.execute(
        select(QuizItem.subject, QuizItem.skill, SkillMastery.label)
        .outerjoin(SkillMastery, (SkillMastery.user_id == QuizItem.user_id)
                   & (SkillMastery.subject == QuizItem.subject) & (SkillMastery.skill == QuizItem.skill))
        .where(QuizItem.user_id == user_id, QuizItem.conversation_id == conversation_id)
        .order_by(QuizItem.id))
    for subject, skill, label in items:
        worked.setdefault(canonical_subject(subject), {}).setdefault(skill, label or skill)
    return worked


def _subjects_text(worked: dict[str, dict[str, str]]) -> str:
    parts = []
    for subject, skills in list(worked.items())[:_MAX_SUBJECTS]:
        labels = [label[:_LABEL_CHARS] for label in skills.values() if label][:_MAX_SKILLS]
        parts.append(f"{subject} ({', '.join(labels)})" if labels else subject)
    more = len(worked) - _MAX_SUBJECTS
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


async def carried_note(db: AsyncSession, user_id: int, previous_id: int | None, now: datetime) -> str:
    """What the new session starts with (in English: it is for the model), at most NOTE_MAX_BYTES:
    the work done is shortened first, the open exercise and the due reviews always said."""
    worked = await _worked_on(db, user_id, previous_id) if previous_id is not None else {}
    exercise = await open_exercise(db, previous_id) if previous_id is not None else None
    open_work = f"{exercise_line(exercise)} " if exercise is not None else ""
    due = await due_count(db, user_id, now)
    head = "[Session] A new session; earlier messages not shown (memories, tasks and files kept). "
    if due:
        tail = (f"{due} quiz question{'s' if due > 1 else ''} due for review: offer once to send "
                "REVISION (REVIEW) to practise them.")
    else:
        tail = "No question due for review."
    if not worked:
        nothing = "" if open_work else "No quiz or exercise in the last session. "
        return f"{head}{nothing}{open_work}{tail}"
    room = WORK_MAX_BYTES - len(f"{head}Last session's work: . {tail}".encode())
    work = _subjects_text(worked)
    if len(work.encode()) > room:
        work = work.encode()[:room - 3].decode(errors="ignore") + "…"  # "…" is 3 bytes
    return f"{head}Last session's work: {work}. {open_work}{tail}"


async def last_worked_session(db: AsyncSession, user_id: int) -> int | None:
    """The user's latest conversation with anything in it (a message to or from the model, a
    result, a quiz item), among the last few; None when there is none."""
    ids = list(await db.scalars(select(Conversation.id).where(Conversation.user_id == user_id)
                                .order_by(Conversation.id.desc()).limit(_LOOK_BACK)))
    for conversation_id in ids:
        used = exists().where(Message.conversation_id == conversation_id,
                              Message.role.in_(("user", "assistant")))
        results = exists().where(ExerciseResult.conversation_id == conversation_id)
        items = exists().where(QuizItem.conversation_id == conversation_id)
        if await db.scalar(select(used | results | items)):
            return conversation_id
    return None


async def start_session(db: AsyncSession, user_id: int, now: datetime) -> Conversation:
    """Ends the user's active conversation (if any) and opens a new one that starts with the carried
    note. The caller commits."""
    had_one = await db.scalar(select(Conversation.id).where(Conversation.user_id == user_id).limit(1))
    previous_id = await last_worked_session(db, user_id)
    await db.execute(update(Conversation).where(Conversation.user_id == user_id,
                                                Conversation.active.is_(True)).values(active=False))
    fresh = Conversation(user_id=user_id, active=True, created_at=now)
    db.add(fresh)
    await db.flush()
    if had_one is not None:  # a first conversation ever has nothing to carry
        db.add(Message(conversation_id=fresh.id, role="note",
                       content=await carried_note(db, user_id, previous_id, now), created_at=now))
        await db.flush()
    return fresh


async def arrival(db: AsyncSession, user_id: int, now: datetime, idle_s: int,
                  also: Sequence[ColumnElement[bool]] = ()) -> tuple[User, Conversation, list[bool]] | None:
    """The user of a message arriving `now` and its conversation (`current_session`), read in one
    SELECT with the caller's `also` (each on `User.id` and the active `Conversation.id`, an EXISTS
    the caller would otherwise read alone), and their answers; None when the user is gone."""
    found = (await db.execute(
        select(User, Conversation, *also)
        .outerjoin(Conversation, and_(Conversation.user_id == User.id, Conversation.active.is_(True)))
        .where(User.id == user_id).order_by(Conversation.id.desc()).limit(1))).first()
    if found is None:
        return None
    user, conversation, *answers = found
    conversation = await current_session(db, user_id, now, idle_s, active=conversation)
    return user, conversation, [bool(a) for a in answers]


async def current_session(db: AsyncSession, user_id: int, now: datetime, idle_s: int, *,
                          active: Conversation | bool | None = True) -> Conversation:
    """The conversation a message arriving `now` belongs to: the active one, or a new session when
    there is none or the user was silent for `idle_s`. `active`: the active conversation (or None)
    when the caller read it (`arrival`), else True: read here."""
    conversation = active if active is not True else await db.scalar(
        select(Conversation).where(Conversation.user_id == user_id, Conversation.active.is_(True))
        .order_by(Conversation.id.desc()).limit(1))
    if isinstance(conversation, Conversation) and not is_idle(conversation, now, idle_s):
        return conversation
    return await start_session(db, user_id, now)
