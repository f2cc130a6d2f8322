"""Work carries over: the session note carries the open exercise (the last exercise text the student
gave or the tutor set, at most 300 bytes cut on a character boundary) and how far it got, across the
6 h rollover and from session to session; NOUVEAU twice keeps the last non-empty session's note."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from bot.learning.homework import EXERCISE_MAX_BYTES, OpenExercise, clip_bytes, exercise_in, exercise_line
from bot.learning.sessions import NOTE_MAX_BYTES
from bot.storage.models import Conversation, Message
from tests.support.pedagogy import STUDENT, ask_quiz, say

NOON = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)  # Abidjan is on UTC
HOMEWORK = "Mon devoir : résous 2x + 3 = 11 puis calcule x² - 1"


def session_note(request: dict[str, Any]) -> str:
    [note] = [str(m["content"]) for m in request["messages"]
              if m["role"] == "system" and str(m["content"]).startswith("[Session]")]
    assert len(note.encode()) <= NOTE_MAX_BYTES
    return note


async def test_homework_started_at_noon_is_in_the_prompt_at_19h(harness: Any) -> None:
    h = harness
    h.clock.now = NOON
    await h.make_user(STUDENT, mode="child")
    for said, answer in (("Bonjour", "Bonjour ! Envoie-moi ton exercice."),
                         (HOMEWORK, "Commence par isoler 2x : que vaut 2x ?"),
                         ("2x = 8", "Bien ! Et donc x = ?")):
        h.llm.push_text(answer)
        await say(h, STUDENT, said)
        h.clock.advance(minutes=2)
    h.clock.now = NOON.replace(hour=19)  # after the 6 h rollover: a new session
    h.llm.push_text("Re-bonjour ! On reprend ton devoir ?")
    await say(h, STUDENT, "Salut")
    note = session_note(h.llm.requests[-1])
    assert f"Open exercise (given by the student): «{HOMEWORK}»" in note
    assert "Progress: 1 student reply since; the tutor's last message: \"Bien ! Et donc x = ?\"" in note
    assert "No quiz or exercise" not in note
    # Worked on in that session without being written again, it is still carried the next day.
    h.llm.push_text("Bravo ! Et x² - 1, ça fait combien ?")
    await say(h, STUDENT, "x = 4")
    h.clock.advance(days=1)
    h.llm.push_text("Bonjour !")
    await say(h, STUDENT, "Bonjour")
    note = session_note(h.llm.requests[-1])
    assert f"Open exercise (still open from an earlier session): «{HOMEWORK}»" in note
    assert "2 student replies since; the tutor's last message: " in note
    assert "\"Bravo ! Et x² - 1, ça fait combien ?\"" in note


async def test_nouveau_twice_keeps_the_last_non_empty_sessions_note(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    assert (await say(h, STUDENT, "2"))[0].startswith("✅")
    h.llm.push_text("Très bien : on regarde la formule de l'aire.")
    await say(h, STUDENT, "Exercice 3 page 45 : calcule l'aire du triangle")
    for _ in range(2):
        [text] = await say(h, STUDENT, "NOUVEAU")
        assert text.startswith("Nouvelle conversation")
    h.llm.push_text("De quoi parlons-nous ?")
    await say(h, STUDENT, "Salut")
    note = session_note(h.llm.requests[-1])
    assert "Last session's work: Mathématiques (multiplication)." in note
    assert "Open exercise (given by the student): «Exercice 3 page 45 : calcule l'aire du triangle»" in note
    async with h.services.sessions() as db:
        conversations = list(await db.scalars(select(Conversation).order_by(Conversation.id)))
        notes = list(await db.scalars(select(Message.content).where(Message.role == "note",
                                                                    Message.content.like("[Session]%"))
                                      .order_by(Message.id)))
    assert [c.active for c in conversations] == [False, False, True]
    assert len(notes) == 2 and notes[0] == notes[1]  # the second NOUVEAU kept the first one's note


def test_an_exercise_is_found_in_what_the_student_gave_or_the_tutor_set() -> None:
    assert exercise_in("user", "Résous l'équation 3x - 2 = 7") == ("Résous l'équation 3x - 2 = 7", "student")
    assert exercise_in("user", "Help me with my homework: solve 2x = 10") is not None
    photo = ("\n\n[Texte lu sur la photo devoir.jpg (OCR, peut contenir des erreurs de lecture) :]\n"
             "Ex 2 : 5/3 - 1/6")
    assert exercise_in("user", photo) == ("Ex 2 : 5/3 - 1/6", "student")
    tutor = "Bravo, c'est juste !\nÀ toi maintenant : calcule 2/3 + 1/6."
    assert exercise_in("assistant", tutor) == ("À toi maintenant : calcule 2/3 + 1/6.", "tutor")
    for role, plain in (("user", "je n'arrive pas à calculer"), ("user", "Fais-moi un quiz"),
                        ("assistant", "Une fraction est une partie d'un tout : 1/2, c'est une moitié."),
                        ("note", "[Quiz] The student answered…"), ("tool", "résous 2x = 4")):
        assert exercise_in(role, plain) is None, plain


def test_the_exercise_is_cut_at_300_bytes_on_a_character_boundary() -> None:
    long = "Calcule " + "é" * 200 + " = ?"
    cut = clip_bytes(long, EXERCISE_MAX_BYTES)
    assert len(cut.encode()) <= EXERCISE_MAX_BYTES and cut.endswith("…") and cut.startswith("Calcule éé")
    assert cut.encode().decode() == cut and "\ufffd" not in cut
    assert len(cut.encode()) >= EXERCISE_MAX_BYTES - 4  # cut at the last whole character, not before
    assert clip_bytes("  court\n exercice ", EXERCISE_MAX_BYTES) == "court exercice"
    line = exercise_line(OpenExercise(text=cut, by="tutor", replies=0, right=1, wrong=2, last_step=""))
    assert f"Open exercise (set by the tutor): «{cut}»" in line and "1 answer(s) right, 2 wrong" in line
    # A « » of its own would end the text early when the next session reads the note: made plain.
    quoted = exercise_line(OpenExercise(text="Explique « le lion »", by="student", replies=1, right=0,
                                        wrong=0, last_step=""))
    assert exercise_in("note", f"[Session] x. {quoted}") == ('Explique " le lion "', "earlier")
