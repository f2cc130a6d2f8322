"""First contact and dead ends, through the real webhook, pipeline and handler chain.

A new number's first question is answered, with the welcome and the profile menu; « 1 » before any
menu is no profile choice; the guest-limit message names the reply that opens a profile; MENU and
AIDE offer every command on WhatsApp and SMS (checked on the bytes the Twilio stand-in received);
the model is told the user's local date and time; the guests' limit notice is throttled, and no
credits left is answered at every message.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from bot.channel import formatting
from bot.config import ConfigError, load_settings
from bot.storage.models import CreditEntry, InboundMessage, Task
from handlers import help
from tests.fakes.llm import Step
from tests.support.harness import ORG_NAME, Harness

PHONE = "+2250700000001"
WELCOME_MENU = "1 Élève\n2 Parent\n3 Professionnel"


async def say(h: Harness, body: str, channel: str = "whatsapp", phone: str = PHONE, **kw: Any) -> list[str]:
    """Sends one message as Twilio would and returns the bodies the user received for it."""
    before = len(h.twilio.to(phone))
    status, _ = await h.inbound(phone, body, channel=channel, **kw)
    assert status == 200
    await h.settle()
    return [h.twilio.shown(m) for m in h.twilio.to(phone)[before:]]


async def signup_entries(h: Harness) -> list[CreditEntry]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(CreditEntry).where(CreditEntry.reason == "signup"))).all())


# --- 1. the first message is answered --------------------------------------------------------


async def test_first_question_reaches_the_model_and_the_answer_comes_with_the_menu(harness: Harness) -> None:
    h = harness
    h.llm.push_text("Bien sûr ! Une fraction, c'est une part d'un tout. Par quoi veux-tu commencer ?")
    texts = await say(h, "aide-moi à réviser les fractions", extra={"ProfileName": "Awa Koné"})
    # The answer first, then the welcome with the profile menu: the menu is the last message on
    # screen, the one the user is asked to answer.
    assert len(texts) == 2, texts
    answer, welcome = texts
    assert answer.startswith("Bien sûr ! Une fraction")
    assert welcome.startswith("Bienvenue sur Deblo, Awa !") and WELCOME_MENU in welcome
    assert "D'autres questions ? Elles sont les bienvenues." in welcome  # not « une question peut venir »
    [request] = h.llm.requests
    assert request["messages"][-1] == {"role": "user", "content": "aide-moi à réviser les fractions"}
    assert "sans outils" in request["messages"][0]["content"] and not request.get("tools")  # a guest turn
    user = await h.user(PHONE)
    assert user is not None and (user.mode, user.onboarding_step) == ("guest", "profile")
    # The menu it has now seen works.
    [done] = await say(h, "1")
    assert "C'est parti" in done
    user = await h.user(PHONE)
    assert user is not None and (user.mode, user.role, user.onboarding_step) == ("child", "student", None)


async def test_first_question_by_sms_gets_both_in_one_sms_each(harness: Harness) -> None:
    h = harness
    h.llm.push_text("La photosynthèse transforme la lumière en énergie.")
    answer, welcome = await say(h, "C'est quoi la photosynthèse ?", channel="sms")
    assert answer == "La photosynthèse transforme la lumière en énergie."
    assert welcome.startswith("Bienvenue sur Deblo !") and WELCOME_MENU in welcome
    assert f"Deblo, le tuteur de {ORG_NAME} : devoirs" in welcome  # named as the school's tutor
    assert formatting.is_gsm7(welcome) and formatting.sms_segments(welcome)[1] <= 2


async def test_the_welcome_arrives_even_when_the_model_fails(harness: Harness) -> None:
    h = harness
    for _ in range(3):
        h.llm.push_status(502)
    apology, welcome = await say(h, "Explique-moi le théorème de Pythagore")
    assert "réessayer" in apology
    assert WELCOME_MENU in welcome


@pytest.mark.parametrize("first", ["1", "2", "3", "Pro", "Bonjour Deblo !", "salut", "👋"])
async def test_a_first_message_with_nothing_to_answer_gets_only_the_welcome(harness: Harness,
                                                                           first: str) -> None:
    h = harness
    [welcome] = await say(h, first)
    assert welcome.startswith("Bienvenue sur Deblo") and WELCOME_MENU in welcome
    assert h.llm.requests == []
    user = await h.user(PHONE)
    # « 1 » before the menu was seen chose nothing: still a guest, no signup credits.
    assert user is not None and (user.mode, user.role, user.onboarding_step) == ("guest", None, "profile")
    assert await signup_entries(h) == []
    # Now that the menu was seen, the same reply chooses.
    [done] = await say(h, "2")
    assert "Bienvenue !" in done
    user = await h.user(PHONE)
    assert user is not None and (user.mode, user.role) == ("child", "parent")
    assert len(await signup_entries(h)) == 1


async def test_a_number_enrolled_with_a_mode_is_answered_in_that_mode(harness: Harness) -> None:
    h = harness
    # As the operator's console leaves a number it set up before it wrote: mode set, not yet greeted.
    await h.make_user(PHONE, mode="pro", onboarding_step="new", last_inbound_at=None,
                      last_whatsapp_inbound_at=None)
    h.llm.push_text("Voici un plan de rapport en 5 parties.")
    answer, welcome = await say(h, "Fais-moi un plan de rapport annuel")
    assert answer == "Voici un plan de rapport en 5 parties."
    assert "tools" in h.llm.requests[0]  # the pro mode, with its tools
    user = await h.user(PHONE)
    assert user is not None and (user.mode, user.onboarding_step) == ("pro", None)
    # The balance it is told is the one left after the answer was charged.
    assert 0 < user.credit_balance < h.settings.signup_credits
    assert (f"Votre compte est prêt (profil Professionnel) et vous avez {user.credit_balance} crédits."
            in welcome)
    assert "1 Élève" not in welcome


# --- 2. every dead end leads somewhere ------------------------------------------------------


async def test_the_guest_limit_names_the_reply_that_opens_a_profile(make_harness: Any) -> None:
    h = await make_harness(GUEST_DAILY_MESSAGES="2", PAYMENT_PROVIDER="local", PAYMENT_SECRET="local-secret")
    await say(h, "Bonjour")
    await say(h, "Combien font 7 x 8 ?")
    # A numbered menu of credit packs is pending: the « 1 » the notice asks for must not pick a pack.
    [packs] = await say(h, "ACHETER")
    assert "FCFA" in packs
    await say(h, "Et 9 x 6 ?")
    [limit] = await say(h, "Et 12 x 12 ?")
    assert limit == (
        "Les 2 messages gratuits d'aujourd'hui sont utilisés. Pour continuer tout de suite, un profil "
        "suffit : *1* (Élève), *2* (Parent) ou *3* (Pro), avec 50 crédits offerts. Sinon, à demain !"
    )
    assert len(h.llm.requests) == 2
    # Do exactly what it says, as the user would.
    reply = re.search(r"\*(\d)\* \(Élève\)", limit)
    assert reply is not None
    [done] = await say(h, reply.group(1))
    assert "C'est parti" in done and "50 crédits" in done
    user = await h.user(PHONE)
    assert user is not None and (user.mode, user.role) == ("child", "student")
    assert user.credit_balance == 50
    h.llm.push_text("12 x 12 = 144.")
    assert await say(h, "Et 12 x 12 ?") == ["12 x 12 = 144."]
    assert h.llm.requests[-1].get("tools")


async def test_the_guest_limit_on_sms_is_plain_gsm7(make_harness: Any) -> None:
    h = await make_harness(GUEST_DAILY_MESSAGES="1")
    await say(h, "Bonjour", channel="sms")
    await say(h, "Une question", channel="sms")
    [limit] = await say(h, "Une autre", channel="sms")
    assert "un profil suffit : 1 (Élève), 2 (Parent) ou 3 (Pro)" in limit and "*" not in limit
    assert formatting.is_gsm7(limit)


MENU_FR_GUEST = "{head}\nProfil : répondre 1 Élève, 2 Parent, 3 Pro (+50 crédits)\n"


async def test_menu_offers_a_guest_the_profile_choice_on_whatsapp_and_sms(harness: Harness) -> None:
    h = harness
    # MENU as the very first message: the choice it shows is then a real menu.
    [whatsapp] = await say(h, "MENU")
    assert whatsapp.startswith(
        MENU_FR_GUEST.format(head="*Menu Deblo* : pose ta question ou envoie une photo."))
    [done] = await say(h, "3")
    assert "Parfait" in done
    other = "+2250700000002"
    [sms] = await say(h, "menu", channel="sms", phone=other)
    assert sms.startswith(MENU_FR_GUEST.format(head="Menu Deblo : pose ta question ou envoie une photo."))
    [aide] = await say(h, "AIDE", channel="sms", phone=other)
    # AIDE names the school whose service this is (ORG_NAME).
    assert aide.startswith(MENU_FR_GUEST.format(
        head=f"Deblo, le tuteur de {ORG_NAME}, t'aide à l'école et au travail. Pose ta question !"))


def _check_rendering(body: str, channel: str) -> None:
    if channel == "whatsapp":
        # Bold only where meant (the title), nothing WhatsApp would take for italics.
        assert "_" not in body and body.count("*") in (0, 2), body
    else:
        assert "*" not in body and "_" not in body, body
        assert formatting.is_gsm7(body), body
        encoding, segments = formatting.sms_segments(body)
        assert encoding == "GSM-7" and segments <= 2, (len(body), body)


@pytest.mark.parametrize("channel", ["whatsapp", "sms"])
@pytest.mark.parametrize("language", ["fr", "en"])
@pytest.mark.parametrize("mode", ["guest", "child"])
async def test_menu_and_help_offer_every_command_in_one_message(
    harness: Harness, channel: str, language: str, mode: str
) -> None:
    """On WhatsApp the list's text names every command; on SMS the first page leads to the next."""
    h = harness
    await h.make_user(PHONE, mode=mode, language=language, last_channel=channel)
    words = help.words_offered(mode, language, payments=False)  # no PAYMENT_PROVIDER here
    for command in ("MENU", "HELP" if language == "en" else "AIDE"):
        before = len(h.twilio.to(PHONE))
        await h.inbound(PHONE, command, channel=channel)
        await h.settle()
        received = h.twilio.to(PHONE)[before:]
        assert len(received) == 1, received  # one message, on SMS too
        body = h.twilio.shown(received[0])
        assert received[0]["To"] == (f"whatsapp:{PHONE}" if channel == "whatsapp" else PHONE)
        if channel == "whatsapp":
            for word in words:
                assert re.search(rf"(^|[\s,]){word}\b", body), (word, body)
        else:
            assert body.endswith("HELP 2: more" if language == "en" else "AIDE 2 : la suite"), body
        if language == "en":
            assert not {"PROGRES", "MEMOIRE", "TACHES", "ACHETER", "NOUVEAU", "LANGUE"} & set(
                body.replace(",", " ").split())
        assert ("Profil" in body or "Profile" in body) == (mode == "guest")
        _check_rendering(body, channel)
    assert h.llm.requests == []


