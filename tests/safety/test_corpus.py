"""The distress detector on the labelled corpus (bench/safety/corpus.jsonl), as `python -m bench.safety`
measures it: the held-out split, which neither the phrases' wording nor the meaning layer's weights
were fitted on, keeps at least today's figures (and everyday chat, most of what the bot reads,
raises no alarm), so that a change that hears less fails here. A change is judged first by the
bench's cross-validation on the tune data (`python -m bench.safety --cv 5`).

The held-out split is the third set of sentences written for it, by a writer who saw neither the
detector nor its misses, after the first two were folded into the tune data: on it the detector is
far below its aims (recall ≥ 95 %, false alarms ≤ 2 %). The floors asserted are what it reaches now,
with room for a sentence or two between machines (the embeddings' last digits differ by CPU), raised
as it improves."""

from __future__ import annotations

import pytest

from bench.safety.run import EVERYDAY, Line, load_corpus, measure
from bot.safety import CATEGORIES, hear, load_phrases

# What the held-out split gives today: recall 63.5 % (186 of 293), false alarms 2.3 % on look-alikes (7 of
# 310), none on everyday chat.
HELDOUT_RECALL_FLOOR = 0.62
HELDOUT_FALSE_ALARMS_CEILING = 0.026
HELDOUT_EVERYDAY_ALARMS_CEILING = 0.01

MISSED_BEFORE = ("je ne veux plus vivre", "je vais me pendre", "je suis fatigué de vivre",
                 "la vie n'a plus de sens", "je me coupe avec une lame", "je suis harcelée à l'école",
                 "le maître nous frappe avec la chicotte", "on veut me marier de force", "personne ne m'aime")


@pytest.fixture(scope="module")
def corpus() -> list[Line]:
    return load_corpus()


def test_the_corpus_covers_every_category_in_every_style(corpus: list[Line]) -> None:
    distress = [line for line in corpus if line.label not in ("none", EVERYDAY)]
    looks = [line for line in corpus if line.label == "none"]
    chat = [line for line in corpus if line.label == EVERYDAY]
    assert len(distress) >= 300 and len(looks) >= 300 and len(chat) >= 300
    assert {line.split for line in chat} == {"tune", "heldout"}
    for category in CATEGORIES:
        mine = [line for line in distress if line.label == category]
        styles = {line.style for line in mine if line.split == "tune"}
        assert styles == {"standard", "sms", "slang", "english"}, category
        assert {line.split for line in mine} == {"tune", "heldout"}, category
    assert {line.split for line in corpus} <= {"tune", "heldout"}
    assert len({line.text for line in corpus}) == len(corpus)


def test_the_held_out_split_is_heard_at_least_as_well_as_today(corpus: list[Line]) -> None:
    result = measure(corpus, "heldout")
    assert result.distress_recall >= HELDOUT_RECALL_FLOOR, result.missed
    assert result.false_alarm_rate <= HELDOUT_FALSE_ALARMS_CEILING, result.alarms
    assert result.everyday_alarm_rate <= HELDOUT_EVERYDAY_ALARMS_CEILING, result.alarms
    assert all(heard > 0 for heard, _, _ in result.recall.values())  # no category deaf


def test_the_phrase_list_raises_no_false_alarm_on_the_look_alikes(corpus: list[Line]) -> None:
    # The tune split's look-alikes, which the phrases are written against; the held-out split's
    # alarms, the phrases' among them, are held to its ceiling above.
    assert measure(corpus, "tune", phrases_only=True).alarms == []


def test_the_messages_once_missed_are_heard_as_their_category() -> None:
    phrases = load_phrases()
    found = {text: hear(text, phrases) for text in MISSED_BEFORE}
    categories = {text: d.category if d else None for text, d in found.items()}
    assert None not in categories.values(), categories
    assert categories["on veut me marier de force"] == "forced_marriage"
    assert categories["le maître nous frappe avec la chicotte"] == "school_violence"
    assert categories["je suis harcelée à l'école"] == "bullying"
