"""What a worker does before it takes work, so that the first message after a start is answered as
fast as the tenth: everything a turn loads, imports, opens or compiles at its first use is done here,
while the process is not yet ready, rather than by a user's message.

Measured on the 2-core machine (a worker's first message against its tenth, bench.scale
--background): the language, safety and e5 models (0.6, 0.7 and 1.2 s, `warm_models`); the Twilio
library's REST modules, imported by its first send (0.1 s); the database connections and the
turn's statements, compiled by SQLAlchemy at their first run (about 30 of them)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config import Settings
from bot.services import Services
from bot.storage.models import InboundMessage, User

__all__ = ["CONNECTIONS", "rehearse", "warm_models", "warm_up"]

log = logging.getLogger(__name__)

# Database connections opened before the first message: a turn holds one or two at a time, a few
# turns run at once right after a start; the pool grows past these as the load asks.
CONNECTIONS = 4


def warm_models(settings: Settings) -> None:
    """Loads what a child's first message needs, in the thread that calls it: the ORM's mappers,
    the language model, the safety layer's phrases and classifiers, the local e5 model (left to the
    first message that needs each: 0.1, 0.6, 0.7, 1.2 and 0.1 s on the 2-core machine)."""
    from sqlalchemy.orm import configure_mappers

    from bot import e5
    from bot.channel.language import spoken_language
    from bot.safety import scope
    from bot.safety.meaning import load_model
    from bot.safety.phrases import load_phrases

    configure_mappers()  # the tables' relations, else worked out by the first query (0.1 s)
    spoken_language("Bonjour, une question sur les fractions")  # past the word lists: the model
    load_phrases(settings.safety.safety_phrases_file)
    if settings.safety.safety_meaning and e5.installed():
        load_model()
        load_model(scope.WEIGHTS_PATH)
    if e5.installed() and (settings.safety.safety_meaning or settings.library.embeddings == "local"):
        e5.encode(["bonjour"], query=True)


async def _connections(services: Services, count: int) -> None:
    """Opens `count` of the pool's connections at once (each a round trip or more, and on
    PostgreSQL the driver's setup), then gives them back to the pool."""

    async def one() -> None:
        async with services.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    await asyncio.gather(*(one() for _ in range(count)))


async def rehearse(services: Services) -> None:
    """Runs a turn's statements once, so that SQLAlchemy compiles them now (about 2 ms each, 30 of
    them at a first message) rather than at a user's first message: for a user made up for it, in
    a transaction rolled back at the end, the commits of what is run only releasing savepoints
    inside it. Nothing is kept, nothing is sent."""
    async with services.engine.connect() as connection:
        outer = await connection.begin()
        try:
            async with AsyncSession(bind=connection, expire_on_commit=False,
                                    join_transaction_mode="create_savepoint") as db:
                await _a_turn(services, db)
        finally:
            await outer.rollback()


async def _nothing(_: Any) -> str:
    return ""


async def _a_turn(services: Services, db: AsyncSession) -> None:
    """What a plain turn reads and writes through bot's own functions, in the order a turn does (the
    handlers' few statements of their own are left to the first message)."""
    from bot.agent import history
    from bot.billing import credits, pool
    from bot.channel.menus import get_menu
    from bot.learning.items import due_count
    from bot.learning.profile import learner_view
    from bot.learning.reteach import reteach_block
    from bot.safety import gentle, held_flag
    from bot.school.assignments import untold

    settings, now = services.settings, services.clock()
    user_id, inbound_id, conversation = await _the_message(services, db)
    await held_flag(db, user_id, now, settings.safety.human_hold_s)
    await get_menu(services, conversation, db=db)
    await untold(db, user_id)
    await due_count(db, user_id, now)
    await gentle(db, user_id, now)
    await history.save(db, conversation, [{"role": "user", "content": "bonjour"}], inbound_id=inbound_id)
    await learner_view(db, user_id, None, settings.learning, now)
    await reteach_block(db, user_id, now)
    await history.load(db, conversation, 1000)
    await history.used_tool_call_ids(db, conversation)
    await pool.standing(db, user_id, pool.daily_cap(settings, User(), services.clock))
    await credits.debit(db, user_id, 1, "chat", f"warm-up:{user_id}", overdraft=0)
    await _the_reply(services, db, user_id, inbound_id)


async def _the_message(services: Services, db: AsyncSession) -> tuple[int, int, int]:
    """A made-up pupil's message, claimed and arrived as a worker does: the user's, the message's
    and the conversation's ids."""
    from bot.pipeline.messages import Messages

    now, made_up = services.clock(), f"warm-up-{uuid.uuid4().hex[:16]}"
    user = User(phone=made_up, mode="child", role="student", language="fr", created_at=now,
                last_channel="whatsapp", credit_balance=10)
    db.add(user)
    await db.flush()
    db.add(InboundMessage(user_id=user.id, channel="whatsapp", message_sid=made_up, from_addr=made_up,
                          body="bonjour", status="pending", created_at=now))
    await db.flush()
    messages = Messages(services, _nothing)
    claimed = await messages._claim(db, user.id)
    assert isinstance(claimed, InboundMessage)
    msg = await messages._arrived(db, claimed)
    await db.flush()
    return user.id, claimed.id, msg.conversation.id


async def _the_reply(services: Services, db: AsyncSession, user_id: int, inbound_id: int) -> None:
    """The tool the benchmark's turn calls (the user's files), the reply's row, the message's end."""
    from bot.channel.outbound import finish_inbound, rehearse_reply
    from bot.library.files import count_files, list_files
    from bot.school.class_files import student_classes

    cohorts = list(await student_classes(db, user_id))
    await list_files(db, user_id, cohorts=cohorts)
    await count_files(db, user_id, cohorts)
    await rehearse_reply(services, db, user_id, f"warm-up:{inbound_id}")
    await finish_inbound(db, inbound_id, user_id, services.clock())


async def warm_up(services: Services) -> None:
    """Everything above, on the worker's own event loop (the Twilio client's HTTP session belongs to
    it), before the worker takes its first message."""
    await asyncio.to_thread(warm_models, services.settings)
    services.twilio.warm()
    await _connections(services, CONNECTIONS)
    try:
        await rehearse(services)
    except Exception:  # a warm-up only: the first message compiles what it needs, as before
        log.warning("the turn's statements could not be rehearsed", exc_info=True)
