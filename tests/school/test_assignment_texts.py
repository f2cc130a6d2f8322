"""What an assignment's notice says, in French and in English: the date as each reads it, the SMS in
GSM-7 with the word to write, the button's title; and the request's checks (no database)."""

from __future__ import annotations

from datetime import date

import pytest

from bot.channel import formatting
from bot.learning import due_text
from bot.school import AssignmentError, notice_menu, notice_text, parse_due
from bot.storage.models import Assignment

TUESDAY = date(2026, 3, 10)


def homework(questions: int = 5, due_on: date | None = TUESDAY) -> Assignment:
    return Assignment(cohort_id=1, subject="Mathématiques", skill="fraction", skill_label="les fractions",
                      questions=questions, due_on=due_on, created_by="console")


def test_the_date_as_each_language_writes_it() -> None:
    assert due_text(TUESDAY, "fr") == "mar. 10 mars" and due_text(TUESDAY, "en") == "Tue 10 Mar"
    assert due_text(date(2026, 2, 1), "fr") == "dim. 1 févr."
    assert due_text(date(2026, 8, 15), "fr") == "sam. 15 août"


def test_the_notice_in_french_and_english() -> None:
    assert notice_text(homework(), "fr") == "📚 Devoir : 5 questions sur les fractions, avant le mar. 10 mars"
    assert notice_text(homework(1, None), "fr") == "📚 Devoir : 1 question sur les fractions"
    assert notice_text(homework(), "en") == "📚 Homework: 5 questions on les fractions, due Tue 10 Mar"
    sms = notice_text(homework(), "fr", "sms")
    assert sms.endswith("avant le mar. 10 mars. Écris DEVOIR pour commencer.")
    assert formatting.sms_segments(formatting.to_sms(sms)) == ("GSM-7", 1)
    assert notice_text(homework(), "en", "sms").endswith("Send HOMEWORK to start.")
    assert notice_menu(homework(), "fr").options == ("Commencer",)
    assert notice_menu(homework(), "en").options == ("Start",)


@pytest.mark.parametrize(("given", "said_fr", "said_en"), [
    ("2026-03-09", "la date 2026-03-09 est passée", "the date 2026-03-09 is in the past"),
    ("10/03/2026", "date invalide '10/03/2026' : écrire AAAA-MM-JJ",
     "invalid date '10/03/2026': write YYYY-MM-DD"),
    ("2026-02-30", "date invalide '2026-02-30'", "invalid date '2026-02-30'"),
])
def test_a_bad_date_is_named_in_the_operators_language(given: str, said_fr: str, said_en: str) -> None:
    for language, said in (("fr", said_fr), ("en", said_en)):
        with pytest.raises(AssignmentError) as refused:
            parse_due(given, TUESDAY, language)
        assert said in str(refused.value)
    assert parse_due("2026-03-10", TUESDAY, "fr") == TUESDAY and parse_due("  ", TUESDAY, "fr") is None
