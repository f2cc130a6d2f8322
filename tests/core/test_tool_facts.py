"""A tool's facts live in its own module: tools/<name>.py states its modes and its step text, and no
table elsewhere (bot/, handlers/, tools/__init__.py, modes.py, registry.py) names tools to give them
modes or step texts. What each mode is offered and the job's step labels are derived from the tools."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import tools
from bot.agent.toolspec import StepText, Tool
from tools.modes import CHILD_AND_PRO, EVERY_PROFILE, PRO, PRO_AND_PARENT

ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = ROOT / "tools"
NOT_TOOLS = ("__init__", "modes", "registry")  # the package's own modules: they define no tool
MODE_NAMES = frozenset({"guest", "child", "pro"})
MODE_WORDS = MODE_NAMES | {"mode", "modes", "only"}


def _tool_modules() -> list[Path]:
    return sorted(p for p in TOOLS_DIR.glob("*.py") if p.stem not in NOT_TOOLS)


def _names_in(node: ast.AST, names: frozenset[str]) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and n.value in names}


def _tables(tree: ast.AST, names: frozenset[str]) -> Iterator[tuple[int, str]]:
    """Where a module keeps a table of tools: a dict keyed by tool names (one entry per tool, as the
    step texts were), a dict keyed by modes that names tools, or a name about modes (PRO_ONLY,
    MODE_TOOLS) given tool names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if keys & names:
                yield node.lineno, f"a dict keyed by tool names {sorted(keys & names)}"
            elif keys & MODE_NAMES and _names_in(node, names):
                yield node.lineno, f"a dict keyed by modes naming tools {sorted(_names_in(node, names))}"
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            words = {w for t in targets if isinstance(t, ast.Name) for w in t.id.lower().split("_")}
            if words & MODE_WORDS and _names_in(node.value, names):
                yield node.lineno, f"modes given to tools {sorted(_names_in(node.value, names))}"


def _step_strings(tree: ast.AST, texts: dict[str, str]) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in texts:
            yield node.lineno, f"the step text of {texts[node.value]}: {node.value!r}"


def test_every_tool_module_states_its_modes_and_its_step_text() -> None:
    modules = _tool_modules()
    assert len(modules) == 24
    by_name = tools.by_name()
    for path in modules:
        calls = [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Tool"]
        assert len(calls) == 1, path.name
        keywords = {k.arg for k in calls[0].keywords if k.arg is not None}
        assert {"modes", "step"} <= keywords, (path.name, sorted(keywords))
        tool = by_name[path.stem]
        stated = (EVERY_PROFILE, CHILD_AND_PRO, PRO, PRO_AND_PARENT)
        assert isinstance(tool, Tool) and tool.modes in stated, (path.name, tool.modes)
        assert isinstance(tool.step, StepText), path.name
        assert tool.step.emoji and tool.step.fr and tool.step.en, path.name
    assert sorted(by_name) == sorted(p.stem for p in modules)


def _facts() -> tuple[frozenset[str], dict[str, str]]:
    every = tools.all_tools()
    texts = {text: t.name for t in every if t.step is not None for text in (t.step.fr, t.step.en)}
    return frozenset(t.name for t in every), texts


def test_no_table_outside_a_tools_module_names_a_tools_modes_or_step_text() -> None:
    names, texts = _facts()
    found: list[str] = []
    scanned = [*(ROOT / "bot").rglob("*.py"), *(ROOT / "handlers").rglob("*.py"),
               *(TOOLS_DIR / f"{stem}.py" for stem in NOT_TOOLS)]
    for path in scanned:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(ROOT)
        found += [f"{where}:{line}: {what}" for line, what in _tables(tree, names)]
        found += [f"{where}:{line}: {what}" for line, what in _step_strings(tree, texts)]
        if path.parent == TOOLS_DIR:  # the package's own modules name no tool at all
            found += [f"{where}: names {sorted(_names_in(tree, names))}"] if _names_in(tree, names) else []
    for path in _tool_modules():  # a tool's module holds its own step text, no other tool's
        others = {text: name for text, name in texts.items() if name != path.stem}
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(ROOT)}:{line}: {what}" for line, what in _step_strings(tree, others)]
    assert found == []


def test_the_scan_finds_the_tables_it_is_about() -> None:
    """The shapes the facts were kept in before they moved into the tools' modules."""
    names, texts = _facts()
    old = ast.parse(
        '_STEPS = {"generate_pdf": ("📄", "Création du PDF", "Making the PDF"),\n'
        '          "web_search": ("🔎", "Recherche sur le web", "Searching the web")}\n'
        'PRO_ONLY = frozenset({"bash_execute", "draft_email"})\n'
        'MODE_TOOLS = {"guest": frozenset(), "child": frozenset({"web_search"}), "pro": ALL}\n'
        'STEP_OF = {"web_search": StepText("🔎", "x", "y")}\n'
    )
    assert sorted(line for line, _ in _tables(old, names)) == [1, 3, 4, 4, 5]
    assert sorted(line for line, _ in _step_strings(old, texts)) == [1, 1, 2, 2]
