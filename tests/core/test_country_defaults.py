"""A new number's time zone and language come from its country, then from its first message;
FUSEAU / TIMEZONE and `users set-timezone` change the zone. Through the real app (webhook, worker,
FakeTwilio, the fake model). Every country's zone and language: tests/core/test_country_locale.py."""

from __future__ import annotations

from sqlalchemy import select

from bot.storage.models import User
from tests.support.console import users
from tests.support.harness import ORG_NAME, Harness
from tests.support.pedagogy import say

GHANA = "+233201234567"
SENEGAL = "+221771234567"
BRAZIL = "+5511961234567"
CAMEROON = "+237650000001"
BAMENDA = "+237233361234"  # a fixed line of Bamenda, North-West: an English-speaking region
DR_CONGO = "+243991234567"


async def first_message(h: Harness, phone: str, body: str = "Bonjour") -> list[str]:
    return await say(h, phone, body)


async def test_a_ghanaian_number_is_answered_in_english(harness: Harness) -> None:
    [welcome] = await first_message(harness, GHANA, "Hello")
    user = await harness.user(GHANA)
    assert user is not None and user.language == "en" and user.timezone == "Africa/Accra"
    assert welcome.startswith("Welcome to Deblo")
    assert f"Deblo, the tutor of {ORG_NAME}: homework, revision and work." in welcome  # the school named


async def test_a_senegalese_number_gets_dakar_and_french(harness: Harness) -> None:
    [welcome] = await first_message(harness, SENEGAL)
    user = await harness.user(SENEGAL)
    assert user is not None and user.timezone == "Africa/Dakar" and user.language == "fr"
    assert welcome.startswith("Bienvenue sur Deblo")


async def test_a_country_of_neither_language_gets_its_zone_and_the_configured_language(make_harness) -> None:
    h = await make_harness(DEFAULT_TIMEZONE="Europe/Paris", DEFAULT_LANGUAGE="en")
    h.llm.push_text("Hello! How can I help?")
    _, welcome = await first_message(h, BRAZIL, "Olá, preciso de ajuda")  # Portuguese: not served
    user = await h.user(BRAZIL)
    assert user is not None and user.timezone == "America/Sao_Paulo" and user.language == "en"
    assert welcome.startswith("Welcome to Deblo")
    # A served country keeps its own zone and language whatever the defaults say.
    await first_message(h, CAMEROON)
    cameroonian = await h.user(CAMEROON)
    assert cameroonian is not None and (cameroonian.timezone, cameroonian.language) == ("Africa/Douala", "fr")


async def test_an_english_first_message_from_cameroon_is_answered_in_english(harness: Harness) -> None:
    h = harness
    h.llm.push_text("Sure! Photosynthesis is how plants turn light into food.")
    answer, welcome = await say(h, CAMEROON, "Hello, can you help me with my homework on photosynthesis?")
    assert answer == "Sure! Photosynthesis is how plants turn light into food."
    assert welcome.startswith("Welcome to Deblo") and "1 Student\n2 Parent\n3 Professional" in welcome
    [request] = h.llm.requests
    assert "Answer in English" in request["messages"][0]["content"]
    user = await h.user(CAMEROON)
    assert user is not None and (user.timezone, user.language) == ("Africa/Douala", "en")
    # From then on the menus are English too, and a French message does not flip it back.
    [menu] = await say(h, CAMEROON, "1")
    assert menu.startswith("Let's go!")
    [shown] = await say(h, CAMEROON, "LANGUE")
    assert "English" in shown and (await h.user(CAMEROON)).language == "en"  # type: ignore[union-attr]


async def test_a_french_first_message_keeps_french_and_another_language_keeps_the_countrys(
        harness: Harness) -> None:
    h = harness
    h.llm.push_text("Bien sûr, la photosynthèse...")
    await say(h, CAMEROON, "Bonjour, tu peux m'aider pour la photosynthèse ?")
    assert (await h.user(CAMEROON)).language == "fr"  # type: ignore[union-attr]
    assert "Answer in English" not in h.llm.requests[0]["messages"][0]["content"]
    # A Bamenda line is answered in English, and a Spanish message does not change that.
    h.llm.push_text("Hello! What do you need?")
    _, welcome = await say(h, BAMENDA, "Hola, necesito ayuda con mis deberes")
    assert welcome.startswith("Welcome to Deblo")
    assert (await h.user(BAMENDA)).language == "en"  # type: ignore[union-attr]
    assert "Answer in English" in h.llm.requests[1]["messages"][0]["content"]
    # A Spanish message from a French-speaking number is answered in French, not in Spanish.
    h.llm.push_text("Bonjour ! De quoi as-tu besoin ?")
    await say(h, SENEGAL, "Hola, necesito ayuda con mis deberes")
    assert (await h.user(SENEGAL)).language == "fr"  # type: ignore[union-attr]
    system = h.llm.requests[2]["messages"][0]["content"]
    assert "français, même si on t'écrit dans une autre langue" in system


async def test_the_first_clear_message_decides_and_langue_stands(harness: Harness) -> None:
    h = harness
    [welcome] = await say(h, CAMEROON, "👋")  # too little to tell: the country's French
    assert welcome.startswith("Bienvenue sur Deblo")
    h.llm.push_text("Sure, let's look at fractions.")
    await say(h, CAMEROON, "Can you help me with fractions please?")
    assert (await h.user(CAMEROON)).language == "en"  # type: ignore[union-attr]
    # Decided: a French message later does not flip it.
    h.llm.push_text("OK.")
    await say(h, CAMEROON, "Explique-moi encore les fractions")
    assert (await h.user(CAMEROON)).language == "en"  # type: ignore[union-attr]
    # A guest who chose with LANGUE keeps it whatever they write next.
    await say(h, SENEGAL, "👋")
    await say(h, SENEGAL, "LANGUE FR")
    h.llm.push_text("Bien sûr.")
    await say(h, SENEGAL, "Can you help me with fractions please?")
    assert (await h.user(SENEGAL)).language == "fr"  # type: ignore[union-attr]


