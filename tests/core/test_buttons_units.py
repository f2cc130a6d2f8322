"""bot.channel.buttons on its own: which content type a menu fits, the variables that fill it, the ids a
tap brings back; and the fake Twilio's Content API refusing what Twilio refuses."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from bot.channel.buttons import LIST_PICKER, QUICK_REPLY, Menu, content_kind, content_variables, tapped
from tests.fakes.twilio import FakeTwilio

# No database nor state in these: run once.


def menu(*options: str, language: str = "fr") -> Menu:
    return Menu(menu_id="a1b2c3", body="Quiz", options=options, language=language)


def test_the_shape_a_menu_fits() -> None:
    assert content_kind(menu("Vrai", "Faux")) == QUICK_REPLY
    assert content_kind(menu("12", "15", "18")) == QUICK_REPLY
    assert content_kind(menu("12", "15", "18", "20")) == LIST_PICKER  # 4 options: more than 3 buttons
    assert content_kind(menu("x" * 20, "y")) == QUICK_REPLY
    assert content_kind(menu("x" * 21, "y")) == LIST_PICKER  # a title over 20 characters
    assert content_kind(menu()) is None
    assert content_kind(menu(*[str(i) for i in range(11)])) is None  # a list holds 10 at most


def test_list_items_keep_to_24_and_descriptions_to_72() -> None:
    long = "Dans un triangle rectangle, le carré de l'hypoténuse est égal à la somme des carrés des côtés"
    values = content_variables(LIST_PICKER, menu("15", long, "x" * 24), "Body")
    assert values["1"] == "Body" and values["2"] == "Choisir"
    assert (values["3"], values["4"], values["5"]) == ("15", "a1b2c3:1", "Réponse 1")
    assert (values["6"], values["7"]) == ("Réponse 2", "a1b2c3:2")
    assert len(values["8"]) == 72 and values["8"].endswith("…") and values["8"].startswith("Dans un triangle")
    assert values["9"] == "x" * 24
    english = content_variables(LIST_PICKER, menu("x" * 30, "b", language="en"), "Body")
    assert english["2"] == "Choose" and english["3"] == "Answer 1"


def test_quick_reply_variables_are_titles_and_ids() -> None:
    values = content_variables(QUICK_REPLY, menu("Vrai", "Faux"), "Vrai ou faux ?")
    assert values == {"1": "Vrai ou faux ?", "2": "Vrai", "3": "a1b2c3:1", "4": "Faux", "5": "a1b2c3:2"}


@pytest.mark.parametrize(("params", "expected"), [
    ({"ButtonPayload": "a1b2c3:2", "ButtonText": "15"}, ("a1b2c3", 2)),
    ({"ListId": "f00d:4", "ListTitle": "20"}, ("f00d", 4)),
    ({"ButtonPayload": " a1b2c3:1 "}, ("a1b2c3", 1)),
    ({"Body": "2"}, None),
    ({"ButtonPayload": "a1b2c3"}, None),
    ({"ButtonPayload": "a1b2c3:0"}, None),
    ({"ButtonPayload": "a:b:2"}, None),
    ({"ButtonPayload": "OUI"}, None),  # a template's own button: no menu of ours
])
def test_a_tap_names_its_menu_and_number(params: dict[str, str], expected: tuple[str, int] | None) -> None:
    assert tapped(params) == expected


QUICK = {"friendly_name": "q", "language": "fr", "variables": {"1": "Q", "2": "A", "3": "x:1"},
         "types": {"twilio/quick-reply": {"body": "{{1}}", "actions": [{"title": "{{2}}", "id": "{{3}}"}]}}}


async def test_the_fake_content_api_creates_fetches_and_refuses() -> None:
    fake = FakeTwilio()
    await fake.start()
    auth = {"Authorization": aiohttp.encode_basic_auth(fake.account_sid, fake.auth_token)}
    try:
        async with aiohttp.ClientSession(headers=auth) as session:
            async def create(body: Any) -> tuple[int, dict[str, Any]]:
                async with session.post(f"{fake.url}/v1/Content", data=json.dumps(body),
                                        headers={"Content-Type": "application/json"}) as resp:
                    return resp.status, await resp.json()

            status, created = await create(QUICK)
            assert status == 201 and created["sid"].startswith("HX")
            async with session.get(f"{fake.url}/v1/Content/{created['sid']}") as resp:
                assert resp.status == 200 and (await resp.json())["types"] == QUICK["types"]
            assert (await create({**QUICK, "language": None}))[0] == 400
            too_long = {"twilio/quick-reply": {"body": "Q", "actions": [{"title": "x" * 21, "id": "1"}]}}
            assert (await create({**QUICK, "types": too_long}))[0] == 400
            no_items = {"twilio/list-picker": {"body": "Q", "button": "B", "items": []}}
            assert (await create({**QUICK, "types": no_items}))[0] == 400
            fake.fail_content("500")
            assert (await create(QUICK))[0] == 500
            assert len(fake.contents) == 1
    finally:
        await fake.stop()
