"""SMS text chosen by cost, not by habit: accents kept (UCS-2) when they cost no more segments than
the GSM-7 transliteration, else transliterated (bot.channel.formatting.to_sms)."""

from __future__ import annotations

import pytest

from bot.channel import formatting
from bot.channel.keywords import stop_line


@pytest.mark.parametrize(("text", "sent"), [
    # Short: one segment either way, so the words stay as written.
    ("Tes tâches sont prêtes.", "Tes tâches sont prêtes."),
    ("Leçon de SVT : la photosynthèse.", "Leçon de SVT : la photosynthèse."),
    # Only GSM-7 accents: nothing to choose.
    ("Élève très appliquée, à revoir : les fractions.", "Élève très appliquée, à revoir : les fractions."),
    # 71 to 160 characters: UCS-2 would be 2 segments, GSM-7 is 1, so transliterated.
    ("Tes tâches du jour : réviser les fractions, préparer l'exposé de SVT et relire la leçon sur "
     "la photosynthèse avant demain.",
     "Tes taches du jour : réviser les fractions, préparer l'exposé de SVT et relire la lecon sur "
     "la photosynthèse avant demain."),
])
def test_the_cheaper_encoding_is_chosen(text: str, sent: str) -> None:
    assert formatting.to_sms(text) == sent
    gsm = formatting.to_gsm7(formatting.to_plain(text))
    assert formatting.sms_cost(sent) <= formatting.sms_cost(gsm)
    if sent != gsm:  # kept as written: it really costs no more
        assert formatting.sms_segments(sent)[0] == "UCS-2"


def test_a_long_answer_is_counted_over_its_parts() -> None:
    paragraph = "La fraction 3/4 se lit « trois quarts » : on partage l'unité en quatre parts égales. "
    text = paragraph * 8  # over 600 characters: several parts
    sent = formatting.to_sms(text)
    assert formatting.is_gsm7(sent)  # UCS-2 would cost more than twice as many segments
    assert formatting.sms_cost(sent) == sum(formatting.sms_segments(p)[1] for p in formatting.sms_parts(sent))
    assert formatting.sms_cost(sent) < formatting.sms_cost(formatting.to_plain(text))


def test_the_stop_line_says_the_least_the_rules_need() -> None:
    assert stop_line("fr") == "STOP pour arrêter" and stop_line("en") == "STOP to end"
    assert all(len(stop_line(language)) <= 20 for language in ("fr", "en"))


def test_accents_never_cost_one_more_message() -> None:
    """Cut into parts, text as written can cost as many segments as its transliteration yet arrive
    as two messages where one would do: the transliteration goes then."""
    text = ("Deblo t'aide à l'école et au travail. Pose ta question !\nREVISION : réviser tes quiz\n"
            "CLASSE : ta classe\nPROGRES : tes progrès\nBILAN : ta semaine\nTACHES : tes tâches et rappels\n"
            "AIDE 2 : la suite")
    sent = formatting.to_sms(text)
    assert len(formatting.sms_parts(sent)) == 1 and "taches" in sent, sent
