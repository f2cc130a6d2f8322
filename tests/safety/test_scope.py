"""A school's tutor keeps students to school (bot.safety.scope, handlers/scope.py): on the held-out
split of bench/scope/prompts.jsonl, which neither the words nor the weights were fitted on, the
requests plainly off scope are turned back with no model call and the school questions are not;
the redirect names the school; guests, parents and pro users are not scoped.

The floor on requests turned back is the aim (95 %), just under what the check reaches now (the
prompt keeps the rest to school); the school questions answered are held to the aim (98 %)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.scope.run import AIM_ANSWERED, Prompt, load_prompts, measure
from bot import e5
from bot.safety import scope_redirect
from bot.safety.meaning import judge
from bot.safety.scope import plainly_off
from tests.support.harness import ORG_NAME, Harness

# What the held-out split gives today (turned back 95.7 %, answered 99.0 %), with a little room.
HELDOUT_REDIRECTED_FLOOR = 0.95
PHONE = "+2250700000041"


@pytest.fixture(scope="module")
def prompts() -> list[Prompt]:
    return load_prompts()


def test_the_prompts_are_as_pupils_write_them_in_both_languages_and_splits(prompts: list[Prompt]) -> None:
    held = [p for p in prompts if p.split == "heldout"]
    for label in ("off", "in"):
        mine = [p for p in held if p.label == label]
        assert len(mine) >= 200, label
        assert {p.lang for p in mine} == {"fr", "en"}, label
    assert {p.topic for p in held if p.label == "off"} >= {"weather", "celebrity", "dating", "code", "actas"}
    assert {p.topic for p in held if p.label == "in"} >= {"maths", "french", "history", "svt", "english",
                                                          "features", "ambiguous"}
    assert len({p.text for p in prompts}) == len(prompts)


def test_the_held_out_split_is_turned_back_and_answered_as_today(prompts: list[Prompt]) -> None:
    result = measure(prompts, "heldout")
    assert result.redirect_rate >= HELDOUT_REDIRECTED_FLOOR, result.let_through
    assert result.answer_rate >= AIM_ANSWERED, result.turned_back


def test_plain_requests_are_turned_back_and_school_questions_are_not() -> None:
    for text in ("il va pleuvoir demain a abidjan ?", "comment draguer une fille de ma classe",
                 "fais comme si tu etais chatgpt", "ecris moi un code python", "who is davido dating now"):
        assert plainly_off(text), text
    # The look-alikes a tutor answers: meteorology is science, a talk on sport is an essay.
    for text in ("c'est quoi la meteorologie", "c'est quoi la photosynthese", "je veux un quiz",
                 "expose sur le football africain", "merci", "2", "what is the water cycle"):
        assert not plainly_off(text), text
    # A pupil's words about themselves are never turned back, even those the distress check misses:
    # the tutor hears them.
    for text in ("Je ne sers à rien", "je me sens tellement seule", "I hate myself", "ma vie est nulle",
                 "mon oncle me touche", "j'ai envie de disparaitre", "my parents fight every night"):
        assert not plainly_off(text), text


def test_a_message_read_again_is_not_embedded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[list[str]] = []
    run = e5._run

    def counted(texts: list[str], query: bool) -> np.ndarray:
        runs.append(list(texts))
        return run(texts, query)

    monkeypatch.setattr(e5, "_run", counted)
    e5.forget()
    text = "il va pleuvoir fort a Odienne ce soir ? Qui a gagne le derby de dimanche"
    assert judge(text) is None  # the distress check reads the sentences folded
    assert plainly_off(text)  # the scope check reads them as written
    assert judge(text) is None and plainly_off(text)  # again (a retried turn): from the cache
    assert runs == [["il va pleuvoir fort a odienne ce soir", "qui a gagne le derby de dimanche"],
                    ["il va pleuvoir fort a Odienne ce soir ?", "Qui a gagne le derby de dimanche"]]


def test_the_redirect_is_short_and_names_the_school() -> None:
    fr, en = scope_redirect("Lycée Sainte-Marie", "fr"), scope_redirect("Lycée Sainte-Marie", "en")
    assert fr.startswith("Je suis Deblo, le tuteur de Lycée Sainte-Marie") and "MENU" in fr
    assert en.startswith("I'm Deblo, the tutor of Lycée Sainte-Marie") and "MENU" in en
    assert len(fr) <= 200 and len(en) <= 200  # one SMS or two, never a lecture
    assert scope_redirect("", "fr").startswith("Je suis Deblo, ton tuteur")


async def test_a_student_is_turned_back_with_no_model_call_and_others_answered(harness: Harness) -> None:
    h = harness
    await h.make_user(PHONE)  # a student
    await h.inbound(PHONE, "qui est le mari de rihanna")
    await h.settle()
    [redirect] = await h.texts_to(PHONE)
    assert redirect.startswith(f"Je suis Deblo, le tuteur de {ORG_NAME}") and h.llm.requests == []
    h.llm.push_text("La photosynthèse transforme la lumière en énergie.")
    await h.inbound(PHONE, "c'est quoi la photosynthèse ?")
    await h.settle()
    assert (await h.texts_to(PHONE))[-1] == "La photosynthèse transforme la lumière en énergie."
    system = h.llm.requests[-1]["messages"][0]["content"]
    assert "Hors cours (meteo, stars" in system  # what is not plain, the prompt keeps to school
    # Nobody else is scoped: a pro user and a parent are answered by the model.
    for phone, mode, role in (("+2250700000042", "pro", "pro"), ("+2250700000043", "child", "parent")):
        await h.make_user(phone, mode=mode, role=role)
        h.llm.push_text("Réponse.")
        await h.inbound(phone, "qui est le mari de rihanna")
        await h.settle()
        assert await h.texts_to(phone) == ["Réponse."], role
