"""One rule for a text said in two languages, `bot.texts.fr_en` (French first, English second): no
module under bot/, handlers/ or tools/ keeps a helper of its own (a `_t`, or a function that only
returns one of two texts by the language) nor spells the choice inline (`a if lang == "en" else b`).
Read from the source (ast)."""

from __future__ import annotations

import ast
from pathlib import Path

from bot.texts import fr_en

ROOT = Path(__file__).resolve().parents[2]
THE_RULE = ROOT / "bot" / "texts.py"


def test_french_first_english_for_whoever_chose_it() -> None:
    assert fr_en("en", "Bonjour", "Hello") == "Hello"
    assert fr_en("fr", "Bonjour", "Hello") == "Bonjour"
    assert fr_en(None, "Bonjour", "Hello") == "Bonjour"  # no language chosen yet
    assert fr_en("wo", "Bonjour", "Hello") == "Bonjour"
    assert fr_en("en", ("enfant", "enfants"), ("child", "children")) == ("child", "children")


def _asks_the_language(node: ast.expr) -> bool:
    """`x == "en"`, `x != "en"` (or "en" on the left), alone or inside `and`/`or`/`not`."""
    if isinstance(node, ast.BoolOp):
        return any(_asks_the_language(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _asks_the_language(node.operand)
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        return any(isinstance(s, ast.Constant) and s.value == "en" for s in sides)
    return False


def _only_statement(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt | None:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body[0] if len(body) == 1 else None


def _offences(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(root)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            only = _only_statement(node)
            if node.name == "_t" or (isinstance(only, ast.Return) and isinstance(only.value, ast.IfExp)
                                     and _asks_the_language(only.value.test)):
                found.append(f"{where}:{node.lineno}: {node.name}() is a bilingual helper of its own")
        elif isinstance(node, ast.IfExp) and _asks_the_language(node.test):
            found.append(f"{where}:{node.lineno}: a text chosen by the language inline")
    return found


def test_one_bilingual_helper_for_the_whole_project() -> None:
    paths = [p for top in ("bot", "handlers", "tools") for p in sorted((ROOT / top).rglob("*.py"))]
    offenders = [o for p in paths if p != THE_RULE for o in _offences(p)]
    assert not offenders, "use bot.texts.fr_en:\n" + "\n".join(offenders)


def test_the_scan_finds_a_private_helper_and_an_inline_choice(tmp_path: Path) -> None:
    sample = tmp_path / "bot" / "sample.py"
    sample.parent.mkdir()
    sample.write_text(
        "def _t(language, fr, en):\n    return en if language == 'en' else fr\n\n"
        "def _word(user, fr, en):\n    '''French first.'''\n"
        "    return en if user.language == 'en' else fr\n\n"
        "def label(lang):\n    return 'Yes' if lang == 'en' else 'Oui'\n\n"
        "def line(lang):\n    x = 1\n    return ('Hi' if 'en' == lang else 'Salut') * x\n"
    )
    found = _offences(sample, tmp_path)
    # Each helper, and each choice inline (the helpers' own included).
    assert sorted(int(f.split(":")[1]) for f in found) == [1, 2, 4, 6, 8, 9, 13], found
