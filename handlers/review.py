"""REVISION / REVIEW: a round of the student's quiz items asked again, checked on the server with no
model call (bot.learning.rounds); REVISION NON / REVIEW OFF and REVISION OUI / REVIEW ON
stop and restart the reminders to review.

While a round's question is pending, an option (`2`, `b`, the option's text, `vrai`) answers it; a
short reply that is not an option (`7`, `euh`) gets « Réponds par 1, 2, 3 ou 4 » and changes nothing;
a sentence or a question goes on to the tutor, the question still pending. The handler sits after
the commands, so MENU, PROGRES or NOUVEAU still work in the middle of a round.

An item missed twice in a row is never replayed (bot.learning.reteach): the round hands one such
item to the model once its questions are done (at once when it has none), and the model explains
the idea another way and asks a new question on it. Not on a gentle day (handlers/safety.py).

A round's score says how many questions are still due (a round's count, as the offer at a session's
start and the nudges do), so that the student may go on with REVISION, or on WhatsApp with the
reminders' button « Réviser » (bot.learning.NUDGE_MENU, handlers/buttons.py).

The tutor's quiz answered (handlers/quiz_answer.py), one question due comes right after its verdict,
as a round of one (`weave`), at most WOVEN_MAX a conversation: a student who studies in the evening
reviews in the session they came for, and its score offers the next round. A reply to it that is
not an option goes on to the tutor (« un autre quiz »): it was not asked for.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import select

from bot import safety, school
from bot.channel.context import Incoming
from bot.channel.keywords import keyword
from bot.channel.menus import expired_menu_kind, get_menu, set_menu
from bot.learning import (
    REVIEW_AHEAD,
    REVIEW_KIND,
    ROUND_SIZE,
    WOVEN_MAX,
    Round,
    due_items,
    has_items,
    item_topic,
    new_round,
    pending_item,
    pick_items,
    record_checked,
    reteach_items,
    review_menu,
    round_from_menu,
    round_intro,
    score_line,
)
from bot.learning.quiz import (
    Quiz,
    number_in,
    option_label,
    parse_answer,
    quiz_menu,
    render_quiz,
    render_verdict,
)
from bot.storage.models import Message, PendingMenu, QuizItem
from handlers import turn
from handlers.session_start import review_offer

_WOVEN = "review-woven"  # the state key counting a conversation's questions asked by `weave`
# « Réviser »: the reminders' button, should its tap come as its title alone.
WORDS = frozenset({"REVISION", "REVISIONS", "REVISER", "REVIEW", "REVIEWS"})
ON = frozenset({"OUI", "ON", "YES"})
OFF = frozenset({"NON", "OFF", "NO"})


def command(text: str) -> str | None:
    """"start", "on", "off", or None when the message is not this command."""
    parts = keyword(text).split(" ")
    if not parts or parts[0] not in WORDS or len(parts) > 2:
        return None
    if len(parts) == 1:
        return "start"
    return "on" if parts[1] in ON else "off" if parts[1] in OFF else None


async def handle(msg: Incoming) -> bool:
    if (msg.user.mode or "guest") == "guest":
        return False  # a guest has no quizzes; the word goes on to onboarding or the chat
    wanted = command(msg.text)
    if wanted in ("on", "off"):
        await _nudges(msg, wanted == "on")
        return True
    if wanted == "start":
        await _start(msg)
        return True
    current = round_from_menu(await get_menu(msg.services, msg.conversation.id, db=msg.db))
    if current is None or current.user_id != msg.user.id or current.conversation_id != msg.conversation.id:
        if number_in(msg.text) is not None and await _expired_round(msg):
            await _expired(msg)
            return True
        return False
    return await _answer(msg, current)


# --- showing a question ------------------------------------------------------------------------


def item_quiz(item: QuizItem, conversation_id: int, asked_at: datetime, ttl_s: float) -> Quiz:
    """The item as a quiz, to show and check it with the quiz's own menu and answer parsing."""
    return Quiz(quiz_id=item.quiz_id, quiz_type=item.quiz_type, user_id=item.user_id,
                conversation_id=conversation_id, question=item.question,
                options=tuple(str(o) for o in item.options), correct_index=item.correct_index,
                explanation=item.explanation or "", subject=item.subject, topic=item.skill,
                asked_at=asked_at, expires_at=asked_at + timedelta(seconds=ttl_s))


