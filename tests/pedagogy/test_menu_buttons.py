"""The profile menu, the class menu and the deletion's confirmation as WhatsApp buttons and lists
(through the fake Twilio's Content API): a tap answers the pending menu exactly as typing its number
does, on the server and with no model call; the class menu's 15 levels go as a list of cycles, then
the cycle's levels under their numbers in the whole list; a typed number still works; SMS gets the
numbered text only; a tap on a menu already answered is stale."""

from __future__ import annotations

from typing import Any

from tests.support.pedagogy import STUDENT, say

STALE = "Ce choix n'est plus valable"
LEVEL_LINES = ("1) CP1, 2) CP2, 3) CE1, 4) CE2, 5) CM1, 6) CM2\n7) 6e, 8) 5e, 9) 4e, 10) 3e\n"
               "11) 2nde, 12) 1re, 13) Tle\n14) Université, 15) Autre")


def shown(h: Any) -> tuple[str, list[dict[str, Any]]]:
    """The last content sent: its type and its buttons or items as the user sees them."""
    sent = h.twilio.contents_sent()
    assert sent, f"no content sent: {h.twilio.bodies()}"
    [(kind, spec)] = sent[-1]["Rendered"].items()
    return kind, spec["actions"] if kind == "twilio/quick-reply" else spec["items"]


def numbers(choices: list[dict[str, Any]]) -> list[int]:
    return [int(c["id"].rsplit(":", 1)[1]) for c in choices]


async def tap(h: Any, choice: dict[str, Any]) -> list[str]:
    """A tap on a button or a list item, posted as Twilio posts each."""
    if "item" in choice:
        title, extra = choice["item"], {"ListId": choice["id"], "ListTitle": choice["item"],
                                        "MessageType": "interactive"}
    else:
        title, extra = choice["title"], {"ButtonPayload": choice["id"], "ButtonText": choice["title"],
                                         "MessageType": "button"}
    before = len(await h.texts_to(STUDENT))
    status, _ = await h.inbound(STUDENT, title, extra=extra)
    assert status == 200
    await h.settle()
    return (await h.texts_to(STUDENT))[before:]


async def test_the_profile_menu_is_three_buttons_and_a_tap_chooses_without_the_model(harness: Any) -> None:
    h = harness
    [welcome] = await say(h, STUDENT, "Bonjour")
    assert "1 Élève\n2 Parent\n3 Professionnel" in welcome  # the typed menu stays in the body
    kind, buttons = shown(h)
    assert kind == "twilio/quick-reply"
    assert [b["title"] for b in buttons] == ["Élève", "Parent", "Professionnel"]
    assert numbers(buttons) == [1, 2, 3] and len({b["id"].rsplit(":", 1)[0] for b in buttons}) == 1
    [done] = await tap(h, buttons[1])
    assert "accompagner votre enfant" in done
    user = await h.user(STUDENT)
    assert user is not None and (user.role, user.mode, user.onboarding_step) == ("parent", "child", None)
    [stale] = await tap(h, buttons[0])  # answered: the other buttons choose nothing any more
    assert STALE in stale and (await h.user(STUDENT)).role == "parent"
    assert h.llm.requests == []


async def test_past_the_guest_limit_the_profile_choice_comes_as_buttons(make_harness: Any) -> None:
    h = await make_harness(GUEST_DAILY_MESSAGES="1")
    await say(h, STUDENT, "Bonjour")
    await say(h, STUDENT, "Combien font 7 x 8 ?")  # the day's one free message
    before = len(h.twilio.contents_sent())  # the welcome's buttons
    [limit] = await say(h, STUDENT, "Et 9 x 6 ?")
    assert "messages gratuits" in limit and "*1* (Élève)" in limit  # the typed way stays in the body
    assert len(h.twilio.contents_sent()) == before + 1
    kind, buttons = shown(h)
    assert kind == "twilio/quick-reply"
    assert [b["title"] for b in buttons] == ["Élève", "Parent", "Professionnel"]
    calls = len(h.llm.requests)
    [done] = await tap(h, buttons[0])
    assert "C'est parti" in done and len(h.llm.requests) == calls
    user = await h.user(STUDENT)
    assert user is not None and (user.role, user.mode) == ("student", "child")


