"""WhatsApp menus as buttons and lists through the whole bot: the Content API of the fake Twilio
creates the contents, the sends carry ContentSid + ContentVariables (the fake fills them in and
refuses a button title over 20 characters, a list item over 24, a description over 72), a tap
(`ButtonPayload`, or a list reply's `ListId`) answers the pending quiz or review question on the
server with no model call, a stale tap gets a clear reply, a refusal sends numbered text at once."""

from __future__ import annotations

from typing import Any

from bot import metrics
from tests.support.learner import add_items, results_of, student_in_conversation
from tests.support.pedagogy import MCQ_ARGS, SECRET, STUDENT, ask_quiz, say

STALE = "Ce choix n'est plus valable"
TF_ARGS = {"statement": "L'eau bout à 100 °C au niveau de la mer.", "correct": True,
           "explanation": f"{SECRET} : à la pression normale.", "subject": "Physique"}
SHORT_ARGS = {"question": "Quelle est la capitale du Sénégal ?", "options": ["Dakar", "Thiès", "Saint-Louis"],
              "correct_index": 0, "explanation": f"{SECRET} : Dakar.", "subject": "Géographie"}
LONG_ARGS: dict[str, Any] = {"question": "Que dit le théorème de Pythagore ?",
             "options": ["Dans un triangle rectangle, le carré de l'hypoténuse est la somme des carrés",
                         "La somme des angles d'un triangle vaut 180 degrés",
                         "Deux droites parallèles ne se coupent jamais"],
             "correct_index": 0, "explanation": f"{SECRET} : a² + b² = c².", "subject": "Mathématiques"}


def last_content(h: Any) -> dict[str, Any]:
    sent = h.twilio.contents_sent()
    assert sent, f"no content sent: {h.twilio.bodies()}"
    return sent[-1]