def render_question(msg: Incoming, quiz: Quiz, position: int, total: int, homework: bool = False) -> str:
    head = (msg.t(f"Devoir {position}/{total}", f"Homework {position}/{total}") if homework
            else msg.t(f"Révision {position}/{total}", f"Review {position}/{total}"))
    menu = render_quiz(quiz, msg.channel, msg.lang)
    return f"📚 {head}\n{menu}" if msg.channel == "whatsapp" else f"{head}\n{menu}"


def not_an_option(msg: Incoming, quiz: Quiz) -> str:
    """What to answer (« Réponds par 1, 2, 3 ou 4 »): the question stays pending."""
    return quiz.kind.retry_hint(quiz.options, msg.lang)


def review_note(quiz: Quiz, chosen: int) -> str:
    """The line the tutor reads on its next turn (in English: it is for the model)."""
    verdict = "correct" if chosen == quiz.correct_index else "wrong"
    return (f"[Review] The student answered the review question \"{quiz.question}\" with "
            f"{option_label(quiz, chosen, 'en')} ({verdict}). Right answer: "
            f"{option_label(quiz, quiz.correct_index, 'en')}. The verdict was already sent to the student.")


def looks_like_an_answer(text: str) -> bool:
    """A short reply (a number, a letter, a word or three) is meant for the question; a sentence
    or a question is for the tutor."""
    return "?" not in text and len(text.split()) <= 3


# --- a round -----------------------------------------------------------------------------------


async def _to_hand_over(msg: Incoming, now: datetime) -> int | None:
    """The item waiting to be taught again that this round gives the model (one at most)."""
    waiting = await reteach_items(msg.db, msg.user.id, now, 1)
    if not waiting or await safety.gentle(msg.db, msg.user.id, now, msg.extra.get(safety.GENTLE)):
        return None
    return waiting[0].id


async def _hand_over(msg: Incoming, item_id: int) -> None:
    """The model's turn, told to teach that item again now (handlers/turn/prompt.py); none when it
    was taught again meanwhile (a model call with nothing to do)."""
    if await pending_item(msg.db, msg.user.id, item_id) is None:
        return
    msg.extra[turn.RETEACH] = item_id
    await turn.handle(msg)


async def _start(msg: Incoming) -> None:
    now = msg.services.clock()
    items, due = await pick_items(msg.db, msg.user.id, now)
    # Room left in the round: the class's own questions the student has not answered yet.
    new = await school.bank_fill(msg.db, msg.user.id, ROUND_SIZE - len(items), now, msg.conversation.id)
    items += new
    handed = await _to_hand_over(msg, now)
    if not items and handed is not None:
        await _hand_over(msg, handed)
        return
    if not items:
        text = msg.t(
            "Rien à revoir pour le moment : tes questions reviendront le moment venu. "
            "Demande-moi un quiz pour continuer à t'entraîner !",
            "Nothing to review right now: your questions will come back when it is time. "
            "Ask me for a quiz to keep practising!",
        ) if await has_items(msg.db, msg.user.id) else msg.t(
            "Tu n'as pas encore de questions à revoir. Demande-moi un quiz (par exemple « un quiz sur "
            "les fractions ») : tes réponses reviendront ici en révision.",
            "You have no questions to review yet. Ask me for a quiz (for instance « a quiz on "
            "fractions »): your answers will come back here for review.",
        )
        await msg.db.commit()
        await msg.reply(text)
        return
    current = new_round(msg.user.id, msg.conversation.id, items, now, reteach=handed)
    ttl_s = msg.services.settings.quiz_ttl_s
    quiz = item_quiz(items[0], msg.conversation.id, now, ttl_s)
    intro = round_intro(len(items), due, msg.lang, len(new))
    text = f"{intro}\n\n{render_question(msg, quiz, 1, len(items))}"
    menu_id = await set_menu(msg.services, msg.conversation.id, REVIEW_KIND, current.to_menu(), ttl_s,
                             db=msg.db)
    await msg.db.commit()
    await msg.reply(menu=quiz_menu(quiz, text, msg.lang, menu_id))