async def test_every_offered_command_is_answered_by_a_command_not_the_model(make_harness: Any) -> None:
    """Each command AIDE offers a student, typed as its example, is answered without the model."""
    h = await make_harness(USER_MAX_MESSAGES_PER_MINUTE="0")  # more than 20 messages in a minute
    await h.make_user(PHONE, mode="child")
    commands = sorted(help.entries_for("child"), key=lambda c: c.name == "STOP")  # STOP last
    follow_up = {"LANGUE EN": "LANGUE FR", "SUPPRIMER": "NON"}
    for command in commands:
        answer = await say(h, command.example.fr)
        assert answer and answer[0], command.name
        if command.example.fr in follow_up:
            assert await say(h, follow_up[command.example.fr])
    assert h.llm.requests == []
    user = await h.user(PHONE)
    assert user is not None and user.opted_out and user.language == "fr"


# --- 3. the model knows the user's local date and time ---------------------------------------


def _local_now(system: str) -> tuple[str, str, str]:
    """(date, HH:MM, tomorrow's date) as the system prompt gives them."""
    now = re.search(r"Chez cette personne : .*?, (\d\d):(\d\d) .*?; date (\d{4}-\d\d-\d\d)\.", system)
    tomorrow = re.search(r"Demain : .*?\((\d{4}-\d\d-\d\d)\)", system)
    assert now is not None and tomorrow is not None, system
    return now.group(3), f"{now.group(1)}:{now.group(2)}", tomorrow.group(1)


