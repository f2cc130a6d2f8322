"""Where shared test code lives: no module under tests/ or bench/ imports a test module (test_*.py)
or a conftest (pytest loads those itself), and across directories only tests.support (helpers,
constants and fixtures the tests share) and tests.fakes (the wire-level stand-ins of paid services)
are imported. Every import is read from the source (ast), those inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("tests", "bench")
SHARED = ("tests.support", "tests.fakes")


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under tests/ and bench/ (a package's __init__ names it)."""
    found: dict[str, Path] = {}
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _targets(node: ast.Import | ast.ImportFrom, package: str, modules: dict[str, Path]) -> list[str]:
    """The modules an import statement loads: `from a import b` is a.b when that is a module, else a."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]


def _shared(target: str) -> bool:
    return any(target == s or target.startswith(f"{s}.") for s in SHARED)


def layout_problems(root: Path = ROOT) -> list[str]:
    """Each import of a test module or a conftest, and each import across directories of a module
    that is neither in tests.support nor in tests.fakes."""
    modules = _modules(root)
    problems: list[str] = []
    for name, path in modules.items():
        here = _package(name, path)
        where = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in dict.fromkeys(_targets(node, here, modules)):
                if target != "tests" and not target.startswith("tests."):
                    continue
                leaf = target.rpartition(".")[2]
                if leaf.startswith("test_") or leaf == "conftest":
                    problems.append(f"{where}:{node.lineno} imports {target}: a test module or a conftest "
                                    "is never imported; move what is shared to tests/support/")
                elif not _shared(target) and target in modules and _package(target, modules[target]) != here:
                    problems.append(f"{where}:{node.lineno} imports {target}: only tests.support and "
                                    "tests.fakes are imported from another directory")
    return problems


def test_no_module_imports_a_test_module_a_conftest_or_another_directorys_helpers() -> None:
    problems = layout_problems()
    assert not problems, "\n".join(problems)


def test_the_layout_check_finds_each_kind_of_import(tmp_path: Path) -> None:
    files = {
        "tests/__init__.py": "",
        "tests/conftest.py": "from tests.support.harness import Harness\n",
        "tests/support/__init__.py": "",
        "tests/support/harness.py": "from tests.fakes.llm import FakeLLM\n",
        "tests/fakes/__init__.py": "",
        "tests/fakes/llm.py": "",
        "tests/a/__init__.py": "",
        "tests/a/conftest.py": "",
        "tests/a/helpers.py": "",
        "tests/a/test_one.py": "from tests.a.helpers import x\nfrom . import helpers\n",
        "tests/a/test_three.py": "from . import test_one\n",
        "tests/b/__init__.py": "",
        "tests/b/test_two.py": (
            "from tests.support import harness\nfrom tests.fakes.llm import FakeLLM\n"
            "from tests.a.test_one import helper\nfrom tests.a.conftest import fixture\n"
            "from tests.a.helpers import x\n\n\ndef f():\n    from tests.a import test_one\n"
        ),
        "bench/__init__.py": "",
        "bench/run.py": "from bench import other\nimport tests.a.test_one\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = sorted(p.split(" imports ")[0] + " " + p.split(" imports ")[1].split(":")[0]
                   for p in layout_problems(tmp_path))
    assert found == [
        "bench/run.py:2 tests.a.test_one",
        "tests/a/test_three.py:1 tests.a.test_one",
        "tests/b/test_two.py:3 tests.a.test_one",
        "tests/b/test_two.py:4 tests.a.conftest",
        "tests/b/test_two.py:5 tests.a.helpers",
        "tests/b/test_two.py:9 tests.a.test_one",
    ]