async def test_a_number_whose_zone_is_one_of_several_is_offered_fuseau(harness: Harness) -> None:
    [welcome] = await first_message(harness, DR_CONGO)
    assert "Africa/Kinshasa" in welcome and "FUSEAU" in welcome
    # A country of one zone is told nothing about it.
    [senegal] = await first_message(harness, SENEGAL)
    assert "FUSEAU" not in senegal.split("MENU")[0]


async def test_a_whatsapp_user_known_only_by_bsuid_gets_the_defaults(make_harness) -> None:
    h = await make_harness(DEFAULT_TIMEZONE="Africa/Lagos", DEFAULT_LANGUAGE="en")
    await h.inbound("whatsapp:CM.1234567890123", "Hello", extra={"ExternalUserId": "CM.1234567890123"})
    await h.settle()
    async with h.services.sessions() as db:
        user = await db.scalar(select(User).where(User.external_id == "CM.1234567890123"))
    assert user is not None and user.phone is None
    assert (user.timezone, user.language) == ("Africa/Lagos", "en")


async def test_fuseau_shows_and_changes_the_zone(harness: Harness) -> None:
    h = harness
    await h.make_user(CAMEROON, timezone="Africa/Abidjan")
    [shown] = await say(h, CAMEROON, "FUSEAU")
    assert "Africa/Abidjan" in shown and "FUSEAU Douala" in shown
    [changed] = await say(h, CAMEROON, "fuseau yaoundé")
    assert "Africa/Douala" in changed
    assert (await h.user(CAMEROON)).timezone == "Africa/Douala"  # type: ignore[union-attr]
    [iana] = await say(h, CAMEROON, "TIMEZONE africa/lagos")
    assert "Africa/Lagos" in iana
    assert (await h.user(CAMEROON)).timezone == "Africa/Lagos"  # type: ignore[union-attr]
    [city] = await say(h, CAMEROON, "Fuseau Lomé")
    assert "Africa/Lome" in city
    [unknown] = await say(h, CAMEROON, "FUSEAU Atlantide")
    assert "Je ne connais pas" in unknown and "Africa/Lome" in unknown
    assert (await h.user(CAMEROON)).timezone == "Africa/Lome"  # type: ignore[union-attr]
    assert h.llm.requests == []  # answered without the model
    # A question about time zones is the tutor's, and changes nothing.
    h.llm.push_text("Tokyo est à UTC+9.")
    [answer] = await say(h, CAMEROON, "Fuseau horaire de Tokyo par rapport à Douala ?")
    assert answer == "Tokyo est à UTC+9." and len(h.llm.requests) == 1
    assert (await h.user(CAMEROON)).timezone == "Africa/Lome"  # type: ignore[union-attr]


async def test_fuseau_knows_the_gazetteers_cities_and_offers_the_nearest_to_a_misspelt_one(
        harness: Harness) -> None:
    h = harness
    await h.make_user(CAMEROON, timezone="Africa/Abidjan")
    [garoua] = await say(h, CAMEROON, "FUSEAU Garoua")
    assert "Africa/Douala" in garoua
    assert (await h.user(CAMEROON)).timezone == "Africa/Douala"  # type: ignore[union-attr]
    [tana] = await say(h, CAMEROON, "fuseau ANTANANARIVO")
    assert "Indian/Antananarivo" in tana
    [misspelt] = await say(h, CAMEROON, "FUSEAU Bamanda")
    assert "Tu voulais dire Bamenda (Africa/Douala)" in misspelt and "FUSEAU Bamenda" in misspelt
    assert "Ton fuseau reste Indian/Antananarivo" in misspelt
    assert (await h.user(CAMEROON)).timezone == "Indian/Antananarivo"  # type: ignore[union-attr]
    [unknown] = await say(h, CAMEROON, "FUSEAU Xqzwv")
    assert "Je ne connais pas" in unknown and "voulais dire" not in unknown
    assert h.llm.requests == []


async def test_timezone_in_english(harness: Harness) -> None:
    h = harness
    await h.make_user(GHANA, language="en", timezone="Africa/Accra")
    [shown] = await say(h, GHANA, "timezone")
    assert shown.startswith("Your time zone: Africa/Accra")
    [unknown] = await say(h, GHANA, "TIMEZONE Mars/Olympus")
    assert "I don't know the time zone" in unknown


async def test_the_operator_sets_a_zone_and_enrols_with_the_countrys(harness: Harness) -> None:
    h = harness
    await h.make_user(CAMEROON, timezone="Africa/Abidjan")
    code, out, _ = await users(h, "set-timezone", CAMEROON, "Douala")
    assert code == 0 and "Africa/Douala" in out and "Africa/Abidjan" in out
    assert (await h.user(CAMEROON)).timezone == "Africa/Douala"  # type: ignore[union-attr]
    code, out, err = await users(h, "set-timezone", CAMEROON, "Atlantide")
    assert code == 2 and "not a time zone" in err
    assert (await h.user(CAMEROON)).timezone == "Africa/Douala"  # type: ignore[union-attr]
    code, _, err = await users(h, "set-timezone", "+2250799999999", "Dakar")
    assert code == 1 and "no user" in err
    code, _, _ = await users(h, "set-mode", GHANA, "child")
    ghanaian = await h.user(GHANA)
    assert code == 0 and ghanaian is not None
    assert (ghanaian.timezone, ghanaian.language) == ("Africa/Accra", "en")
