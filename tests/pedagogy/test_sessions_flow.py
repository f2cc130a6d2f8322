"""Sessions end to end: a conversation ends after SESSION_IDLE_S without a message from the student,
the next message opens a new one with a carried-over note instead of the old messages, the quiz cap
is per session, due reviews are offered once, and the prompt stays flat over weeks of daily use."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot.storage.models import Conversation, ExerciseResult, Message, QuizItem, User
from tests.support.pedagogy import MCQ_ARGS, STUDENT, ask_quiz, say

IDLE_S = 21600  # SESSION_IDLE_S's default


def system_texts(request: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in request["messages"] if m["role"] == "system"]


def conversation_text(request: dict[str, Any]) -> str:
    """What the request carries of the conversation (the system prompt aside)."""
    return json.dumps(request["messages"][1:], ensure_ascii=False)


async def conversations(h: Any) -> list[Conversation]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(Conversation).order_by(Conversation.id))).all())


async def three_quizzes_then_a_refused_one(h: Any) -> None:
    await ask_quiz(h)
    for n in (2, 3):
        texts = await ask_quiz(h, args={**MCQ_ARGS, "question": f"Combien font {n} × 5 ?"}, first=False)
        assert any("1️⃣" in t for t in texts)
    texts = await ask_quiz(h, args={**MCQ_ARGS, "question": "Combien font 4 × 5 ?"}, first=False)
    assert not any("4 × 5" in t for t in texts)  # the 4th is refused: no menu
    refusal = json.dumps(h.llm.requests[-1]["messages"][-1], ensure_ascii=False)
    assert "this session already had 3 quizzes" in refusal and "NOUVEAU" in refusal and "6 h" in refusal


async def test_after_session_idle_a_quiz_is_allowed_again_without_the_old_messages(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await three_quizzes_then_a_refused_one(h)
    h.clock.advance(seconds=IDLE_S + 1)
    h.llm.push_text("Re-bonjour !")
    await say(h, STUDENT, "Bonjour, je reviens")
    first = h.llm.requests[-1]
    carried = conversation_text(first)
    assert "Fais-moi un quiz" not in carried and "Combien font" not in carried
    [note] = [t for t in system_texts(first) if t.startswith("[Session]")]
    assert "earlier messages not shown" in note and len(note.encode()) <= 500
    old, new = await conversations(h)
    assert (old.active, new.active) == (False, True) and new.quiz_count == 0
    texts = await ask_quiz(h, args={**MCQ_ARGS, "question": "Combien font 6 × 5 ?"}, first=False)
    assert any("6 × 5" in t and "1️⃣" in t for t in texts)  # a new session: quizzes again
    assert "Combien font 3 × 5" not in conversation_text(h.llm.requests[-1])
    # Results stay the student's across sessions.
    assert (await say(h, STUDENT, "2"))[0].startswith("✅")
    async with h.services.sessions() as db:
        assert len((await db.scalars(select(ExerciseResult))).all()) == 1


async def test_a_message_before_session_idle_stays_in_the_session(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await say(h, STUDENT, "Bonjour")
    for _ in range(3):  # the idle time counts from the last message, not from the first
        h.clock.advance(seconds=IDLE_S - 60)
        await say(h, STUDENT, "Toujours là")
    assert len(await conversations(h)) == 1
    assert conversation_text(h.llm.requests[-1]).count("Toujours là") == 3


async def test_the_carried_note_names_last_session_work_and_the_reviews_are_offered_once(
    harness: Any,
) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child")
    await say(h, STUDENT, "Bonjour")
    [conv] = await conversations(h)
    now = h.clock()
    async with h.services.sessions() as db:
        for subject, topic in (("maths", "Les fractions"), ("Mathématiques", "les Fractions"),
                               ("francais", "Le passé composé")):
            db.add(ExerciseResult(user_id=user.id, conversation_id=conv.id, subject=subject, topic=topic,
                                  correct=False, source="quiz", created_at=now))
        for n in range(2):
            db.add(QuizItem(user_id=user.id, conversation_id=conv.id, quiz_id=f"q{n}", quiz_type="mcq",
                            question=f"Q{n}", options=["a", "b"], correct_index=0, subject="SVT",
                            skill="la cellule", last_correct=False, answers=1, lapses=1,
                            due_at=now + timedelta(hours=20), created_at=now))
        await db.commit()
    h.clock.advance(hours=24)
    h.llm.push_text("Bonjour, on reprend ?")
    texts = await say(h, STUDENT, "Salut")
    assert texts == ["Bonjour, on reprend ?\n\n📝 2 questions à revoir — écris REVISION"]  # one message
    [note] = [t for t in system_texts(h.llm.requests[-1]) if t.startswith("[Session]")]
    assert "Mathématiques (Les fractions)" in note and "Français (Le passé composé)" in note
    assert "SVT (la cellule)" in note and "2 quiz questions due for review" in note
    assert len(note.encode()) <= 500
    # Offered once: the session's next message gets the answer only.
    h.llm.push_text("Très bien.")
    assert await say(h, STUDENT, "D'accord") == ["Très bien."]
    async with h.services.sessions() as db:
        notes = (await db.scalars(select(Message).where(Message.role == "note"))).all()
    assert len(notes) == 1


async def test_the_offer_on_sms_and_in_english(harness: Any) -> None:
    h = harness
    user = await h.make_user(STUDENT, mode="child", language="en", last_channel="sms")
    async with h.services.sessions() as db:
        db.add(QuizItem(user_id=user.id, quiz_id="q1", quiz_type="tf", question="Q",
                        options=["True", "False"], correct_index=0,
                        due_at=h.clock() - timedelta(hours=1), created_at=h.clock()))
        await db.commit()
    h.llm.push_text("Hello!")
    # Short enough that the dash costs no more segments (bot.channel.formatting.to_sms): kept.
    assert await say(h, STUDENT, "Hi", channel="sms") == ["Hello!\n\n1 question to review — send REVIEW"]


async def test_nouveau_opens_a_session_at_once_with_the_note(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    [text] = await say(h, STUDENT, "NOUVEAU")
    assert text.startswith("Nouvelle conversation")
    h.clock.advance(seconds=IDLE_S + 1)  # a session no message reached yet is not ended again
    h.llm.push_text("De quoi parlons-nous ?")
    await say(h, STUDENT, "Salut")
    request = h.llm.requests[-1]
    assert "Fais-moi un quiz" not in conversation_text(request)
    [note] = [t for t in system_texts(request) if t.startswith("[Session]")]
    assert "No question due for review" in note
    assert [c.active for c in await conversations(h)] == [False, True]


@pytest.mark.one_backend  # the request's size does not depend on the backend
async def test_the_prompt_stays_flat_over_thirty_days_of_daily_use(make_harness: Any) -> None:
    """Day 1 and day 30 send the same plain question through the real message path; with the
    history of one session only, the request (its bytes, the prompt's size) stays within 20 %."""
    h = await make_harness(USER_MAX_MESSAGES_PER_MINUTE="1000")
    await h.make_user(STUDENT, mode="child", school_level="4e", credit_balance=1_000_000)
    sizes: list[int] = []
    for day in range(30):
        h.llm.push_text("Bonjour ! On révise quoi aujourd'hui ?")
        await say(h, STUDENT, "Bonjour")
        h.llm.push_tool_calls(("interactive_quiz", {**MCQ_ARGS, "question": f"Jour {day} : 3 × 5 ?"}))
        h.llm.push_text("À toi !")
        await say(h, STUDENT, "Un quiz de maths")
        h.llm.push_text("Une fraction est une partie d'un tout : 1/2, c'est une moitié. " * 4)
        await say(h, STUDENT, "C'est quoi une fraction ?")
        sizes.append(len(json.dumps(h.llm.requests[-1], ensure_ascii=False).encode()))
        h.clock.advance(days=1)
    async with h.services.sessions() as db:
        user = await db.scalar(select(User).where(User.phone == STUDENT))
        assert user is not None
        assert user.credit_balance > 0
    # Without sessions day 60 sent about 9 times day 1 (86 kB against 9 kB): the whole history; day
    # 30 about 5 times.
    assert sizes[-1] <= sizes[0] * 1.2, sizes
    assert len(await conversations(h)) == 30


async def test_the_carried_note_stays_short_in_the_worst_case(harness: Any) -> None:
    from bot.learning import carried_note

    h = harness
    user = await h.make_user(STUDENT, mode="child")
    await say(h, STUDENT, "Bonjour")
    [conv] = await conversations(h)
    now = h.clock()
    async with h.services.sessions() as db:
        for n in range(40):
            db.add(ExerciseResult(user_id=user.id, conversation_id=conv.id, subject=f"Matière {n}",
                                  topic=f"Une très longue compétence numéro {n} " + "é" * 150,
                                  correct=True, source="report", verified=False, created_at=now))
            db.add(ExerciseResult(user_id=user.id, conversation_id=conv.id, subject="Physique",
                                  topic=f"chapitre {n} " + "ç" * 150, correct=True, created_at=now))
        for n in range(30):
            db.add(QuizItem(user_id=user.id, quiz_id=f"w{n}", quiz_type="tf", question="Q",
                            options=["V", "F"], correct_index=0, due_at=now, created_at=now))
        await db.commit()
        note = await carried_note(db, user.id, conv.id, now)
    assert note.startswith("[Session]") and len(note.encode()) <= 500
    assert "30 quiz questions due for review" in note
    assert "Autre (" in note and "Physique-Chimie (" in note  # unknown names fall under « Autre »
