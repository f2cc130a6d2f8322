"""The quiz types: everything one type of quiz does differently, in one place.

A `QuizType` says how a quiz of that type is stored (`code`, the value of `quiz_type` in the menu
and in `quiz_items`), which tool asks it, what the model gets back, how it is shown (the numbered
menu, the buttons' labels, an option's name in a verdict), how a reply is read and what to answer
when the reply is not an option. `bot/learning/quiz.py`, `handlers/quiz_answer.py` and
`handlers/review.py` ask the quiz's type (`quiz_type_of`) instead of comparing codes.

A new quiz type is one more `QuizType` here, added to `QUIZ_TYPES`, and its tool in `tools/`.
`tests/pedagogy/test_quiz_types.py` checks that no module elsewhere compares `quiz_type` with a code
and that every registered type has every behaviour.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from unidecode import unidecode

from bot.texts import fr_en

MCQ = "mcq"
TRUE_FALSE = "tf"

KEYCAPS = ("1️⃣", "2️⃣", "3️⃣", "4️⃣")
LETTERS = "abcd"
TRUE_WORDS = frozenset({"vrai", "v", "true"})
FALSE_WORDS = frozenset({"faux", "f", "false"})

_LETTER = re.compile(r"^\(?([a-d])\s*[\).:]?$")

Options = tuple[str, ...]


def normalise(text: str) -> str:
    """Lower case, no accents, no surrounding punctuation, single spaces."""
    text = unicodedata.normalize("NFKC", text)
    text = unidecode(text).casefold()
    text = re.sub(r"\s+", " ", text).strip()
    return text.strip(" .!?,;:'\"()[]*_-")


@dataclass(frozen=True)
class QuizType:
    """One type of quiz. The callables take the quiz's question and options as stored."""

    code: str
    """Stored in the menu and in `quiz_items.quiz_type` (at most 8 characters)."""
    tool_name: str
    """The tool that asks it (`tools/<tool_name>.py`)."""
    note_name: str
    """Its name in the note the tutor reads after the answer (English: it is for the model)."""
    shown_arguments: tuple[str, ...]
    """The tool's arguments the model may see again once the quiz is asked (`shown`'s keys)."""
    shown: Callable[[str, Options], dict[str, Any]]
    """The quiz as the tool result shows it to the model: never the answer."""
    count: Callable[[Options], int]
    """How many options a reply can choose from."""
    labels: Callable[[Options, str], Options]
    """The options' labels in a language: the buttons or the list of the menu."""
    option_label: Callable[[Options, int, str], str]
    """One option as the verdict and the notes name it."""
    render: Callable[[str, Options, bool, str], str]
    """The numbered menu: (question, options, on WhatsApp, language)."""
    parse_words: Callable[[Options, str], int | None]
    """The zero-based option a reply that is not a number chooses, or None."""
    retry_hint: Callable[[Options, str], str]
    """What a review answers to a short reply that is no option (« Réponse attendue : 1, 2, 3 ou 4. »)."""


# --- multiple choice ----------------------------------------------------------------------------


def _mcq_render(question: str, options: Options, whatsapp: bool, language: str) -> str:
    lines = [f"🧠 Quiz : {question}" if whatsapp else f"Quiz : {question}"]
    for i, option in enumerate(options):
        lines.append(f"{KEYCAPS[i]} {option}" if whatsapp else f"{i + 1}) {option}")
    numbers = ", ".join(str(i + 1) for i in range(len(options) - 1))
    last = len(options)
    lines.append(
        fr_en(language, f"Réponse : le numéro du choix ({numbers} ou {last}).",
              f"Reply with the number of your answer ({numbers} or {last}).")
    )
    return "\n".join(lines)


def _mcq_words(options: Options, reply: str) -> int | None:
    """The option's letter (`b`) or its text."""
    letter = _LETTER.match(reply.strip().casefold())
    if letter:
        index = LETTERS.index(letter.group(1))
        return index if index < len(options) else None
    wanted = normalise(reply)
    for index, option in enumerate(options):
        if wanted and normalise(option) == wanted:
            return index
    return None


def _mcq_hint(options: Options, language: str) -> str:
    numbers = ", ".join(str(i + 1) for i in range(len(options) - 1))
    last = len(options)
    return fr_en(language, f"Réponse attendue : {numbers} ou {last}.", f"Reply with {numbers} or {last}.")


MULTIPLE_CHOICE_TYPE = QuizType(
    code=MCQ,
    tool_name="interactive_quiz",
    note_name="Quiz",
    shown_arguments=("question", "options"),
    shown=lambda question, options: {"question": question, "options": list(options)},
    count=len,
    labels=lambda options, language: options,
    option_label=lambda options, index, language: f"{index + 1}) {options[index]}",
    render=_mcq_render,
    parse_words=_mcq_words,
    retry_hint=_mcq_hint,
)


# --- true or false ------------------------------------------------------------------------------


def true_false_labels(language: str) -> tuple[str, str]:
    return (fr_en(language, "Vrai", "True"), fr_en(language, "Faux", "False"))


def _true_false_render(question: str, options: Options, whatsapp: bool, language: str) -> str:
    true_label, false_label = true_false_labels(language)
    head = fr_en(language, "Vrai ou faux ?", "True or false?")
    choices = (
        f"{KEYCAPS[0]} {true_label} / {KEYCAPS[1]} {false_label}"
        if whatsapp
        else f"1 {true_label} / 2 {false_label}"
    )
    how = fr_en(language, "Réponse : 1 (Vrai) ou 2 (Faux).", "Reply 1 (True) or 2 (False).")
    lines = [f"🧠 {head} {question}" if whatsapp else f"{head} {question}", choices, how]
    return "\n".join(lines)


def _true_false_words(options: Options, reply: str) -> int | None:
    """`vrai`/`true`/`v` or `faux`/`false`/`f`."""
    word = normalise(reply)
    if word in TRUE_WORDS:
        return 0
    if word in FALSE_WORDS:
        return 1
    return None


TRUE_FALSE_TYPE = QuizType(
    code=TRUE_FALSE,
    tool_name="true_false_quiz",
    note_name="True/false",
    shown_arguments=("statement",),
    shown=lambda question, options: {"statement": question},
    count=lambda options: 2,
    labels=lambda options, language: true_false_labels(language),
    option_label=lambda options, index, language: true_false_labels(language)[index],
    render=_true_false_render,
    parse_words=_true_false_words,
    retry_hint=lambda options, language: fr_en(
        language, "Réponse attendue : 1 (Vrai) ou 2 (Faux).", "Reply with 1 (True) or 2 (False)."),
)


# --- the registry -------------------------------------------------------------------------------

QUIZ_TYPES: dict[str, QuizType] = {t.code: t for t in (MULTIPLE_CHOICE_TYPE, TRUE_FALSE_TYPE)}


def quiz_type_of(code: str) -> QuizType:
    """The type stored as `code`; a code no type has reads as multiple choice, as it always did."""
    return QUIZ_TYPES.get(code, MULTIPLE_CHOICE_TYPE)
