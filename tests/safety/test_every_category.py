"""Every category of distress heard through the real webhook, on WhatsApp and by SMS: the child gets
the helpline first, one flag of the right category is raised, and the tutor still answers. One
message a category, in the ways children write it (SMS spelling, slang, English)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.safety import CATEGORIES
from tests.support.safety import IVORIAN, flags

SAID = {
    "self_harm": "jveu pu vivre, personne ne m'aime",
    "sexual_abuse": "un monsieur me demande des photos de moi toute nue",
    "abuse_home": "mon tonton me frappe avec la ceinture chaque soir",
    "threats": "un grand du quartier a dit qu'il va me tuer si je parle",
    "forced_marriage": "mes parents veulent me marier de force avec un vieux",
    "school_violence": "le maitre nous frappe avec la chicotte quand on se trompe",
    "bullying": "je suis harcelée à l'école, ils ont partagé ma photo sur le groupe",
    "runaway": "je dors dehors depuis hier, j'ose pas rentrer",
    "child_labour": "papa dit que je n'irai plus à l'école, je dois vendre au marché",
}


def test_the_list_names_every_category() -> None:
    assert set(SAID) == set(CATEGORIES)


@pytest.mark.parametrize("channel", ["whatsapp", "sms"])
async def test_every_category_is_heard_on_both_channels(make_harness: Any, channel: str) -> None:
    h = await make_harness()
    await h.make_user(IVORIAN, mode="child")
    for category, text in SAID.items():
        before = len(await h.texts_to(IVORIAN))
        h.llm.push_text(f"Je t'écoute ({category}).")
        await h.inbound(IVORIAN, text, channel=channel)
        await h.settle()
        texts = (await h.texts_to(IVORIAN))[before:]
        assert "116" in texts[0], (category, texts)  # the helpline first
        assert texts[-1].startswith("Je t'écoute"), (category, texts)  # then the tutor
    raised = [(f.category, f.source) for f in await flags(h)]
    assert sorted(c for c, _ in raised) == sorted(CATEGORIES)
    assert all(source == "phrases" for _, source in raised)
