"""The search bench's French set (bench/search/set.json) as data, and its measure run at a small
size on the test database with the embeddings stand-in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bench.search.run import evaluate, load_set, photographed, score, shared_terms
from bot.services import Services


def test_the_set_is_what_the_bench_promises() -> None:
    full = load_set()
    paraphrases = [q for q in full.queries if q.kind == "paraphrase"]
    assert len(full.documents) >= 30 and len(full.queries) >= 60 and len(paraphrases) * 3 >= len(full.queries)
    assert {q.file for q in full.queries} <= set(full.documents)
    assert [q.text for q in paraphrases if shared_terms(q.text, full.documents[q.file])] == []
    # The held-out paraphrases: as many files' words avoided, on files that are photographed too.
    assert len(full.held_out) >= 10 and {q.file for q in full.held_out} <= set(photographed(full))
    assert [q.text for q in full.held_out if shared_terms(q.text, full.documents[q.file])] == []
    s = score([1, 3, None, 6])
    assert (s.recall_1, s.recall_5, s.count) == (0.25, 0.5, 4)
    assert s.mrr == pytest.approx((1 + 1 / 3 + 1 / 6) / 4)


async def test_the_bench_runs_at_a_small_size(make_services: Callable[..., Awaitable[Services]]) -> None:
    services = await make_services()
    small = load_set(8)
    assert len(small.documents) == 8 and any(q.kind == "paraphrase" for q in small.queries)
    results = await evaluate(services, small)
    for mode in ("keywords", "hybrid"):
        assert results[mode]["keywords"].recall_5 == 1.0, mode  # words found stay found after fusion
        assert results[mode]["all"].count == len(small.queries)
    assert results["keywords"]["paraphrase"].recall_5 == 0.0  # nothing in common to find them by
    # The stand-in knows that « lignes orthogonales » are right angles: found by meaning only.
    assert results["hybrid"]["paraphrase"].recall_5 > 0.0
