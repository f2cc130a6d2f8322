"""The ratchet on long functions (scripts/code_shape.py): no function in bot/, handlers/ or
tools/ is longer than 60 lines unless scripts/long_functions.txt lists it with its length; a
listed one may shrink, never grow, and the list holds at most three."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.single_pass

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "code_shape.py"


def _shape() -> ModuleType:
    spec = importlib.util.spec_from_file_location("code_shape", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("code_shape", module)
    spec.loader.exec_module(module)
    return module


shape = _shape()


def test_no_function_is_too_long_or_grew() -> None:
    problems, hints = shape.ratchet(shape.functions(), shape.read_allowed())
    for hint in hints:  # a listed function that shrank does not fail: the number should follow
        print(f"hint: {hint}")
    assert not problems, "\n".join(problems)


def test_the_list_stays_short() -> None:
    allowed = shape.read_allowed()
    assert len(allowed) <= shape.MAX_LISTED, (
        f"scripts/long_functions.txt lists {len(allowed)} functions; at most {shape.MAX_LISTED}: "
        "split a long function rather than list it"
    )


def test_the_ratchet_judges_length_growth_and_shrinking() -> None:
    long_, short = shape.Function("bot/a.py", "f", 70), shape.Function("bot/b.py", "C.g", 65)
    allowed = {("a.py", "f"): ("bot/a.py::f", 70), ("b.py", "C.g"): ("bot/b.py::C.g", 66)}
    assert shape.ratchet([long_, short], allowed)[0] == []
    grew = shape.Function("bot/a.py", "f", 71)
    assert "grew" in shape.ratchet([grew], allowed)[0][0]
    new = shape.Function("bot/c.py", "h", 61)
    assert "h is 61 lines" in shape.ratchet([new], allowed)[0][0]
    assert any("shrank" in h for h in shape.ratchet([long_, short], allowed)[1])


def test_a_listed_function_still_matches_after_its_module_moves(tmp_path: Path) -> None:
    listing = tmp_path / "long_functions.txt"
    listing.write_text("# comment\nbot/agent.py::run_turn 80\n")
    moved = shape.Function("bot/loop/agent.py", "run_turn", 80)
    assert shape.ratchet([moved], shape.read_allowed(listing)) == ([], [])
    renamed = shape.Function("bot/loop/turn.py", "run_turn", 80)
    assert shape.ratchet([renamed], shape.read_allowed(listing)) == ([], [])
    twice = [renamed, shape.Function("bot/other.py", "run_turn", 62)]
    assert len(shape.ratchet(twice, shape.read_allowed(listing))[0]) == 2


def test_cycles_are_found_through_function_level_and_type_checking_imports(tmp_path: Path) -> None:
    for pkg in shape.PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "bot" / "sub").mkdir()
    (tmp_path / "bot" / "sub" / "__init__.py").write_text("from bot.sub import b\n")
    (tmp_path / "bot" / "a.py").write_text("def f():\n    from bot.sub import b\n")
    (tmp_path / "bot" / "sub" / "b.py").write_text("from .. import a\nfrom bot.sub import c\n")
    (tmp_path / "bot" / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot.sub import b\n"
    )
    cycles = shape.import_cycles(shape.import_graph(tmp_path))
    # bot.a imports bot.sub (run first), which imports b, which imports bot.a; c imports b back, if
    # only for the type checker, which closes a circle all the same.
    assert cycles == [["bot.a", "bot.sub", "bot.sub.b", "bot.sub.c"]]
