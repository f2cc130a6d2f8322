"""`python -m bench.cost --week`: the reference learner's week replayed through the whole bot, its
WhatsApp messages counted (deterministic: the same code sends the same messages)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bench.cost import week
from bot.documents import run_in_thread
from tests.support.harness import Harness

MakeHarness = Callable[..., Awaitable[Harness]]


@pytest.mark.one_backend  # the messages counted do not depend on the backend
async def test_the_reference_week_sends_the_counted_messages(make_harness: MakeHarness,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # The PDF drawn in this process rather than a fresh child's, and its text indexed by keywords
    # only: what is counted is the same, in a fraction of the time.
    monkeypatch.setattr("tools.generate_pdf.run_cpu", run_in_thread)
    w = await week.replay(await make_harness(EMBEDDINGS="off"))
    assert w.learner_messages == week.SESSIONS * week.TURNS_PER_SESSION == 40
    # 57 before: each quiz's menu then the model's line after it, the review offer after the answer,
    # and an answer of a few paragraphs in two messages (its first paragraph sent early).
    assert w.outbound == 42, week.turns_table(w)
    assert w.per_message <= 1.2 and w.month_usd() <= 2.5
    assert w.templates == 0  # every message of the week inside WhatsApp's window
