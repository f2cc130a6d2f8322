"""The corpus of recorded provider streams (SSE), kept with the tests: each stream, `INDEX.md` (where
it comes from, what quirk it shows) and `expected.json` (what a correct client assembles)."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "agent" / "corpus" / "sse"