async def weave(msg: Incoming, verdict: str, now: datetime) -> bool:
    """After the verdict on the tutor's quiz, the longest overdue question due asked at once, as a
    round of one (its score offers the next round, `_score`): the student is answering questions
    now, and a round offered waits for a yes. At most WOVEN_MAX a conversation; none on a gentle day.
    False when none is asked: the caller sends the verdict alone."""
    if (msg.user.mode or "guest") == "guest":
        return False
    items = await due_items(msg.db, msg.user.id, now + REVIEW_AHEAD, 1, replay_only=True)
    if not items or await safety.gentle(msg.db, msg.user.id, now, msg.extra.get(safety.GENTLE)):
        return False
    services, conversation_id = msg.services, msg.conversation.id
    session_s = services.settings.learning.session_idle_s  # the count lasts the conversation
    if await services.state.incr(f"{_WOVEN}:{conversation_id}", session_s) > WOVEN_MAX:
        return False
    ttl_s = services.settings.quiz_ttl_s
    quiz = item_quiz(items[0], conversation_id, now, ttl_s)
    intro = msg.t("Et une question à revoir :", "And one question to review:")
    intro = intro if msg.channel == "sms" else f"🔁 {intro}"
    text = f"{verdict}\n\n{intro}\n\n{render_question(msg, quiz, 1, 1)}"
    # A retried delivery of the quiz's answer finds this round pending: `_answer` sends `text` again.
    current = replace(new_round(msg.user.id, conversation_id, items, now), last_inbound=msg.inbound.id,
                      last_reply=text, woven=True)
    menu_id = await set_menu(services, conversation_id, REVIEW_KIND, current.to_menu(), ttl_s, db=msg.db)
    await msg.db.commit()
    await msg.reply(menu=quiz_menu(quiz, text, msg.lang, menu_id))
    return True


async def _answer(msg: Incoming, current: Round) -> bool:
    if current.last_inbound == msg.inbound.id:
        if await _noted(msg):  # a retried delivery of an answer already recorded: the same reply
            await msg.db.commit()
            await msg.reply(current.last_reply)
            return True
        # The shared state got the next question before the commit that never happened.
        current = round_from_menu(await _stored_menu(msg)) or current
    if current.done:
        return False
    services, now = msg.services, msg.services.clock()
    ttl_s = services.settings.quiz_ttl_s
    item = await msg.db.get(QuizItem, current.item_id)
    if item is None or item.user_id != msg.user.id:
        return False
    quiz = item_quiz(item, msg.conversation.id, current.asked_at, ttl_s)
    if now >= quiz.expires_at:
        if number_in(msg.text) is None:
            return False
        await _expired(msg)
        return True
    chosen = parse_answer(quiz, msg.text)
    if chosen is None:
        if current.woven or not looks_like_an_answer(msg.text):
            return False  # for the tutor; a question nobody asked for does not hold up « un quiz ! »
        await msg.db.commit()
        await msg.reply(not_an_option(msg, quiz))
        return True
    correct = chosen == quiz.correct_index
    await record_checked(msg.db, services.settings.learning, user_id=msg.user.id,
                         conversation_id=msg.conversation.id, item=item, subject=item.subject,
                         topic=await item_topic(msg.db, item), correct=correct,
                         seconds=max(0.0, (now - current.asked_at).total_seconds()),
                         source="review" if current.assignment is None else "assignment", now=now,
                         chosen=chosen)
    msg.db.add(Message(conversation_id=msg.conversation.id, role="note", content=review_note(quiz, chosen),
                       inbound_id=msg.inbound.id, created_at=now))
    following = current.answered(correct, msg.inbound.id, "", now)
    if current.assignment is not None:  # the teacher's assignment: its score, in the same transaction
        await school.answered(msg.db, current.assignment, msg.user.id, correct, following.done, now)
    after, question, more = await _next(msg, following, now)
    reply = f"{render_verdict(quiz, chosen, msg.lang, msg.channel)}\n\n{after}"
    following = replace(following, last_reply=reply)
    # The round's next state is written in the same transaction as the answer's records.
    menu_id = await set_menu(services, msg.conversation.id, REVIEW_KIND, following.to_menu(), ttl_s,
                             db=msg.db)
    await msg.db.commit()
    if question is not None:
        await msg.reply(menu=quiz_menu(question, reply, msg.lang, menu_id))
        return True
    if more and msg.channel == "whatsapp":  # the next round one tap away: « Réviser » is REVISION
        await msg.reply(menu=review_menu(reply, msg.lang))
    else:
        await msg.reply(reply)
    if following.reteach is not None:  # the round is over: the model teaches the item it kept aside
        await _hand_over(msg, following.reteach)
    return True


