"""The student's class: asked once to a new student as a numbered menu (skipping is fine), shown and
changed with CLASSE / LEVEL, set by the operator with `python -m bot users set-level`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.channel import formatting
from tests.support.console import users
from tests.support.pedagogy import STUDENT, say

MENU_LINES = ("1) CP1, 2) CP2, 3) CE1, 4) CE2, 5) CM1, 6) CM2\n7) 6e, 8) 5e, 9) 4e, 10) 3e\n"
              "11) 2nde, 12) 1re, 13) Tle\n14) Université, 15) Autre")


async def level_of(h: Any) -> tuple[str | None, bool]:
    user = await h.user(STUDENT)
    assert user is not None
    return user.school_level, user.level_asked_at is not None


async def new_student(h: Any, channel: str = "whatsapp") -> list[str]:
    """A new number chooses profile 1: the confirmation comes with the class menu."""
    await say(h, STUDENT, "Bonjour", channel)
    return await say(h, STUDENT, "1", channel)


async def test_a_new_student_is_asked_once_and_the_level_reaches_the_prompt(harness: Any) -> None:
    h = harness
    [done] = await new_student(h)
    assert "C'est parti" in done and "Tu es en quelle classe ?" in done and MENU_LINES in done
    assert await level_of(h) == (None, True)
    assert h.llm.requests == []
    [set_] = await say(h, STUDENT, "9")
    assert "classe 4e" in set_ and await level_of(h) == ("4e", True)
    assert h.llm.requests == []  # the menu is answered without the model
    h.llm.push_text("Allons-y.")
    await say(h, STUDENT, "Aide-moi en maths")
    assert "Classe : 4e" in json.dumps(h.llm.requests[-1]["messages"], ensure_ascii=False)
    # Answered: a number is an ordinary message again.
    await say(h, STUDENT, "3")
    assert len(h.llm.requests) == 2 and await level_of(h) == ("4e", True)


async def test_a_student_the_operator_enrolled_is_asked_with_the_welcome(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child", onboarding_step="new")
    [welcome] = await say(h, STUDENT, "Bonjour")
    assert "Ton compte est prêt" in welcome and MENU_LINES in welcome
    assert "classe 6e" in (await say(h, STUDENT, "6ème"))[0] and await level_of(h) == ("6e", True)


async def test_skipping_the_menu_goes_to_the_tutor_and_it_is_never_asked_again(harness: Any) -> None:
    h = harness
    await new_student(h)
    h.llm.push_text("Pas de souci.")
    assert await say(h, STUDENT, "je ne sais pas") == ["Pas de souci."]
    assert "[Class] The student was just sent the class menu" in json.dumps(h.llm.requests[-1]["messages"],
                                                                          ensure_ascii=False)
    h.llm.push_text("Trois quoi ?")
    assert await say(h, STUDENT, "3") == ["Trois quoi ?"]  # the menu was dropped
    assert await level_of(h) == (None, True)
    h.clock.advance(days=2)  # a new session: still not asked again
    h.llm.push_text("Bonjour !")
    assert await say(h, STUDENT, "Salut") == ["Bonjour !"]


async def test_the_level_can_be_typed_and_a_number_out_of_range_is_told(harness: Any) -> None:
    h = harness
    await new_student(h)
    [told] = await say(h, STUDENT, "16")
    assert "entre 1 et 15" in told and await level_of(h) == (None, True)
    [set_] = await say(h, STUDENT, "Terminale")
    assert "classe Tle" in set_ and await level_of(h) == ("Tle", True)
    assert h.llm.requests == []


async def test_the_menu_fits_two_sms_segments(harness: Any) -> None:
    h = harness
    parts = await new_student(h, channel="sms")
    menu = next(p for p in parts if "Tu es en quelle classe" in p)
    assert MENU_LINES in menu and formatting.is_gsm7(menu)
    assert formatting.sms_segments(menu) == ("GSM-7", 2)
    assert (await say(h, STUDENT, "2", "sms"))[0].startswith("C'est noté : classe CP2")


@pytest.mark.parametrize("language", ["fr", "en"])
async def test_classe_shows_changes_and_refuses_an_unknown_level(harness: Any, language: str) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child", language=language, school_level="5e")
    word = "LEVEL" if language == "en" else "CLASSE"
    [shown] = await say(h, STUDENT, word.lower())
    assert ("Your class: 5e." if language == "en" else "Ta classe : 5e.") in shown and MENU_LINES in shown
    [set_] = await say(h, STUDENT, "12")
    assert "1re" in set_ and await level_of(h) == ("1re", True)
    [direct] = await say(h, STUDENT, f"{word} 4ème")
    assert "4e" in direct and (await level_of(h))[0] == "4e"
    [refused] = await say(h, STUDENT, f"{word} 7e")
    assert "7e" in refused and ("has not changed" if language == "en" else "n'a pas changé") in refused
    assert (await level_of(h))[0] == "4e"
    assert h.llm.requests == []
    # A sentence that starts with the word is a question for the tutor.
    h.llm.push_text("Un nom commun.")
    assert await say(h, STUDENT, "Classe grammaticale de « maison » ?") == ["Un nom commun."]


async def test_menu_lists_classe_and_revision_for_a_student(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    [menu] = await say(h, STUDENT, "MENU", "sms")
    assert "REVISION : réviser tes quiz" in menu and "CLASSE : ta classe" in menu
    assert formatting.sms_segments(menu)[1] <= 2


async def test_the_operator_sets_the_level(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    code, out, err = await users(h, "set-level", "+225 07 00 00 00 01", "cm 2")
    assert code == 0, err
    assert out.strip() == f"{STUDENT}: class CM2 (was not set)"
    assert await level_of(h) == ("CM2", True)
    code, out, err = await users(h, "set-level", STUDENT, "7e")
    assert code == 2 and out == "" and "'7e' is not a class" in err and "Tle" in err
    code, out, err = await users(h, "set-level", "+2250700000099", "4e")
    assert code == 1 and "no user with the number +2250700000099" in err
    code, out, err = await users(h, "set-level", "07", "4e")
    assert code == 2 and "not a phone number" in err
    assert await level_of(h) == ("CM2", True)


@pytest.mark.parametrize(("typed", "level"), [("CLASSE Terminale D", "Tle"), ("classe Tle C", "Tle"),
                                              ("CLASSE 6ème 3", "6e"), ("LEVEL terminale d", "Tle")])
async def test_classe_takes_a_class_with_its_section(harness: Any, typed: str, level: str) -> None:
    """As a school names its classes (« Terminale D », « 6ème 3 »): the level is read, the section
    dropped, by the one parser the class lists also use."""
    h = harness
    await h.make_user(STUDENT, mode="child", school_level="1re")
    [set_] = await say(h, STUDENT, typed)
    assert set_ == f"C'est noté : classe {level}. J'adapte mes explications à ton niveau."
    assert await level_of(h) == (level, True)
    assert h.llm.requests == []


async def test_the_operator_sets_a_level_with_its_section(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child", school_level="2nde")
    code, out, err = await users(h, "set-level", STUDENT, "Tle C")
    assert code == 0, err
    assert out.strip() == f"{STUDENT}: class Tle (was 2nde)"
    code, out, err = await users(h, "set-level", STUDENT, "6ème 3")
    assert code == 0 and out.strip() == f"{STUDENT}: class 6e (was Tle)", err
    assert await level_of(h) == ("6e", True)