async def test_the_prompt_gives_the_local_time_and_due_times_land_right(harness: Harness) -> None:
    h = harness
    h.clock.now = datetime(2026, 3, 5, 16, 30, tzinfo=UTC)  # a Thursday; 17:30 in Lagos (UTC+1)
    user = await h.make_user(PHONE, mode="child", timezone="Africa/Lagos")
    prompts: list[str] = []

    def model(body: dict[str, Any]) -> Step:
        """Computes due times from the local time in the prompt, as a model would."""
        if body["messages"][-1]["role"] == "tool":
            return Step("text", content="C'est noté.")
        system = body["messages"][0]["content"]
        prompts.append(system)
        day, hhmm, tomorrow = _local_now(system)
        hour, minute = (int(x) for x in hhmm.split(":"))
        if "demain" in body["messages"][-1]["content"]:
            args = {"title": "Exposé", "due_date": tomorrow, "due_time": "18:00"}
        else:
            args = {"title": "Réviser", "due_date": day, "due_time": f"{hour + 2:02d}:{minute:02d}"}
        return Step("tools", calls=[("create_task", args, None)])

    h.llm.responder = model
    await say(h, "Rappelle-moi de réviser dans 2 heures")
    await say(h, "Et l'exposé demain à 18 h")
    first = prompts[0]
    assert ("- Chez cette personne : jeudi 5 mars 2026, 17:30 (heure locale, fuseau Africa/Lagos, "
            "UTC+01:00) ; date 2026-03-05.") in first
    assert "- Demain : vendredi 6 mars 2026 (2026-03-06)." in first
    # The changing part comes after the stable one: the prompt is the same up to it.
    assert first.index("# Maintenant") > first.index("# Cette personne")
    assert prompts[1][: prompts[1].index("# Maintenant")] == first[: first.index("# Maintenant")]
    async with h.services.sessions() as db:
        tasks = list(await db.scalars(select(Task).where(Task.user_id == user.id).order_by(Task.id)))
    assert [t.due_at for t in tasks] == [datetime(2026, 3, 5, 18, 30, tzinfo=UTC),
                                         datetime(2026, 3, 6, 17, 0, tzinfo=UTC)]