def choices(message: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(content type, its buttons or items as the user sees them)."""
    [(kind, spec)] = message["Rendered"].items()
    return kind, spec["actions"] if kind == "twilio/quick-reply" else spec["items"]


async def tap(h: Any, payload: str, title: str, *, field: str = "ButtonPayload") -> list[str]:
    """A tap on a button (or a list item, `field="ListId"`), as Twilio posts it."""
    before = len(await h.texts_to(STUDENT))
    extra = {"ButtonPayload": payload, "ButtonText": title, "MessageType": "button"}
    if field == "ListId":
        extra = {"ListId": payload, "ListTitle": title, "MessageType": "interactive"}
    status, _ = await h.inbound(STUDENT, title, extra=extra)
    assert status == 200
    await h.settle()
    return (await h.texts_to(STUDENT))[before:]


def menus(result: str) -> float:
    return metrics.MENUS.labels(result)._value.get()


async def test_four_options_go_as_a_list_and_a_tap_answers_without_the_model(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    texts = await ask_quiz(h)
    message = last_content(h)
    assert "Body" not in message and message["ContentSid"].startswith("HX")
    kind, items = choices(message)
    assert kind == "twilio/list-picker"
    assert [i["item"] for i in items] == ["12", "15", "18", "20"]
    ids = [i["id"] for i in items]
    assert len({i.rsplit(":", 1)[0] for i in ids}) == 1
    assert [i.rsplit(":", 1)[1] for i in ids] == ["1", "2", "3", "4"]
    assert all(i["description"] for i in items)
    # The numbered text stays in the body, and the answer is in no button.
    menu = next(t for t in texts if "Combien font" in t)
    assert "1️⃣ 12\n2️⃣ 15\n3️⃣ 18\n4️⃣ 20" in menu and SECRET not in str(message)
    calls = len(h.llm.requests)
    [verdict] = await tap(h, ids[1], "15", field="ListId")
    assert verdict.startswith("✅") and SECRET in verdict
    assert len(h.llm.requests) == calls
    [result] = await results_of(h, (await h.user(STUDENT)).id)
    assert result.correct is True and result.source == "quiz"
    # The same tap again: that menu was answered; the model is not asked either.
    [stale] = await tap(h, ids[1], "15", field="ListId")
    assert STALE in stale and len(h.llm.requests) == calls
    assert len(await results_of(h, (await h.user(STUDENT)).id)) == 1


async def test_true_false_is_two_buttons(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, tool="true_false_quiz", args=TF_ARGS)
    kind, actions = choices(last_content(h))
    assert kind == "twilio/quick-reply" and [a["title"] for a in actions] == ["Vrai", "Faux"]
    calls = len(h.llm.requests)
    [verdict] = await tap(h, actions[1]["id"], "Faux")
    assert verdict.startswith("❌") and len(h.llm.requests) == calls


async def test_three_short_options_are_buttons_and_long_ones_a_list_within_limits(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, args=SHORT_ARGS)
    kind, actions = choices(last_content(h))
    assert kind == "twilio/quick-reply"
    assert [a["title"] for a in actions] == ["Dakar", "Thiès", "Saint-Louis"]
    assert all(len(a["title"]) <= 20 for a in actions)
    # Answered by typing its number: the buttons do not stop that.
    [verdict] = await say(h, STUDENT, "1")
    assert verdict.startswith("✅")
    await ask_quiz(h, args=LONG_ARGS, first=False)
    kind, items = choices(last_content(h))
    assert kind == "twilio/list-picker"
    assert [i["item"] for i in items] == ["Réponse 1", "Réponse 2", "Réponse 3"]
    assert all(len(i["item"]) <= 24 and len(i["description"]) <= 72 for i in items)
    assert items[1]["description"] == LONG_ARGS["options"][1]
    assert items[0]["description"].startswith("Dans un triangle rectangle")
    assert items[0]["description"].endswith("…")
    [verdict] = await tap(h, items[0]["id"], "Réponse 1", field="ListId")
    assert verdict.startswith("✅")


async def test_a_list_reply_with_only_its_short_title_counts_as_its_number(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, args=LONG_ARGS)
    calls = len(h.llm.requests)
    [verdict] = await say(h, STUDENT, "Réponse 1")
    assert verdict.startswith("✅") and len(h.llm.requests) == calls


async def test_a_tap_on_an_older_quiz_does_not_answer_the_newer_one(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, tool="true_false_quiz", args=TF_ARGS)
    _, old = choices(last_content(h))
    await ask_quiz(h, args=SHORT_ARGS, first=False)
    calls = len(h.llm.requests)
    [stale] = await tap(h, old[0]["id"], "Vrai")
    assert STALE in stale and len(h.llm.requests) == calls
    assert await results_of(h, (await h.user(STUDENT)).id) == []
    [verdict] = await say(h, STUDENT, "1")  # the newer quiz is still pending
    assert verdict.startswith("✅") and "Dakar" in verdict


async def test_contents_are_created_once_per_shape(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, args=SHORT_ARGS)
    await say(h, STUDENT, "2")
    await ask_quiz(h, args={**SHORT_ARGS, "question": "Et celle du Mali ?",
                            "options": ["Bamako", "Ségou", "Kayes"]}, first=False)
    first, second = h.twilio.contents_sent()
    assert first["ContentSid"] == second["ContentSid"] and h.twilio.content_requests == 1
    assert [a["title"] for a in choices(second)[1]] == ["Bamako", "Ségou", "Kayes"]
    content = h.twilio.contents[first["ContentSid"]]
    assert "{{" in str(content["types"])  # the labels are variables, not in the content


async def test_content_creation_refused_sends_numbered_text_in_the_same_turn(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    h.twilio.fail_content("400")
    refused = menus("refused_create")
    texts = await ask_quiz(h)
    assert h.twilio.contents_sent() == [] and h.twilio.content_requests == 1
    menu = next(t for t in texts if "Combien font" in t)
    assert "1️⃣ 12\n2️⃣ 15" in menu and menus("refused_create") == refused + 1
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅")


async def test_a_refused_content_send_goes_as_numbered_text_at_once(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    h.llm.push_text("Bonjour !")
    await say(h, STUDENT, "Bonjour")
    h.twilio.fail_next("63005")  # the channel refused the content
    refused = menus("refused_send")
    h.llm.push_tool_calls(("interactive_quiz", MCQ_ARGS))
    h.llm.push_text("À toi de jouer !")
    texts = await say(h, STUDENT, "Fais-moi un quiz")
    assert "1️⃣ 12\n2️⃣ 15" in texts[0] and menus("refused_send") == refused + 1
    assert h.twilio.contents_sent() == []
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅")


async def test_sms_gets_text_and_no_content(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    texts = await ask_quiz(h, channel="sms")
    assert "1) 12\n2) 15" in next(t for t in texts if "Combien font" in t)
    assert h.twilio.contents_sent() == [] and h.twilio.content_requests == 0


async def test_whatsapp_buttons_off_sends_text(make_harness: Any) -> None:
    h = await make_harness(WHATSAPP_BUTTONS="false")
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    assert h.twilio.contents_sent() == [] and h.twilio.content_requests == 0


async def test_review_questions_are_answered_by_tap_and_an_old_tap_is_stale(harness: Any) -> None:
    h = harness
    user, conversation = await student_in_conversation(h)
    await add_items(h, user.id, conversation, 2, answered_at=h.clock())
    h.clock.advance(days=2)
    calls = len(h.llm.requests)
    [first] = await say(h, STUDENT, "revision")
    assert "Révision 1/2" in first
    kind, items = choices(last_content(h))
    assert kind == "twilio/list-picker" and len(items) == 4
    [reply] = await tap(h, items[1]["id"], items[1]["item"], field="ListId")
    assert reply.startswith("✅") and "Révision 2/2" in reply
    _, following = choices(last_content(h))
    assert following[0]["id"].rsplit(":", 1)[0] != items[0]["id"].rsplit(":", 1)[0]
    [stale] = await tap(h, items[1]["id"], items[1]["item"], field="ListId")
    assert STALE in stale
    [done] = await tap(h, following[0]["id"], following[0]["item"], field="ListId")
    assert done.startswith("❌") and "Révision terminée : 1/2" in done
    assert len(h.llm.requests) == calls
    answers = [(r.source, r.correct) for r in await results_of(h, user.id)]
    assert answers == [("review", True), ("review", False)]


async def test_a_tap_after_the_quiz_expired_answers_nothing(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, args=SHORT_ARGS)
    _, actions = choices(last_content(h))
    h.clock.advance(seconds=h.settings.quiz_ttl_s + 5)
    calls = len(h.llm.requests)
    [late] = await tap(h, actions[0]["id"], "Dakar")
    assert "Ce quiz a expiré" in late and len(h.llm.requests) == calls
    assert await results_of(h, (await h.user(STUDENT)).id) == []


async def test_a_content_twilio_no_longer_knows_is_created_again(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h, args=SHORT_ARGS)
    [first] = h.twilio.contents_sent()
    await say(h, STUDENT, "1")
    h.twilio.deleted_contents.add(first["ContentSid"])
    texts = await ask_quiz(h, args=SHORT_ARGS, first=False)
    assert "1️⃣ Dakar" in next(t for t in texts if "Sénégal" in t)  # refused (21655): numbered text
    await say(h, STUDENT, "1")
    await ask_quiz(h, args=SHORT_ARGS, first=False)
    assert h.twilio.content_requests == 2
    [_, again] = h.twilio.contents_sent()
    assert again["ContentSid"] != first["ContentSid"]


async def test_credit_packs_are_a_list_and_a_tap_picks_the_pack(make_harness: Any) -> None:
    from sqlalchemy import select

    from bot.storage.models import Payment

    h = await make_harness(PAYMENT_PROVIDER="local", PAYMENT_SECRET="local-secret")
    user = await h.make_user(STUDENT, mode="child")
    [shown] = await say(h, STUDENT, "ACHETER")
    assert "FCFA" in shown and "réponse par un numéro" in shown
    kind, items = choices(last_content(h))
    assert kind == "twilio/list-picker"
    assert all("crédits" in i["item"] and len(i["item"]) <= 24 for i in items)
    calls = len(h.llm.requests)
    await tap(h, items[1]["id"], items[1]["item"], field="ListId")
    assert len(h.llm.requests) == calls
    async with h.services.sessions() as db:
        [payment] = (await db.scalars(select(Payment).where(Payment.user_id == user.id))).all()
    assert payment.credits == int(items[1]["item"].split()[0])
