"""Search over the user's library: keyword hits (BM25 over the chunks' folded, stemmed words, the
candidates found by FTS5 or PostgreSQL full text) and vector hits (cosine with numpy over the
user's chunk vectors) merged into one score (closeness by meaning to the best file, plus the share
of the query's words a file holds, cubed: `fuse`), best file first, each named with the page or
sheet of its best chunk and a snippet around the words found there.

BM25 is computed here, not by the database, from the candidate chunks (every chunk holding a
query word, so the document frequencies are exact) and the user's chunk count: SQLite and
PostgreSQL then rank alike. A search covers the user's files and those of the classes (`cohorts`)
its caller says they are in now: a class's file is indexed once, for all its students."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import ColumnElement, func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from bot.library.embeddings import Embedder, EmbeddingError
from bot.library.text import keyword_terms, name_terms, word_spans
from bot.storage.models import LibraryChunk, UserFile

__all__ = ["MAX_QUERY_TERMS", "Ranked", "SearchHit", "fuse", "meaning_query", "query_terms", "search_files",
           "snippet_of"]

MAX_QUERY_TERMS = 12
MAX_CANDIDATES = 2000  # keyword candidates read per search
LEXICAL_WEIGHT = 1.5  # a file holding every word of the query outranks the best by meaning alone
VECTOR_DEPTH = 20  # files the vector side ranks
# A file further than this below the best file's cosine is no hit by meaning: e5's scores are
# packed together, so past the best ones the ranking is noise (bench.search: a wrong file sits
# within 0.04 of the right one for few queries, but above the threshold for most).
VECTOR_MARGIN = 0.04
BM25_K1, BM25_B = 1.2, 0.75
SNIPPET_WORDS = 28
_RAW_WORD = re.compile(r"\w+", re.UNICODE)
_LETTERS = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class Ranked:
    file_id: int
    chunk_id: int  # the file's best chunk on this side
    score: float  # BM25, cosine, or the fused score
    share: float  # of the query's words (keywords), closeness to the best file (vectors), in [0, 1]


@dataclass(frozen=True)
class SearchHit:
    file_id: int
    name: str
    mime: str
    snippet: str
    score: float
    locator: str = ""  # « page 3 », « feuille Bilan »; "" for a file without pages
    cohort_id: int | None = None  # a class's file


def query_terms(query: str) -> list[str]:
    """Words of a free-text query, without operators: the user's text never reaches the query
    language of FTS5 or tsquery as syntax."""
    found = _RAW_WORD.findall(unicodedata.normalize("NFC", query or ""))
    words = [w for w in found if len(w) > 1 or w.isdigit()]
    seen: list[str] = []
    for word in words:
        if word.casefold() not in (s.casefold() for s in seen):
            seen.append(word)
    return seen[:MAX_QUERY_TERMS]


def _titled(word: str) -> bool:
    return word[:1].isupper() and (len(word) == 1 or word[1:].islower())


def _lowered_titles(text: str) -> str:
    return _LETTERS.sub(lambda m: m.group().lower() if _titled(m.group()) else m.group(), text)


def meaning_query(query: str) -> str:
    """The query as the model reads it: in the case its words have inside a text. The model is
    case-sensitive (« Somme de quotients » finds other files than « somme de quotients »:
    bench.search's paraphrases fall from 0.70 to 0.52 at recall@1 with a capital first letter,
    to 0.39 in capitals), while a phone writes the first letter in capitals and a title or a
    shout writes them all. So a query in capitals is lowered, one in Title Case has its titled
    words lowered (acronyms stay: « TVA »), and otherwise the first word loses a capital that
    only starts the sentence; a name inside the query keeps its capital (« l'État »)."""
    letters = [ch for ch in query if ch.isalpha()]
    if letters and all(ch.isupper() for ch in letters):
        return query.lower()
    words = [w for w in _LETTERS.findall(query) if len(w) > 2]
    if words and all(_titled(w) or w.isupper() for w in words):
        return _lowered_titles(query)
    first = _LETTERS.search(query)
    if first and _titled(first.group()):
        return query[:first.start()] + first.group().lower() + query[first.end():]
    return query


def _keyword_query(query: str) -> list[str]:
    return list(dict.fromkeys(keyword_terms(query)))[:MAX_QUERY_TERMS]


def _scope(user_id: int, cohorts: Sequence[int]) -> ColumnElement[bool]:
    own = LibraryChunk.user_id == user_id
    return or_(own, LibraryChunk.cohort_id.in_(list(cohorts))) if cohorts else own


def _scope_sql(column: str, cohorts: Sequence[int]) -> str:
    """The same as text SQL: the class ids are ints the caller read from the database."""
    classes = ", ".join(str(int(c)) for c in cohorts)
    own = f"{column}user_id = :uid"
    return f"({own} OR {column}cohort_id IN ({classes}))" if classes else own


async def _candidates(db: AsyncSession, user_id: int, cohorts: Sequence[int],
                      terms: list[str]) -> list[tuple[int, int, str]]:
    """(chunk id, file id, keyword text) of the chunks in scope holding any of the terms."""
    if db.get_bind().dialect.name == "sqlite":
        sql = ("SELECT c.id, c.file_id, c.terms FROM library_chunks_fts "
               "JOIN library_chunks c ON c.id = library_chunks_fts.rowid "
               f"WHERE library_chunks_fts MATCH :match AND {_scope_sql('c.', cohorts)} "
               "ORDER BY c.id LIMIT :limit")
        params: dict[str, object] = {"match": " OR ".join(f'"{t}"' for t in terms)}
    else:
        params = {f"t{i}": t for i, t in enumerate(terms)}
        tsquery = " || ".join(f"plainto_tsquery('simple'::regconfig, :t{i})" for i in range(len(terms)))
        sql = (f"SELECT id, file_id, terms FROM library_chunks WHERE {_scope_sql('', cohorts)} "
               f"AND to_tsvector('simple'::regconfig, terms) @@ ({tsquery}) ORDER BY id LIMIT :limit")
    rows = await db.execute(text(sql), {**params, "uid": user_id, "limit": MAX_CANDIDATES})
    return [(int(r[0]), int(r[1]), str(r[2])) for r in rows]


async def _name_terms(db: AsyncSession, file_ids: set[int]) -> dict[int, Counter[str]]:
    rows = await db.execute(select(UserFile.id, UserFile.name).where(UserFile.id.in_(file_ids)))
    return {int(fid): Counter(name_terms(name)) for fid, name in rows}


async def _keyword_ranking(db: AsyncSession, user_id: int, cohorts: Sequence[int],
                           terms: list[str]) -> list[Ranked]:
    """(file id, best chunk id, BM25, share of the query's words) best first, one entry per file.
    The share weighs each query word by its idf (a word found nowhere counts at its most)."""
    if not terms:
        return []
    candidates = await _candidates(db, user_id, cohorts, terms)
    if not candidates:
        return []
    total, mean = (await db.execute(select(func.count(), func.avg(LibraryChunk.words))
                                    .where(_scope(user_id, cohorts)))).one()
    n, avgdl = int(total), float(mean or 1.0) or 1.0
    named = await _name_terms(db, {fid for _, fid, _ in candidates})
    # A chunk whose only query words are its file's name is no hit: every chunk carries the name.
    counted = [(cid, fid, counts) for cid, fid, words in candidates
               if any((counts := Counter(words.split()))[t] > named[fid][t] for t in terms)]
    if not counted:
        return []
    df = {t: sum(1 for _, _, c in counted if t in c) for t in terms}
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    weight = sum(idf.values()) or 1.0
    best: dict[int, tuple[float, int, float]] = {}
    for chunk_id, file_id, counts in counted:
        length = sum(counts.values())
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl)
        score = sum(idf[t] * counts[t] * (BM25_K1 + 1) / (counts[t] + norm) for t in terms if counts.get(t))
        if score > best.get(file_id, (-1.0, 0, 0.0))[0]:
            best[file_id] = (score, chunk_id, sum(idf[t] for t in terms if counts.get(t)) / weight)
    ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[1][1]))
    return [Ranked(file_id, chunk_id, score, share) for file_id, (score, chunk_id, share) in ranked]