async def test_the_local_date_is_the_users_not_utcs(harness: Harness) -> None:
    h = harness
    h.clock.now = datetime(2026, 3, 5, 23, 30, tzinfo=UTC)  # already Friday in Lagos
    await h.make_user(PHONE, mode="child", timezone="Africa/Lagos")
    await h.make_user("+2250700000002", mode="child")  # the default zone, Abidjan (UTC+0)
    await say(h, "Quelle heure est-il ?")
    await say(h, "Quelle heure est-il ?", phone="+2250700000002")
    lagos, abidjan = (r["messages"][0]["content"] for r in h.llm.requests)
    assert "vendredi 6 mars 2026, 00:30 (heure locale, fuseau Africa/Lagos, UTC+01:00)" in lagos
    assert "jeudi 5 mars 2026, 23:30 (heure locale, fuseau Africa/Abidjan, UTC+00:00)" in abidjan


# --- 4. the guests' notice is throttled, no credits never silent -----------------------------


async def inbound_bodies(h: Harness) -> list[str]:
    async with h.services.sessions() as db:
        return [r.body for r in await db.scalars(select(InboundMessage).order_by(InboundMessage.id))]


async def test_no_credits_is_answered_at_every_message_never_silence(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE, mode="child", credit_balance=0)
    first = await say(h, "Aide-moi")
    assert len(first) == 1 and "plus de crédits" in first[0]
    for body in ("Tu es là ?", "Allô ?", "Réponds stp", "Toujours rien ?", "Et maintenant ?"):
        assert await say(h, body) == first  # the same short answer: silence reads as a broken bot
    assert h.llm.requests == []
    # Every message was kept as received.
    assert await inbound_bodies(h) == ["Aide-moi", "Tu es là ?", "Allô ?", "Réponds stp", "Toujours rien ?",
                                       "Et maintenant ?"]


async def test_guest_limit_notice_once_per_interval(make_harness: Any) -> None:
    h = await make_harness(GUEST_DAILY_MESSAGES="1", NOTICE_INTERVAL_S="600")
    await say(h, "Bonjour")
    await say(h, "Une question")
    [limit] = await say(h, "Deuxième question")
    assert "messages gratuits" in limit
    assert await say(h, "Troisième") == [] and await say(h, "Quatrième") == []
    h.clock.advance(seconds=600)
    [again] = await say(h, "Cinquième")
    assert again == limit
    assert len(h.llm.requests) == 1
    assert len(await inbound_bodies(h)) == 6


async def test_notice_interval_zero_sends_every_notice(make_harness: Any) -> None:
    h = await make_harness(NOTICE_INTERVAL_S="0")
    await h.make_user(PHONE, mode="child", credit_balance=0)
    for body in ("Un", "Deux", "Trois"):
        [text] = await say(h, body)
        assert "plus de crédits" in text


@pytest.mark.parametrize("raw", ["-1", "une heure", "1.5"])
def test_a_bad_notice_interval_is_refused(raw: str) -> None:
    with pytest.raises(ConfigError, match="NOTICE_INTERVAL_S"):
        load_settings({"NOTICE_INTERVAL_S": raw})
    assert load_settings({}).notice_interval_s == 3600
