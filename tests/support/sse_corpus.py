"""Where the shared corpus of recorded provider streams (SSE) is, with expected.json describing each."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "sse"
if not CORPUS.is_dir():  # the repository may be checked out elsewhere than next to the corpus
    CORPUS = Path("/work/shared/corpus/sse")