async def _vector_ranking(db: AsyncSession, user_id: int, cohorts: Sequence[int], query: str,
                          embedder: Embedder | None) -> list[Ranked]:
    """(file id, best chunk id, cosine, closeness to the best file) best first, the VECTOR_DEPTH
    best files within VECTOR_MARGIN of the best; nothing when the user has no chunk embedded by
    this model yet or the query cannot be embedded now. A file scores its best chunk's cosine."""
    if embedder is None:
        return []
    rows = (await db.execute(
        select(LibraryChunk.id, LibraryChunk.file_id, LibraryChunk.embedding)
        .where(_scope(user_id, cohorts), LibraryChunk.model == embedder.model,
               LibraryChunk.embedding.is_not(None), LibraryChunk.text != "")  # not by its name alone
        .order_by(LibraryChunk.id))).all()
    if not rows:
        return []
    try:
        vector = (await embedder.embed([meaning_query(query)], query=True))[0]
    except EmbeddingError:
        return []  # keywords alone this time
    matrix = np.frombuffer(b"".join(bytes(r[2] or b"") for r in rows), dtype="<f4").reshape(len(rows), -1)
    if matrix.shape[1] != vector.shape[0]:
        return []
    scores = matrix @ vector
    top = float(scores.max())
    floor = max(embedder.min_similarity, top - VECTOR_MARGIN)
    best: dict[int, Ranked] = {}
    for index in np.argsort(-scores, kind="stable"):
        cosine = float(scores[index])
        if cosine < floor:
            break
        file_id = int(rows[index][1])
        if file_id not in best:
            best[file_id] = Ranked(file_id, int(rows[index][0]), cosine, 1 - (top - cosine) / VECTOR_MARGIN)
            if len(best) >= VECTOR_DEPTH:
                break
    return list(best.values())