async def _next(msg: Incoming, following: Round, now: datetime) -> tuple[str, Quiz | None, int]:
    """The next question and its quiz, or the round's score once it is over (no quiz, and the
    count of the next round it offers, 0 for none)."""
    total = len(following.items)
    item = None if following.done else await msg.db.get(QuizItem, following.item_id)
    if item is None:
        score, more = await _score(msg, following, now)
        return score, None, more
    quiz = item_quiz(item, msg.conversation.id, now, msg.services.settings.quiz_ttl_s)
    return render_question(msg, quiz, following.index + 1, total, following.assignment is not None), quiz, 0


async def _score(msg: Incoming, over: Round, now: datetime) -> tuple[str, int]:
    """The round's score, then the next round's offer while questions are still due (and its
    count): a student who has just answered five is there to answer five more (a teacher's
    assignment, an item kept aside to be taught again and a gentle day offer none)."""
    homework = over.assignment is not None
    score = score_line(over.right, len(over.items), msg.lang, homework)
    gentle = msg.extra.get(safety.GENTLE)
    if homework or over.reteach is not None or await safety.gentle(msg.db, msg.user.id, now, gentle):
        return score, 0
    ahead = now + REVIEW_AHEAD  # as REVISION's next round picks them (bot.learning.rounds)
    due = len(await due_items(msg.db, msg.user.id, ahead, ROUND_SIZE, replay_only=True))
    return (f"{score}\n\n{review_offer(msg, due)}" if due else score), due


async def _noted(msg: Incoming) -> bool:
    found = await msg.db.scalar(select(Message.id).where(
        Message.conversation_id == msg.conversation.id, Message.inbound_id == msg.inbound.id,
        Message.role == "note").limit(1))
    return found is not None


async def _stored_menu(msg: Incoming) -> dict[str, object] | None:
    row = await msg.db.scalar(select(PendingMenu).where(PendingMenu.conversation_id == msg.conversation.id))
    return None if row is None else dict(row.payload)


async def _expired_round(msg: Incoming) -> bool:
    """A round was left unfinished and has expired (a finished one expiring is nothing to tell)."""
    if await expired_menu_kind(msg.services, msg.conversation.id, db=msg.db) != REVIEW_KIND:
        return False
    stored = round_from_menu(await _stored_menu(msg))
    return stored is None or not stored.done


async def _expired(msg: Incoming) -> None:
    await msg.db.commit()
    hint = msg.t("Cette révision a expiré. Écris REVISION pour en commencer une autre.",
                 "This review has expired. Send REVIEW to start another one.")
    await msg.reply(hint if msg.channel == "sms" else f"⏰ {hint}")


async def _nudges(msg: Incoming, wanted: bool) -> None:
    msg.user.review_nudges = wanted
    await msg.db.commit()
    await msg.reply(msg.t(
        "C'est noté : je te rappellerai, au plus une fois par jour, quand des questions sont à revoir. "
        "Écris REVISION NON pour arrêter.",
        "Done: I will remind you, at most once a day, when questions are due for review. "
        "Send REVIEW OFF to stop.",
    ) if wanted else msg.t(
        "C'est noté : plus de rappels pour réviser. Écris REVISION quand tu veux réviser, "
        "ou REVISION OUI pour réactiver les rappels.",
        "Done: no more review reminders. Send REVIEW whenever you want to review, "
        "or REVIEW ON to turn the reminders back on.",
    ))
