"""A reference learner's week through the real message path: WhatsApp messages per learner message
and what the week costs in messages.

Five evening sessions of eight messages each (questions, quizzes and their answers, a REVISION
round, a PDF, PROGRES) are posted as Twilio's signed webhooks to the whole bot (tests/support's
harness: the real app, pipeline and handler chain on a SQLite file, Twilio and the model stood in
by local servers speaking their wire formats, the model's turns scripted). What is counted is what
the Twilio stand-in was asked to send to the learner: each such message is billed. Deterministic:
the same code gives the same counts. Run: `.venv/bin/python -m bench.cost --week`.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

LEARNER = "+2250700000042"  # Côte d'Ivoire: Meta's "Rest of Africa" price group
MONDAY_EVENING = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)  # Abidjan is UTC all year
SESSIONS = 5
TURNS_PER_SESSION = 8
WEEKS_PER_MONTH = 30 / 7

# --- what a message costs: one function, so that a rate table can take its place ---------------
# Twilio's fee per WhatsApp message, sent or received: $0.005 (twilio.com/en-us/whatsapp/pricing).
TWILIO_PER_WHATSAPP_MESSAGE_USD = 0.005
# Meta's fee per message the learner receives, "Rest of Africa" price group (Côte d'Ivoire, Senegal,
# Cameroon…): since 1 Oct 2026 a free-form (service) message inside the 24 h window is billed at the
# market's utility rate, about $0.004 there, as a utility template is (Meta's pricing page,
# developers.facebook.com/documentation/business-messaging/whatsapp/pricing, as reported by YCloud's
# and ChakraHQ's notes on the change). The first 1,000 service messages a month per business number
# are free: shared by every learner, left out. Meta bills nothing for the messages received.
META_PER_MESSAGE_REST_OF_AFRICA_USD = 0.004
PRICES = (f"Twilio ${TWILIO_PER_WHATSAPP_MESSAGE_USD} per WhatsApp message in or out, Meta "
          f"${META_PER_MESSAGE_REST_OF_AFRICA_USD} per message sent (Rest of Africa, since 1 Oct 2026)")


def message_cost_usd(inbound: int, outbound: int) -> float:
    """What `inbound` received and `outbound` sent WhatsApp messages cost, in US dollars."""
    return (inbound * TWILIO_PER_WHATSAPP_MESSAGE_USD
            + outbound * (TWILIO_PER_WHATSAPP_MESSAGE_USD + META_PER_MESSAGE_REST_OF_AFRICA_USD))


# --- the model's turns, scripted --------------------------------------------------------------

LESSON_PARTS = (
    ("Ce qu'est une fraction", "Une fraction dit en combien de parts égales on coupe un tout et combien "
                               "de ces parts on prend. "),
    ("Le numérateur et le dénominateur", "Le nombre du haut compte les parts prises, celui du bas les "
                                         "parts du tout. "),
    ("Comparer deux fractions", "Avec le même dénominateur, la plus grande est celle qui a le plus grand "
                                "numérateur. "),
    ("Additionner", "On met d'abord les deux fractions au même dénominateur, puis on ajoute les "
                    "numérateurs. "),
    ("À retenir", "Une fraction peut aussi s'écrire comme une division, et 1/2 vaut 0,5. "))


def _lesson(repeat: int) -> str:
    return "\n\n".join(f"**{title}.** " + sentence * repeat for title, sentence in LESSON_PARTS)


# The prompt asks for short messages: most lessons fit one WhatsApp message, one a week does not.
LESSON, LONG_LESSON = _lesson(2), _lesson(4)
SHORT = ("Le dénominateur est le nombre sous la barre : il dit en combien de parts égales on a coupé "
         "le tout. Dans 3/4, c'est 4 : le gâteau est coupé en quatre parts.")
MEDIUM = ("Bonne question ! " + "Pour simplifier une fraction, on divise le haut et le bas par le même "
          "nombre, leur plus grand diviseur commun. " * 3 + "\n\nExemple : 6/8 = 3/4, en divisant par 2.")


def mcq(question: str, options: list[str], right: int, topic: str) -> dict[str, Any]:
    return {"question": question, "options": options, "correct_index": right,
            "explanation": f"La bonne réponse est {options[right]}.", "subject": "Maths", "topic": topic}


def true_false(statement: str, correct: bool, topic: str) -> dict[str, Any]:
    return {"statement": statement, "correct": correct, "explanation": "Voir la leçon.", "subject": "Maths",
            "topic": topic}


PDF = {"title": "Fiche : les fractions", "markdown": LESSON}


@dataclass
class Turn:
    """One learner message and, when it reaches the model, what the model does."""

    text: str
    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: str | None = None  # the model's text; None: no model call expected


def _quiz(ask: str, tool: str, args: dict[str, Any], reply: str) -> list[Turn]:
    return [Turn(ask, [(tool, args)], "À toi de jouer !"), Turn(reply)]


def week() -> list[list[Turn]]:
    """Five sessions of eight learner messages."""
    return [
        [Turn("Bonsoir", answer="Bonsoir ! On travaille quoi ce soir ?"),
         Turn("Explique-moi les fractions", answer=LESSON),
         *_quiz("Fais-moi un quiz", "interactive_quiz",
                mcq("Combien font 1/2 + 1/4 ?", ["3/4", "2/6", "1/8"], 0, "addition de fractions"), "1"),
         *_quiz("Un autre", "true_false_quiz", true_false("2/4 est plus grand que 1/2.", False,
                                                          "comparer des fractions"), "1"),
         Turn("C'est quoi le dénominateur ?", answer=SHORT),
         Turn("PROGRES")],
        [Turn("Bonsoir", answer="Bonsoir ! Prêt pour les fractions ?"),
         Turn("REVISION"), Turn("2"),
         Turn("Comment on simplifie une fraction ?", answer=MEDIUM),
         *_quiz("Un quiz stp", "interactive_quiz",
                mcq("Simplifie 6/8.", ["3/4", "2/3", "6/4", "1/2"], 0, "simplifier une fraction"), "2"),
         Turn("Merci, et 10/15 ?", answer=SHORT), Turn("Ok merci", answer="Avec plaisir, à demain !")],
        [Turn("Salut", answer="Salut ! On reprend ?"),
         Turn("Fais-moi une fiche en PDF sur les fractions", [("generate_pdf", PDF)],
              "Voici ta fiche : relis-la avant le contrôle."),
         Turn("Explique encore l'addition", answer=LONG_LESSON),
         *_quiz("Quiz", "interactive_quiz",
                mcq("Combien font 1/3 + 1/3 ?", ["2/6", "2/3", "1/9"], 1, "addition de fractions"), "2"),
         *_quiz("Encore", "true_false_quiz", true_false("3/3 vaut 1.", True, "ce qu'est une fraction"), "1"),
         Turn("PROGRES")],
        [Turn("Bonsoir", answer="Bonsoir !"),
         Turn("REVISION"), Turn("1"), Turn("2"), Turn("1"),  # a round of three
         Turn("Pourquoi on met au même dénominateur ?", answer=MEDIUM),
         *_quiz("Un quiz", "interactive_quiz",
                mcq("Combien font 2/5 + 1/5 ?", ["3/10", "3/5", "2/25"], 1, "addition de fractions"), "2")],
        [Turn("Bonjour", answer="Bonjour ! Dernière séance de la semaine."),
         Turn("Explique-moi les fractions décimales", answer=LESSON),
         *_quiz("Quiz", "interactive_quiz",
                mcq("0,5 s'écrit :", ["1/5", "1/2", "5/2"], 1, "fractions décimales"), "2"),
         *_quiz("Un autre", "true_false_quiz", true_false("1/4 = 0,25.", True, "fractions décimales"), "1"),
         Turn("Merci pour la semaine", answer="Bravo pour ta semaine !"),
         Turn("PROGRES")],
    ]


@dataclass
class Week:
    """What the week sent: per learner message, the WhatsApp messages it brought."""

    learner_messages: int = 0
    per_turn: list[tuple[str, int]] = field(default_factory=list)
    templates: int = 0

    @property
    def outbound(self) -> int:
        return sum(n for _, n in self.per_turn)

    @property
    def per_message(self) -> float:
        return self.outbound / self.learner_messages

    def cost_usd(self) -> float:
        return message_cost_usd(self.learner_messages, self.outbound)

    def month_usd(self) -> float:
        return self.cost_usd() * WEEKS_PER_MONTH


async def replay(h: Any) -> Week:
    """Posts the reference week to harness `h` (tests/support/harness.py) and counts what it sent."""
    from sqlalchemy import update

    from bot.storage.models import User

    user = await h.make_user(LEARNER, mode="child", school_level="CM2",
                             created_at=MONDAY_EVENING - timedelta(days=7))
    async with h.services.sessions() as db:  # their week starts here, not at the harness's clock
        await db.execute(update(User).where(User.id == user.id).values(
            last_inbound_at=None, last_whatsapp_inbound_at=None))
        await db.commit()
    result = Week()
    for day, session in enumerate(week()):
        h.clock.now = MONDAY_EVENING + timedelta(days=day)
        for turn in session:
            h.clock.advance(seconds=90)
            before = len(h.twilio.to(LEARNER))
            for tool in turn.tools:
                h.llm.push_tool_calls(tool)
            if turn.answer is not None:
                h.llm.push_text(turn.answer)
            status, _ = await h.inbound(LEARNER, turn.text)
            assert status == 200, status
            await h.settle(timeout_s=60)
            sent = h.twilio.to(LEARNER)[before:]
            result.learner_messages += 1
            result.templates += sum(1 for m in sent if m.get("ContentSid") and not _session_content(h, m))
            result.per_turn.append((turn.text, len(sent)))
    return result


def _session_content(h: Any, message: dict[str, Any]) -> bool:
    """A content sent inside the window (buttons, a list) rather than an approved template."""
    return message.get("ContentSid") != h.settings.twilio_template_sid


def table(before: Week | None, after: Week) -> str:
    rows = [("learner messages", lambda w: str(w.learner_messages)),
            ("WhatsApp messages sent", lambda w: str(w.outbound)),
            ("sent per learner message", lambda w: f"{w.per_message:.2f}"),
            ("week's messages, USD", lambda w: f"{w.cost_usd():.3f}"),
            ("month (30 days), USD", lambda w: f"{w.month_usd():.2f}")]
    sides = [("before", before)] if before is not None else []
    sides.append(("after", after))
    head = f"{'':<26}" + "".join(f"{name:>9}" for name, _ in sides)
    lines = [head, "-" * len(head)]
    for label, show in rows:
        lines.append(f"{label:<26}" + "".join(f"{show(w):>9}" for _, w in sides if w is not None))
    return "\n".join(lines)


def turns_table(w: Week) -> str:
    sessions = [w.per_turn[i:i + TURNS_PER_SESSION] for i in range(0, len(w.per_turn), TURNS_PER_SESSION)]
    return "\n".join(f"session {n + 1}: " + ", ".join(f"{text[:18]!r} {count}" for text, count in s)
                     for n, s in enumerate(sessions))


async def measure() -> Week:
    """The week on a fresh SQLite database and in-process state, through a harness of its own."""
    from bot.clock import ManualClock
    from tests.support.harness import Database, migrate_template, start_harness

    with tempfile.TemporaryDirectory(prefix="deblo-week-") as tmp:
        url = await migrate_template("sqlite", Path(tmp))
        h = await start_harness(Database(url=url, kind="sqlite"), Path(tmp) / "data",
                                f"week:{uuid.uuid4().hex[:8]}:", {}, clock=ManualClock(MONDAY_EVENING))
        try:
            return await replay(h)
        finally:
            await h.close()


def run() -> Week:
    return asyncio.run(measure())
