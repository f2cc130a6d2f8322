"""The docs that do not drift: every file ARCHITECTURE.md, README.md and tests/README.md name exists,
and ARCHITECTURE.md names packages and modules, never a private function or constant."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("ARCHITECTURE.md", "README.md", "tests/README.md")
# ARCHITECTURE's table abbreviates the core's packages; the domains and edges go by their names
# under bot/.
ABBREVIATIONS = {"st/": "bot/storage/", "ch/": "bot/channel/", "ag/": "bot/agent/", "pl/": "bot/pipeline/"}
NAMED_FILE = re.compile(r"`([A-Za-z0-9_./-]+\.(?:py|md|txt|html|css|js|toml|yml|ini))`")
# `users.delivery_blocked_reason`/`_at` names a column's sibling, not a private name.
PRIVATE = re.compile(r"`(?:[\w./]+\.)?(_[A-Za-z]\w*)(?:\(\))?`")


def _candidates(name: str) -> list[str]:
    found = [name, f"bot/{name}", f"tests/{name}"]
    found += [full + name[len(short):] for short, full in ABBREVIATIONS.items() if name.startswith(short)]
    return found


def _exists(name: str) -> bool:
    if any((ROOT / c).exists() for c in _candidates(name)):
        return True
    # A bare file name (`texts.py`) stands for a module the sentence around it places.
    return "/" not in name and any(ROOT.glob(f"[bht]*/**/{name}"))


def test_every_file_the_docs_name_exists() -> None:
    missing = [f"{doc}: {name}" for doc in DOCS
               for name in sorted(set(NAMED_FILE.findall((ROOT / doc).read_text())))
               if not _exists(name)]
    assert not missing, "named but not there:\n" + "\n".join(missing)


def test_architecture_names_no_private_function() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    private = sorted({m for m in PRIVATE.findall(text) if m != "_at"})
    assert not private, f"ARCHITECTURE.md names private names (name the module instead): {private}"


def test_the_check_finds_a_missing_file_and_a_private_name() -> None:
    assert not _exists("bot/capabilities/quiz.py") and _exists("pl/messages.py") and _exists("texts.py")
    assert PRIVATE.findall("see `_signed_form` and `pl/workers._claim()`") == ["_signed_form", "_claim"]
