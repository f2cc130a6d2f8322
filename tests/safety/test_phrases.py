"""The phrase list, the moderation response as read, and the settings of the safety group: no
database, no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.channel.formatting import is_gsm7
from bot.config import ConfigError, load_settings
from bot.safety import caring_reply, fold, load_phrases, read_result
from bot.storage.models import User
from tests.fakes.moderation import CATEGORIES

DISTRESS = [
    ("Je veux mourir", "self_harm"), ("jveux mouriiir", "self_harm"), ("g envie de mourir", "self_harm"),
    ("J’ai envie d’en finir", "self_harm"), ("je vais me suicider ce soir", "self_harm"),
    ("chui suicidaire", "self_harm"), ("j'ai plus envie de vivre", "self_harm"),
    ("Je veux en finir avec la vie", "self_harm"), ("I want to kill myself", "self_harm"),
    ("kms", "self_harm"), ("i wanna die", "self_harm"), ("I cut myself again", "self_harm"),
    ("On me touche la nuit", "sexual_abuse"), ("mon beau-père me touche", "sexual_abuse"),
    ("il m'a violée", "sexual_abuse"), ("my uncle touched me", "sexual_abuse"),
    ("Il me frappe", "abuse_home"), ("ma mère me frappe tous les jours", "abuse_home"),
    ("mon père me bat", "abuse_home"), ("ILS ME TABASSENT", "abuse_home"), ("he beats me", "abuse_home"),
    ("my dad hits me", "abuse_home"), ("il menace de me tuer", "threats"),
    ("jdors dehors depuis hier", "runaway"), ("ils ont pris la dot, je dois me marier", "forced_marriage"),
    ("le maître m'a giflé", "school_violence"), ("on m'a sorti de l'école", "child_labour"),
    ("ils me traitent de sorcière", "bullying"), ("il a dit qu'il va me planter", "threats"),
    ("j'ai pris tous les cachets", "self_harm"), ("a koi bon vivre", "self_harm"),
    ("mon père m'a mis dehors hier soir", "runaway"), ("ma tante m'a chassée de la maison", "runaway"),
    ("je veux pas me marier, mon papa m'oblige", "forced_marriage"),
]
NOT_DISTRESS = [
    "Explique-moi la mort de Louis XVI", "Je vais mourir de rire", "j'ai failli mourir de rire",
    "Il me bat toujours aux échecs", "ça me tape sur les nerfs", "Je ne veux pas mourir",
    "Pourquoi Camus parle du suicide ?", "J'ai envie d'en finir avec cet exercice",
    "Le héros veut mourir pour sa patrie", "Cette chanson me touche beaucoup", "Beats me!",
    "Hit me up after class", "Qui a tué Jules César ?",
    "What is the boiling point of water?", "La violence dans Germinal",
    "mon frère m'a battu 4-1 à FIFA", "Ma mère va me tuer si je rentre en retard, haha",
    "Le personnage dit « je veux mourir » : quelle figure de style ?", "Je dois me marier un jour ?",
    "Un monsieur m'a demandé mon chemin à la sortie de l'école", "this test is going to kill me",
    "j'ai tellement faim, je vais mourir",
    "Le prof m'a mis dehors parce que je parlais en classe", "on m'a mis à la porte du cours de maths",
    "je ne veux pas me marier trop jeune, c'est le sujet de ma dissertation",
]


@pytest.mark.parametrize(("text", "category"), DISTRESS)
def test_distress_phrases_are_found(text: str, category: str) -> None:
    assert load_phrases().match(text) == category


@pytest.mark.parametrize("text", NOT_DISTRESS)
def test_topics_and_figures_of_speech_are_not_distress(text: str) -> None:
    assert load_phrases().match(text) is None


def test_folding_drops_case_accents_punctuation_and_sms_spellings() -> None:
    assert fold("  J’VEUX MOURIIIR!!! ") == "j veux mourir"
    assert fold("jveux") == "je veux" and fold("Chuis") == "je suis" and fold("Élève") == "eleve"
    assert fold("jdor avc dotres, jtravaille") == "je dors avec d autres je travaille"


def test_the_operators_file_adds_phrases_and_a_bad_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "phrases.txt"
    path.write_text("# nos mots\nself_harm: je veux partir pour toujours\nabuse: on me force à\n"
                    "nonsense: whatever\nviolence:\n", encoding="utf-8")
    phrases = load_phrases(str(path))
    assert phrases.match("Je veux PARTIR pour toujours") == "self_harm"
    assert phrases.match("on me force à me taire") == "sexual_abuse"  # `abuse`: an earlier name
    assert phrases.match("whatever") is None
    assert phrases.match("Il me frappe") == "abuse_home"  # the built-in list still applies
    assert load_phrases(str(tmp_path / "missing.txt")).match("je veux mourir") == "self_harm"


def _response(flagged: bool, *hit: str) -> dict[str, object]:
    return {"id": "modr-1", "model": "omni-moderation-latest", "results": [{
        "flagged": flagged, "categories": {c: c in hit for c in CATEGORIES},
        "category_scores": {c: 0.9 if c in hit else 0.001 for c in CATEGORIES}}]}


def test_moderation_categories_map_to_ours() -> None:
    assert read_result(_response(True, "self-harm", "violence")) == "self_harm"
    assert read_result(_response(True, "sexual/minors")) == "sexual_abuse"
    assert read_result(_response(True, "harassment/threatening")) == "threats"
    assert read_result(_response(True, "hate", "illicit")) is None  # flagged, but not distress
    assert read_result(_response(False)) is None
    with pytest.raises(ValueError):
        read_result({"results": []})


def test_helplines_setting_is_checked_and_named() -> None:
    settings = load_settings({"SAFETY_HELPLINES": "ci=116, BJ=138 ,GH=0800 111 222"})
    assert settings.safety.safety_helplines == (("CI", "116"), ("BJ", "138"), ("GH", "0800 111 222"))
    assert load_settings({}).safety.helpline("CM") == "116"
    with pytest.raises(ConfigError, match="SAFETY_HELPLINES must look like CI=116"):
        load_settings({"SAFETY_HELPLINES": "CI:116"})
    with pytest.raises(ConfigError, match="MODERATION_BASE_URL must start with http"):
        load_settings({"MODERATION_BASE_URL": "moderation.local"})


def test_the_caring_reply_fits_sms_and_never_makes_up_a_number() -> None:
    safety = load_settings({}).safety
    for phone, number in (("+2250700000101", "116"), ("+2290190000103", "138"), ("+22890000104", "1011")):
        for language in ("fr", "en"):
            text = caring_reply(safety, User(phone=phone, language=language))
            assert number in text and is_gsm7(text), (phone, language)
    unknown = caring_reply(safety, User(phone="+5511987654321", language="fr"))
    assert "appeler gratuitement" not in unknown and "adulte de confiance" in unknown
