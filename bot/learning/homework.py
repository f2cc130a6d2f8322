"""The open exercise a session leaves: the last exercise text the student gave (typed, or read from
a photo) or the tutor set, and how far they got with it, so that homework started at noon is still
known at 19:00 when the 6 h rollover has opened a new session (bot.learning.sessions).

Found in the session's messages by their words alone, no model call: a student's message is an
exercise when it names one (« exercice », « résous », « calcule », « homework »…) and carries a
number, an equation or a full sentence, or when it holds a photo's text; a tutor's message when one
of its lines sets one, taken from that line on. A session with no exercise of its own keeps the
one its carried note named: one worked on over several sessions stays known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from unidecode import unidecode

from bot.storage.models import ExerciseResult, Message

__all__ = ["EXERCISE_MAX_BYTES", "OpenExercise", "clip_bytes", "exercise_in", "exercise_line",
           "open_exercise"]

EXERCISE_MAX_BYTES = 300
STEP_MAX_BYTES = 160
NOTE_PREFIX = "[Session]"  # how the carried note starts (bot.learning.sessions)
_MIN_CHARS = 40  # an exercise with no digit nor sign is at least a sentence
_WORDS = re.compile(
    r"\b(exercices?|exos?|devoirs?|problemes?|resou\w*|resoud\w*|calcul\w*|demontr\w*|montre[rz]? que|"
    r"simplifi\w*|factoris\w*|developp\w*|conjugu\w*|tradui\w*|complete[rz]?|exercises?|homework|"
    r"solve|calculate|compute|prove)\b")
_MATHS = re.compile(r"\d|=")
_PHOTO = re.compile(r"^\[(?:Texte lu sur la photo|Text read from the photo)[^\n]*\]\n", re.MULTILINE)
_FILES = re.compile(r"\n*\[(?:La personne a envoyé ces fichiers|The person sent these files).*", re.DOTALL)
_CARRIED = re.compile(r"Open exercise \([^)]*\): «(.*?)»")


@dataclass(frozen=True)
class OpenExercise:
    text: str  # at most EXERCISE_MAX_BYTES
    by: str  # "student" | "tutor" | "earlier" (carried from an earlier session's note)
    replies: int  # the student's messages after it
    right: int  # answers recorded after it (checked or reported)
    wrong: int
    last_step: str  # the tutor's last message after it, at most STEP_MAX_BYTES


def clip_bytes(text: str, limit: int) -> str:
    """`text` in at most `limit` bytes of UTF-8, cut on a character boundary, « … » when cut."""
    text = " ".join(text.split())
    if len(text.encode()) <= limit:
        return text
    return text.encode()[:limit - 3].decode(errors="ignore").rstrip() + "…"  # "…" is 3 bytes


def _fold(text: str) -> str:
    return unidecode(text).lower()


def _exercise_like(text: str) -> bool:
    return bool(_WORDS.search(_fold(text))) and (bool(_MATHS.search(text)) or len(text) >= _MIN_CHARS)


def _from_student(content: str) -> str:
    photo = _PHOTO.search(content)
    if photo is not None:  # the photo of a page of homework: what was read on it
        return content[photo.end():].strip()
    text = _FILES.sub("", content).strip()
    return text if _exercise_like(text) else ""


def _from_tutor(content: str) -> str:
    """From the first line that names an exercise to the end (the explanation before it left out)."""
    lines = content.splitlines()
    for n, line in enumerate(lines):
        if _WORDS.search(_fold(line)):
            rest = "\n".join(lines[n:]).strip()
            if _exercise_like(rest):
                return rest
    return ""


def exercise_in(role: str, content: str) -> tuple[str, str] | None:
    """(text, by) when a message of `role` gives or sets an exercise, or a session's note carries
    one; None otherwise."""
    if role == "user":
        text, by = _from_student(content), "student"
    elif role == "assistant":
        text, by = _from_tutor(content), "tutor"
    elif role == "note" and content.startswith(NOTE_PREFIX):
        carried = _CARRIED.search(content)
        text, by = (carried.group(1) if carried else ""), "earlier"
    else:
        return None
    return (text, by) if text else None


async def open_exercise(db: AsyncSession, conversation_id: int) -> OpenExercise | None:
    """The session's last exercise and its progress, or None when it had none."""
    rows = list(await db.scalars(select(Message).where(
        Message.conversation_id == conversation_id, Message.role.in_(("user", "assistant", "note")))
        .order_by(Message.id)))
    for n in range(len(rows) - 1, -1, -1):
        found = exercise_in(rows[n].role, rows[n].content or "")
        if found is not None:
            return await _progress(db, conversation_id, rows[n], rows[n + 1:], *found)
    return None


async def _progress(db: AsyncSession, conversation_id: int, start: Message, after: list[Message],
                    text: str, by: str) -> OpenExercise:
    since: datetime = start.created_at
    results = list(await db.scalars(select(ExerciseResult.correct).where(
        ExerciseResult.conversation_id == conversation_id, ExerciseResult.created_at >= since)))
    steps = [m.content or "" for m in after if m.role == "assistant" and (m.content or "").strip()]
    return OpenExercise(
        text=clip_bytes(text, EXERCISE_MAX_BYTES), by=by,
        replies=sum(1 for m in after if m.role == "user"),
        right=sum(1 for r in results if r), wrong=sum(1 for r in results if not r),
        last_step=clip_bytes(steps[-1], STEP_MAX_BYTES) if steps else "")


def exercise_line(exercise: OpenExercise) -> str:
    """The note's sentence on it (in English: it is for the model). Its « » are how the next
    session finds it again (`_CARRIED`): the text never holds a « » of its own."""
    by = {"student": "given by the student", "tutor": "set by the tutor",
          "earlier": "still open from an earlier session"}[exercise.by]
    text = exercise.text.replace("«", '"').replace("»", '"')
    progress = [f"{exercise.replies} student repl{'ies' if exercise.replies != 1 else 'y'} since"]
    if exercise.right or exercise.wrong:
        progress.append(f"{exercise.right} answer(s) right, {exercise.wrong} wrong")
    if exercise.last_step:
        step = exercise.last_step.replace("«", '"').replace("»", '"')
        progress.append(f"the tutor's last message: \"{step}\"")
    return (f"Open exercise ({by}): «{text}». Progress: {'; '.join(progress)}. If the student comes "
            "back to it, pick it up where it stopped.")
