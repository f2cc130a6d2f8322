"""Every page and e-mail body is written one way: from a template of bot/templates/ through
bot.render. No Python module holds an HTML document, a style sheet or a script in a string."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What only a page (or its style and script) holds: a document's or an element's opening tag, a CSS
# rule with a declaration, a script's functions or its reach into the page.
PAGE_MARKS = re.compile(
    r"<!doctype|<html\b|<head\b|<body\b|<style\b|<script\b"
    r"|(?:^|[}\s])(?:[a-z][a-z0-9]*|[.#][\w-]+)(?:[\s,.#:>][\w\s,.#:>()-]*)?\{\s*[a-z-]+\s*:[^{};]+;"
    r"|\bfunction\s*\(|\bdocument\.(?:getElementById|querySelector|createElement)\b",
    re.I,
)
RE_CALLS = {"compile", "match", "search", "fullmatch", "sub", "subn", "split", "findall", "finditer"}


def _patterns_and_docstrings(tree: ast.AST) -> set[int]:
    """The string constants that are regular expressions (`re.…(pattern, …)`) or docstrings."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RE_CALLS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args):
            skipped.add(id(node.args[0]))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skipped.add(id(first.value))
    return skipped


def page_strings(root: Path) -> list[str]:
    """`path:line: text` of every string constant (f-strings' parts too) under bot/, handlers/ and
    tools/ that holds a page, a style sheet or a script."""
    found = []
    for path in sorted(p for top in ("bot", "handlers", "tools") for p in (root / top).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        skipped = _patterns_and_docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
                mark = PAGE_MARKS.search(node.value)
                if mark:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {mark.group(0).strip()!r}")
    return found


def test_no_page_style_or_script_is_written_in_python() -> None:
    """A page, an e-mail's HTML or a generated document's frame is a template (bot/templates/),
    rendered by bot.render with autoescaping; its style and script are templates it includes."""
    found = page_strings(ROOT)
    assert not found, "move these into a template under bot/templates/:\n" + "\n".join(found)


@pytest.mark.parametrize("text", [
    '<!DOCTYPE html><html lang="fr">', "<style nonce='x'>", "<SCRIPT>", "x<body style='a:b'>",
    "body{margin:0;color:#111}", ".card{background:#fff;border:0}", "h1, h2{margin:0 0 8px;line-height:1.25}",
    "(function () { var q = 1; })", 'document.getElementById("cfg")',
])
def test_the_check_sees_pages_styles_and_scripts(text: str) -> None:
    assert PAGE_MARKS.search(text)


@pytest.mark.parametrize("text", [
    "<p>Bonjour</p>", "<li>", '<a href="x">', "{name}: {value};", "{'a': 1}", "f(x) = {x: 1;}",
    "Voici {count} fichiers : {names}.", "les fonctions (function) de l'école",
    "Il reste {n:d} jours", "{:.1f} s",
])
def test_the_check_leaves_text_and_fragments_alone(text: str) -> None:
    assert not PAGE_MARKS.search(text)


def test_every_template_ships_with_the_package() -> None:
    """The image installs the package (not editable): each file of bot/templates/ must be matched by
    `[tool.setuptools.package-data]` in pyproject.toml."""
    import glob
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["bot"]
    bot = ROOT / "bot"
    shipped = {name for pattern in patterns for name in glob.glob(pattern, root_dir=bot)}
    templates = {str(p.relative_to(bot)) for p in (bot / "templates").rglob("*") if p.is_file()}
    assert templates - shipped == set(), "add their patterns to package-data in pyproject.toml"