def fuse(keywords: list[Ranked], vectors: list[Ranked]) -> list[Ranked]:
    """One ranking of both sides: a file scores its closeness by meaning to the best file (1 for
    the best, 0 at VECTOR_MARGIN below it) plus LEXICAL_WEIGHT times the cube of the share of the
    query's words it holds. Cubed: a paraphrase often shares one of its three or four words with
    a wrong file (« consommation » with an electricity bill for « impôt sur la consommation »),
    which must not outweigh the meaning, while a file holding all the words of a keyword query
    comes first. Ranks rather than scores (reciprocal rank fusion) let such a one-word match count
    as much as the best meaning. Each file keeps the chunk of the side that gave it the most (the
    words' chunk, which the snippet shows, on a tie); ties go to BM25. Without vectors the
    keywords' BM25 order stands."""
    if not vectors:
        return keywords
    lexical = {r.file_id: r for r in keywords}
    meaning = {r.file_id: r for r in vectors}
    fused = []
    for file_id in lexical.keys() | meaning.keys():
        words, close = lexical.get(file_id), meaning.get(file_id)
        by_words = LEXICAL_WEIGHT * words.share ** 3 if words else 0.0
        by_meaning = close.share if close else 0.0
        side = words if words and (close is None or by_words >= by_meaning) else close
        chunk = side.chunk_id if side else 0
        fused.append((by_words + by_meaning, words.score if words else 0.0, by_meaning, -file_id, chunk))
    fused.sort(reverse=True)
    return [Ranked(-neg_id, chunk, score, score) for score, _, _, neg_id, chunk in fused]


def snippet_of(chunk_text: str, terms: list[str]) -> str:
    """About SNIPPET_WORDS words of the chunk around the most query words, those marked « ».
    The chunk's start when none is there (a hit by meaning)."""
    spans = word_spans(chunk_text)
    if not spans:
        return ""
    wanted = set(terms)
    hits = [1 if form and form in wanted else 0 for _, _, form in spans]
    window = min(SNIPPET_WORDS, len(spans))
    sums = np.convolve(hits, np.ones(window, dtype=int), mode="valid")
    start = 0
    if sums.size and sums.max() > 0:  # the words found in the best window, centred
        best = int(np.argmax(sums))
        found = [i for i in range(best, best + window) if hits[i]]
        start = max(0, min((found[0] + found[-1]) // 2 - window // 2, len(spans) - window))
    chosen = spans[start:start + window]
    out, cursor = [], chosen[0][0]
    for begin, end, form in chosen:
        out.append(chunk_text[cursor:begin])
        word = chunk_text[begin:end]
        out.append(f"«{word}»" if form and form in wanted else word)
        cursor = end
    if start + window >= len(spans):
        out.append(chunk_text[cursor:])  # the closing punctuation
    body = re.sub(r"\s+", " ", "".join(out)).strip()
    return ("…" if start > 0 else "") + body + ("…" if start + window < len(spans) else "")


async def search_files(db: AsyncSession, user_id: int, query: str, *, limit: int = 5,
                       embedder: Embedder | None = None, cohorts: Sequence[int] = ()) -> list[SearchHit]:
    """The user's files (and those of `cohorts`) best matching `query` (keywords, and meaning when
    `embedder` is given and the chunks have vectors), best first, with the page or sheet and a snippet."""
    terms = _keyword_query(query)
    keywords = await _keyword_ranking(db, user_id, cohorts, terms)
    vectors = await _vector_ranking(db, user_id, cohorts, query, embedder)
    fused = fuse(keywords, vectors)[:limit]
    if not fused:
        return []
    chunks = {c.id: c for c in (await db.execute(
        select(LibraryChunk).where(LibraryChunk.id.in_([r.chunk_id for r in fused])))).scalars()}
    files = {f.id: f for f in (await db.execute(
        select(UserFile).where(UserFile.id.in_([r.file_id for r in fused])))).scalars()}
    hits = []
    for file_id, chunk_id, score, _ in ((r.file_id, r.chunk_id, r.score, r.share) for r in fused):
        row, chunk = files.get(file_id), chunks.get(chunk_id)
        if row is None or chunk is None:
            continue
        snippet = snippet_of(chunk.text, terms) or row.name
        hits.append(SearchHit(file_id, row.name, row.mime, snippet[:400], score, chunk.locator,
                              row.cohort_id))
    return hits
