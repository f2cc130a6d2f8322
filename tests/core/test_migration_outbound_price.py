"""Migration 0026 on a database that already has a sent message: the row is kept with no recorded
price (its status callback prices it as before, by a second UPDATE), a new row can record one, and
back to 0025 the row is still there — on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import text

from bot.storage.db import make_engine
from bot.storage.migrate import alembic_config, upgrade
from tests.support.migrations import database_at

NOW = "2026-12-01 10:00:00"
USER = (
    "INSERT INTO users (id, phone, mode, role, language, timezone, email_verified, opted_out, "
    f"credit_balance, delivery_failures, created_at) VALUES (1, '+2250700000001', 'child', 'student', "
    f"'fr', 'Africa/Abidjan', false, false, 0, 0, '{NOW}')"
)
SENT = ("INSERT INTO outbound_messages (id, user_id, channel, to_addr, body, kind, sid, status, template, "
        "attempts, created_at) VALUES ({id}, 1, 'whatsapp', 'whatsapp:+2250700000001', 'Bonjour', "
        f"'reply', 'SM{{id}}', 'queued', false, 1, '{NOW}')")
ROWS = "SELECT id FROM outbound_messages ORDER BY id"


async def test_0026_keeps_sent_messages_and_records_prices(backend_name: str, tmp_path: Path) -> None:
    async with database_at(backend_name, tmp_path, "0025") as url:
        engine = make_engine(url)
        try:
            async with engine.begin() as conn:
                await conn.execute(text(USER))
                await conn.execute(text(SENT.format(id=1)))
            await upgrade(url, engine=engine)
            async with engine.begin() as conn:
                before = (await conn.execute(text("SELECT price_micro FROM outbound_messages"))).scalar_one()
                await conn.execute(text(SENT.format(id=2)))
                await conn.execute(text("UPDATE outbound_messages SET price_micro = 5000 WHERE id = 2"))
                prices = [tuple(r) for r in await conn.execute(text(
                    "SELECT id, price_micro FROM outbound_messages ORDER BY id"))]
                await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), "0025"))
            async with engine.connect() as conn:
                back = [r[0] for r in await conn.execute(text(ROWS))]
                columns = (await conn.execute(text("SELECT * FROM outbound_messages"))).keys()
        finally:
            await engine.dispose()
    assert before is None and prices == [(1, None), (2, 5000)]
    assert back == [1, 2] and "price_micro" not in columns
