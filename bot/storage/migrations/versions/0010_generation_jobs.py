"""background jobs: generation_jobs and their timeline, job_events

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "generation_jobs",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("conversation_id", _ID, nullable=False),
        sa.Column("inbound_id", sa.BigInteger(), nullable=True),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("state", sa.JSON(), nullable=True),
        sa.Column("step", sa.String(length=200), nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=64), nullable=True),
        sa.Column("heartbeat_at", bot.storage.models.UTCDateTime(), nullable=True),
        sa.Column("deadline_at", bot.storage.models.UTCDateTime(), nullable=True),
        sa.Column("result_text", sa.Text(), nullable=True),
        sa.Column("result_files", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", bot.storage.models.UTCDateTime(), nullable=False),
        sa.Column("started_at", bot.storage.models.UTCDateTime(), nullable=True),
        sa.Column("finished_at", bot.storage.models.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_generation_jobs_user_status", "generation_jobs", ["user_id", "status"])
    op.create_index(op.f("ix_generation_jobs_status"), "generation_jobs", ["status"])
    op.create_table(
        "job_events",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("job_id", _ID, nullable=False),
        sa.Column("key", sa.String(length=80), nullable=False),
        sa.Column("type", sa.String(length=24), nullable=False),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.Column("created_at", bot.storage.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["generation_jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job_id", "key", name="uq_job_events_key"),
    )
    op.create_index(op.f("ix_job_events_job_id"), "job_events", ["job_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_job_events_job_id"), table_name="job_events")
    op.drop_table("job_events")
    op.drop_index(op.f("ix_generation_jobs_status"), table_name="generation_jobs")
    op.drop_index("ix_generation_jobs_user_status", table_name="generation_jobs")
    op.drop_table("generation_jobs")
