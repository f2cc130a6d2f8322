"""A new number's time zone and language come from its country; FUSEAU / TIMEZONE and
`users set-timezone` change the zone. Through the real app (webhook, worker, FakeTwilio)."""

from __future__ import annotations

from sqlalchemy import select

from bot.storage.models import User
from tests.support.console import users
from tests.support.harness import Harness
from tests.support.pedagogy import say

GHANA = "+233201234567"
SENEGAL = "+221771234567"
FRANCE = "+33612345678"
CAMEROON = "+237650000001"


async def first_message(h: Harness, phone: str, body: str = "Bonjour") -> list[str]:
    return await say(h, phone, body)


async def test_a_ghanaian_number_is_answered_in_english(harness: Harness) -> None:
    [welcome] = await first_message(harness, GHANA, "Hello")
    user = await harness.user(GHANA)
    assert user is not None and user.language == "en" and user.timezone == "Africa/Accra"
    assert welcome.startswith("Welcome to Deblo")


async def test_a_senegalese_number_gets_dakar_and_french(harness: Harness) -> None:
    [welcome] = await first_message(harness, SENEGAL)
    user = await harness.user(SENEGAL)
    assert user is not None and user.timezone == "Africa/Dakar" and user.language == "fr"
    assert welcome.startswith("Bienvenue sur Deblo")


async def test_an_unlisted_country_gets_the_configured_defaults(make_harness) -> None:
    h = await make_harness(DEFAULT_TIMEZONE="Europe/Paris", DEFAULT_LANGUAGE="en")
    [welcome] = await first_message(h, FRANCE)
    user = await h.user(FRANCE)
    assert user is not None and user.timezone == "Europe/Paris" and user.language == "en"
    assert welcome.startswith("Welcome to Deblo")
    # A listed country keeps its own zone and language whatever the defaults say.
    await first_message(h, CAMEROON)
    cameroonian = await h.user(CAMEROON)
    assert cameroonian is not None and (cameroonian.timezone, cameroonian.language) == ("Africa/Douala", "fr")


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
