"""Facts remembered about a user: deduplicated, capped, scoped, and listed for the prompt."""

from __future__ import annotations

from bot.assistant import memory
from tests.support.library import Library
from tools import by_name


async def test_facts_are_deduplicated_and_refined(lib: Library) -> None:
    save = by_name()["save_memory"].run
    ctx = lib.ctx(lib.users[0])
    assert (await save(ctx, {"fact": "Prépare le BEPC en juin"}))["status"] == "saved"
    assert (await save(ctx, {"fact": "  prépare le bepc EN JUIN. "}))["status"] == "already_known"
    assert (await save(ctx, {"fact": "Prépare le BEPC"}))[
        "status"
    ] == "already_known"  # already said, and more
    refined = await save(ctx, {"fact": "Prépare le BEPC en juin au collège de Yopougon"})
    assert refined["status"] == "saved"
    async with lib.services.sessions() as db:
        facts = await memory.facts_for_prompt(db, lib.users[0].id)
        assert facts == ["Prépare le BEPC en juin au collège de Yopougon"]
        assert await memory.facts_for_prompt(db, lib.users[1].id) == []


async def test_bad_facts_are_refused_clearly(lib: Library) -> None:
    save = by_name()["save_memory"].run
    ctx = lib.ctx(lib.users[0])
    assert (await save(ctx, {"fact": ""}))["success"] is False
    assert (await save(ctx, {"fact": "!!! ..."}))["success"] is False
    assert (await save(ctx, {}))["success"] is False
    long = await save(ctx, {"fact": "Aime " + "beaucoup " * 100})
    assert long["success"] and len(long["fact"]) <= memory.MAX_FACT_CHARS


async def test_memory_is_capped_and_says_how_to_make_room(lib: Library) -> None:
    save = by_name()["save_memory"].run
    ctx = lib.ctx(lib.users[0])
    for n in range(memory.MAX_FACTS):
        assert (await save(ctx, {"fact": f"Fait numéro {n} sur la classe"}))["success"]
    full = await save(ctx, {"fact": "Un fait de trop"})
    assert full["success"] is False and "MEMOIRE" in full["error"] and "OUBLIE" in full["error"]
    other = await save(lib.ctx(lib.users[1]), {"fact": "Un fait de trop"})
    assert other["success"]  # the cap is per user
    async with lib.services.sessions() as db:
        removed = await memory.delete_fact_number(db, lib.users[0].id, 1)
        assert removed is not None and removed.fact == "Fait numéro 0 sur la classe"
        assert await memory.delete_fact_number(db, lib.users[0].id, 0) is None
        assert await memory.delete_fact_number(db, lib.users[0].id, memory.MAX_FACTS) is None
        await db.commit()
    assert (await save(ctx, {"fact": "Un fait de trop"}))["success"]


async def test_prompt_facts_stay_within_budget_keeping_the_newest(lib: Library) -> None:
    async with lib.services.sessions() as db:
        for n in range(memory.MAX_FACTS):
            await memory.save_fact(db, lib.users[0].id, f"Fait {n:02d} " + "détail " * 30)
        await db.commit()
        facts = await memory.facts_for_prompt(db, lib.users[0].id)
    assert sum(len(f) + 3 for f in facts) <= memory.MAX_PROMPT_CHARS
    assert facts[-1].startswith(f"Fait {memory.MAX_FACTS - 1:02d}") and len(facts) < memory.MAX_FACTS
