"""MEMOIRE / MEMORY lists what the bot remembers; OUBLIE n / FORGET n deletes fact n."""

from __future__ import annotations

import re

from bot.assistant import memory
from bot.channel.context import Incoming
from handlers.help import to_audience

_LIST = re.compile(r"^(m[ée]moire|memory|ma m[ée]moire|my memory)[\s.!?]*$", re.I)
_FORGET = re.compile(r"^(oublie|oublier|forget)\s+(\d{1,3}|tout|all)[\s.!?]*$", re.I)


def _listing(msg: Incoming, facts: list[str]) -> str:
    if not facts:
        return to_audience(
            msg,
            "Je ne retiens encore rien sur toi. Dis-moi par exemple ta classe ou tes matières préférées.",
            "Je ne retiens encore rien sur vous. Dites-moi par exemple ce que vous voulez que je garde.",
            "I don't remember anything about you yet. "
            "Tell me, for example, your class or favourite subjects.",
        )
    lines = [to_audience(msg, "Voici ce que je retiens sur toi :", "Voici ce que je retiens sur vous :",
                         "Here is what I remember about you:")]
    lines += [f"{n}. {fact}" for n, fact in enumerate(facts, start=1)]
    lines.append(
        to_audience(
            msg,
            "Pour effacer un souvenir, envoie OUBLIE suivi de son numéro (ex. OUBLIE 2).",
            "Pour effacer un souvenir, envoyez OUBLIE suivi de son numéro (ex. OUBLIE 2).",
            "To delete one, send FORGET and its number (e.g. FORGET 2).",
        )
    )
    return "\n".join(lines)


async def handle(msg: Incoming) -> bool:
    text = msg.text.strip()
    if _LIST.match(text):
        facts = [row.fact for row in await memory.list_facts(msg.db, msg.user.id)]
        await msg.reply(_listing(msg, facts))
        return True
    match = _FORGET.match(text)
    if not match:
        return False
    arg = match.group(2).lower()
    if arg in ("tout", "all"):
        count = await memory.delete_all(msg.db, msg.user.id)
        await msg.db.flush()
        await msg.reply(
            msg.t(
                f"C'est fait : j'ai oublié tout ce que je retenais ({count}).",
                f"Done: I forgot everything I remembered ({count}).",
            )
        )
        return True
    row = await memory.delete_fact_number(msg.db, msg.user.id, int(arg))
    if row is None:
        count = len(await memory.list_facts(msg.db, msg.user.id))
        await msg.reply(
            msg.t(
                f"Je n'ai pas de souvenir numéro {arg} (j'en ai {count}). MEMOIRE pour voir la liste.",
                f"I have no memory number {arg} (I have {count}). Send MEMORY to see the list.",
            )
        )
        return True
    await msg.db.flush()
    await msg.reply(msg.t(f"C'est oublié : « {row.fact} »", f'Forgotten: "{row.fact}"'))
    return True
