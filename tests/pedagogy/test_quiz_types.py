"""Each quiz type's behaviour lives in bot/learning/quiz_types.py: no module of bot/, handlers/ or
tools/ compares `quiz_type` with a code, and every registered type has every behaviour."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

from bot.learning.quiz_types import QUIZ_TYPES, QuizType, quiz_type_of

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "bot" / "learning" / "quiz_types.py"
OPTIONS = ("Abidjan", "Yamoussoukro", "Bouaké")


def _names_quiz_type(node: ast.expr) -> bool:
    """`quiz_type`, `x.quiz_type`, or a call on either (`str(quiz.quiz_type)`)."""
    if isinstance(node, ast.Name):
        return node.id == "quiz_type"
    if isinstance(node, ast.Attribute):
        return node.attr == "quiz_type"
    if isinstance(node, ast.Call):
        return any(_names_quiz_type(a) for a in node.args)
    return False


def _comparisons(source: str) -> list[int]:
    """The lines where `quiz_type` is compared (`==`, `in`, …) or matched (`match … case`)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.Match):
            operands = [node.subject]
        else:
            continue
        if any(_names_quiz_type(o) for o in operands):
            lines.append(node.lineno)
    return lines


def test_no_module_elsewhere_compares_quiz_type() -> None:
    paths = [p for top in ("bot", "handlers", "tools") for p in sorted((ROOT / top).rglob("*.py"))]
    offenders = [f"{p.relative_to(ROOT)}:{line}" for p in paths if p != HOME
                 for line in _comparisons(p.read_text(encoding="utf-8"))]
    assert not offenders, (
        "compare no quiz type code outside bot/learning/quiz_types.py; ask the type "
        f"(quiz_type_of(code) or Quiz.kind) instead: {offenders}"
    )


def test_the_scan_sees_the_branches_it_forbids() -> None:
    source = (
        "if quiz.quiz_type == TRUE_FALSE:\n    pass\n"
        "count = 2 if 'tf' != item.quiz_type else 4\n"
        "ok = str(menu.quiz_type) in ('tf',)\n"
        "match quiz_type:\n    case 'mcq':\n        pass\n"
        "kind = quiz_type_of(quiz.quiz_type)\n"
    )
    assert sorted(_comparisons(source)) == [1, 3, 4, 5]


def test_the_registry_is_keyed_by_code() -> None:
    assert QUIZ_TYPES, "no quiz type registered"
    for code, kind in QUIZ_TYPES.items():
        assert kind.code == code
        assert 0 < len(code) <= 8  # quiz_items.quiz_type is a String(8)
        assert quiz_type_of(code) is kind
    assert len({k.tool_name for k in QUIZ_TYPES.values()}) == len(QUIZ_TYPES)


@pytest.mark.parametrize("code", sorted(QUIZ_TYPES))
def test_every_type_has_every_behaviour(code: str) -> None:
    kind = QUIZ_TYPES[code]
    for field in dataclasses.fields(QuizType):
        value = getattr(kind, field.name)
        assert value is not None and value != "" and value != (), f"{code} has no {field.name}"
    tool = importlib.import_module(f"tools.{kind.tool_name}")
    assert tool.NAME == kind.tool_name
    assert kind.note_name.strip()
    shown = kind.shown("Q ?", OPTIONS)
    assert set(shown) == set(kind.shown_arguments)
    count = kind.count(OPTIONS)
    assert 2 <= count <= 4
    for language in ("fr", "en"):
        labels = kind.labels(OPTIONS, language)
        assert len(labels) == count and all(labels)
        assert all(kind.option_label(OPTIONS, i, language) for i in range(count))
        for whatsapp in (True, False):
            assert "Q ?" in kind.render("Q ?", OPTIONS, whatsapp, language)
        assert kind.retry_hint(OPTIONS, language).strip()
        for index, label in enumerate(labels):
            assert kind.parse_words(OPTIONS, label) == index, (code, label)
    assert kind.parse_words(OPTIONS, "peut-être, je ne sais pas") is None