async def test_the_class_menu_is_a_list_of_cycles_then_the_cycles_levels(harness: Any) -> None:
    h = harness
    await say(h, STUDENT, "Bonjour")
    _, profiles = shown(h)
    [chosen] = await tap(h, profiles[0])
    assert "C'est parti" in chosen and LEVEL_LINES in chosen
    kind, cycles = shown(h)
    assert kind == "twilio/list-picker"
    assert [c["item"] for c in cycles] == ["Primaire", "Collège", "Lycée", "Université", "Autre"]
    assert numbers(cycles) == [91, 92, 93, 14, 15]
    assert cycles[0]["description"] == "CP1, CP2, CE1, CE2, CM1, CM2"
    assert all(len(c["item"]) <= 24 and len(c["description"]) <= 72 for c in cycles)
    [college] = await tap(h, cycles[1])
    assert "7) 6e, 8) 5e, 9) 4e, 10) 3e" in college
    kind, levels = shown(h)
    assert kind == "twilio/list-picker" and [i["item"] for i in levels] == ["6e", "5e", "4e", "3e"]
    assert numbers(levels) == [7, 8, 9, 10] and levels[2]["description"] == "Réponse 9"
    # The first list stays valid until a level is chosen: another cycle, as three buttons.
    [lycee] = await tap(h, cycles[2])
    assert "11) 2nde, 12) 1re, 13) Tle" in lycee
    kind, buttons = shown(h)
    assert kind == "twilio/quick-reply" and [b["title"] for b in buttons] == ["2nde", "1re", "Tle"]
    assert (await h.user(STUDENT)).school_level is None
    [set_] = await tap(h, levels[2])
    assert "classe 4e" in set_ and (await h.user(STUDENT)).school_level == "4e"
    [stale] = await tap(h, buttons[0])
    assert STALE in stale and (await h.user(STUDENT)).school_level == "4e"
    assert h.llm.requests == []


async def test_typed_numbers_keep_the_whole_lists_meaning(harness: Any) -> None:
    h = harness
    await say(h, STUDENT, "Bonjour")
    await say(h, STUDENT, "1")  # the profile, typed
    _, cycles = shown(h)
    [told] = await say(h, STUDENT, "91")  # a cycle's number is a tap's, not a level
    assert "entre 1 et 15" in told and (await h.user(STUDENT)).school_level is None
    await tap(h, cycles[0])  # Primaire's levels on screen; « 7 » is still the whole list's 6e
    [set_] = await say(h, STUDENT, "7")
    assert "classe 6e" in set_ and (await h.user(STUDENT)).school_level == "6e"
    assert h.llm.requests == []


async def test_tapping_université_sets_it_at_once(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await say(h, STUDENT, "CLASSE")
    _, cycles = shown(h)
    [set_] = await tap(h, cycles[3])
    assert "classe Université" in set_ and (await h.user(STUDENT)).school_level == "Université"


async def test_sms_gets_the_numbered_menus_and_no_content(harness: Any) -> None:
    h = harness
    [welcome] = await say(h, STUDENT, "Bonjour", "sms")
    assert "1 Élève\n2 Parent\n3 Professionnel" in welcome
    parts = await say(h, STUDENT, "1", "sms")
    assert LEVEL_LINES in next(p for p in parts if "Tu es en quelle classe" in p)
    [set_] = await say(h, STUDENT, "12", "sms")
    assert "classe 1re" in set_
    assert h.twilio.contents_sent() == [] and h.twilio.content_requests == 0


async def test_the_deletion_is_confirmed_by_the_oui_button_only(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    [ask] = await say(h, STUDENT, "SUPPRIMER")
    assert "OUI dans les 5 minutes pour confirmer" in ask
    kind, buttons = shown(h)
    assert kind == "twilio/quick-reply" and [b["title"] for b in buttons] == ["Oui", "Non"]
    # Typed, « 1 » is any other message: it cancels, and is then answered as usual.
    cancelled, *_ = await say(h, STUDENT, "1")
    assert "Suppression annulée" in cancelled and await h.user(STUDENT) is not None
    calls = len(h.llm.requests)
    [stale] = await tap(h, buttons[0])  # the question is over: its Oui erases nothing
    assert STALE in stale and await h.user(STUDENT) is not None
    await say(h, STUDENT, "SUPPRIMER")
    _, buttons = shown(h)
    [kept] = await tap(h, buttons[1])
    assert "Suppression annulée" in kept and await h.user(STUDENT) is not None
    await say(h, STUDENT, "SUPPRIMER")
    _, buttons = shown(h)
    [done] = await tap(h, buttons[0])
    assert "C'est fait" in done and await h.user(STUDENT) is None
    assert len(h.llm.requests) == calls
