"""Real Twilio payloads and signature vectors, kept in tests/core/corpus (see its INDEX.md for where
each comes from)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "core" / "corpus"


def corpus(name: str) -> dict[str, Any]:
    return json.loads((CORPUS / name).read_text())
