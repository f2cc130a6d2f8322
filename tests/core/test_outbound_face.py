"""The face of bot.channel.outbound: what the package shows, and that callers use only that.

Callers import the names of `bot.channel.outbound.__all__` from the package, never a submodule
(`bot.channel.outbound.send`) nor an underscore name. Inside, the modules import one way: result
and scope at the bottom, then health, then attempt, then send and outbox; none imports the
package's `__init__`, and none is over MAX_LINES lines.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import bot.channel.outbound as outbound

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "bot.channel.outbound"
PACKAGE_DIR = ROOT / "bot" / "channel" / "outbound"
SCANNED = ("bot", "handlers", "tools", "tests", "bench")
MAX_LINES = 500

# What the package means to show. A name joins only on purpose: add it here and to `__all__`.
FACE = {
    # what a send did, and the words for it
    "SendResult", "MODEL_ADVICE", "USER_ADVICE", "explain",
    # the turn's send state, set for a block by `sending` only
    "sending", "SendKeys", "commit_turn", "turn_ending",
    # the opt-out as stored, delivery health
    "opted_out_now", "delivery_blocked", "note_status",
    # sending
    "send_to_user", "send_to_number", "send_template", "in_whatsapp_window", "wait_sent",
    # the messages a text and a file go in on WhatsApp (bench.cost counts them)
    "whatsapp_messages",
    # the files kept for a user's next message: handlers.waiting_files reads them, the arrival
    # looks for them (bot.pipeline.messages)
    "files_waiting",
    # the outbox
    "run_outbox", "deliver_outbox", "finish_inbound",
    # a reply's row written and rolled back by the worker's warm-up (bot.warm), never sent
    "rehearse_reply",
}

# Each module of the package, and the modules of the package it may import (those below it).
LAYERS: dict[str, set[str]] = {
    "result": set(),
    "scope": set(),
    "health": {"result", "scope"},
    "attempt": {"result", "scope", "health"},
    "send": {"result", "scope", "health", "attempt"},
    "outbox": {"result", "scope", "health", "attempt"},
}


def _submodules() -> set[str]:
    return {p.stem for p in PACKAGE_DIR.glob("*.py") if p.stem != "__init__"}


def _from_package(tree: ast.AST) -> list[tuple[int, str, list[str]]]:
    """Each import of the package or a module in it: (line, module imported from, names taken)."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names
                      if a.name == PACKAGE or a.name.startswith(f"{PACKAGE}.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == PACKAGE or node.module.startswith(f"{PACKAGE}.")):
            found.append((node.lineno, node.module, [a.name for a in node.names]))
    return found


def test_every_exported_name_exists_and_imports_from_the_package() -> None:
    for name in outbound.__all__:
        assert hasattr(outbound, name), f"{PACKAGE}.__all__ names {name}, which it does not have"
        namespace: dict[str, object] = {}
        exec(f"from {PACKAGE} import {name}", namespace)
        assert namespace[name] is getattr(outbound, name)


def test_all_is_exactly_the_public_face() -> None:
    assert len(set(outbound.__all__)) == len(outbound.__all__), "a name twice in __all__"
    assert set(outbound.__all__) == FACE
    # Nothing public in the package's namespace that __all__ leaves out (its submodules aside).
    # (`annotations` is the package's `from __future__ import annotations`, a feature, not a name.)
    feature = type(annotations)
    shown = {name for name, value in vars(outbound).items()
             if not name.startswith("_") and not isinstance(value, ModuleType | feature)}
    assert shown == set(outbound.__all__)


def test_the_face_names_no_submodule() -> None:
    for name in _submodules():
        importlib.import_module(f"{PACKAGE}.{name}")  # each module imports on its own
        assert name not in outbound.__all__


def test_callers_import_only_the_face() -> None:
    """No module outside the package imports one of its submodules or an underscore name."""
    submodules = _submodules()
    offenders = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path.is_relative_to(PACKAGE_DIR):
                continue
            for line, module, names in _from_package(ast.parse(path.read_text(), str(path))):
                where = f"{path.relative_to(ROOT)}:{line}"
                if module != PACKAGE:
                    offenders.append(f"{where} imports the submodule {module}")
                offenders += [f"{where} imports {PACKAGE}.{n}, a submodule" for n in names if n in submodules]
                offenders += [f"{where} imports the private {PACKAGE}.{n}"
                              for n in names if n.startswith("_")]
    assert not offenders, "\n".join(offenders)


def test_the_modules_of_the_package_import_one_way() -> None:
    assert _submodules() == set(LAYERS), "a module was added or removed: place it in LAYERS"
    offenders = []
    for name, allowed in LAYERS.items():
        path = PACKAGE_DIR / f"{name}.py"
        for line, module, names in _from_package(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(ROOT)}:{line}"
            if module == PACKAGE:
                offenders.append(f"{where} imports the package's __init__ (or {', '.join(names)} through it)")
                continue
            imported = module.removeprefix(f"{PACKAGE}.").split(".")[0]
            if imported not in allowed:
                offenders.append(f"{where} imports {imported}, not below {name}")
    assert not offenders, "\n".join(offenders)


def test_no_module_of_the_package_is_too_long() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE_DIR.glob("*.py")}
    assert all(n <= MAX_LINES for n in sizes.values()), sizes
