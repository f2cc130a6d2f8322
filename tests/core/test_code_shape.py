"""The ratchets of scripts/code_shape.py. No function in bot/, handlers/ or tools/ is longer than
60 lines unless scripts/long_functions.txt lists it with its length; a listed one may shrink,
never grow, and the list holds at most three. No module there is longer than 500 lines unless
scripts/large_modules.txt lists it, by path, with its length; a listed one may shrink, never grow,
and an entry whose module is gone is a hint to remove it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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


def test_no_module_is_too_long_or_grew() -> None:
    problems, hints = shape.module_ratchet(shape.ratcheted_module_sizes(), shape.read_large_modules())
    for hint in hints:  # a listed module that shrank does not fail: the number should follow
        print(f"hint: {hint}")
    assert not problems, "\n".join(problems)


def test_the_module_ratchet_judges_length_growth_shrinking_and_removal(tmp_path: Path) -> None:
    listing = tmp_path / "large_modules.txt"
    listing.write_text("# comment\nbot/big.py 700\nbot/gone.py 600\n")
    allowed = shape.read_large_modules(listing)
    assert allowed == {"bot/big.py": 700, "bot/gone.py": 600}
    problems, hints = shape.module_ratchet([("bot/big.py", 700), ("bot/small.py", 500)], allowed)
    assert problems == [] and hints == ["bot/gone.py no longer exists: remove it from the list"]
    new = shape.module_ratchet([("bot/new.py", 501)], {})[0]
    assert len(new) == 1 and "bot/new.py is 501 lines" in new[0]
    grew = shape.module_ratchet([("bot/big.py", 701)], {"bot/big.py": 700})[0]
    assert len(grew) == 1 and "grew to 701" in grew[0]
    shrank = shape.module_ratchet([("bot/big.py", 650)], {"bot/big.py": 700})
    assert shrank[0] == [] and "shrank to 650" in shrank[1][0]
    within = shape.module_ratchet([("bot/big.py", 480)], {"bot/big.py": 700})
    assert within[0] == [] and "within the limit" in within[1][0]
    # Matched by path: a listed module moved whole is new where it lands, and its old entry is stale.
    moved_problems, moved_hints = shape.module_ratchet([("bot/sub/big.py", 700)], {"bot/big.py": 700})
    assert len(moved_problems) == 1 and "bot/sub/big.py" in moved_problems[0]
    assert moved_hints == ["bot/big.py no longer exists: remove it from the list"]


def test_migrations_are_left_out_of_the_module_ratchet(tmp_path: Path) -> None:
    for pkg in shape.PACKAGES:
        (tmp_path / pkg).mkdir()
    revisions = tmp_path / "bot" / "migrations" / "versions"
    revisions.mkdir(parents=True)
    (revisions / "0001_first.py").write_text("x = 1\n" * 600)
    (tmp_path / "bot" / "long.py").write_text("x = 1\n" * 501)
    assert shape.ratcheted_module_sizes(tmp_path) == [("bot/long.py", 501)]


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
