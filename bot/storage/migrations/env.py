"""Alembic environment. Runs on a connection handed over by `bot.storage.migrate` (see there)."""

from __future__ import annotations

from alembic import context

from bot.storage.migrate import include_object
from bot.storage.models import Base

target_metadata = Base.metadata


def run() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through bot.storage.migrate (python -m bot db upgrade)")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_object=include_object,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run()
