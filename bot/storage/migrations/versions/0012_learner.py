"""the learner: sessions that end, class asked once, quiz items for spaced review, mastery per skill,
results the server did not check kept apart; numbers with a confirmed parent link made parents

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bot.storage.models

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = bot.storage.models.UTCDateTime


def _items() -> None:
    op.create_table(
        "quiz_items",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("conversation_id", _ID, nullable=True),
        sa.Column("quiz_id", sa.String(length=32), nullable=False),
        sa.Column("quiz_type", sa.String(length=8), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("correct_index", sa.Integer(), nullable=False),
        sa.Column("explanation", sa.Text(), nullable=False),
        sa.Column("subject", sa.String(length=64), nullable=False),
        sa.Column("skill", sa.String(length=200), nullable=False),
        sa.Column("card", sa.JSON(), nullable=True),
        sa.Column("due_at", _TIME(), nullable=True),
        sa.Column("last_answered_at", _TIME(), nullable=True),
        sa.Column("last_correct", sa.Boolean(), nullable=True),
        sa.Column("answers", sa.Integer(), nullable=False),
        sa.Column("lapses", sa.Integer(), nullable=False),
        sa.Column("created_at", _TIME(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("quiz_id"),
    )
    op.create_index("ix_quiz_items_user_due", "quiz_items", ["user_id", "due_at"])
    op.create_table(
        "skill_mastery",
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("subject", sa.String(length=64), nullable=False),
        sa.Column("skill", sa.String(length=200), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("p_known", sa.Float(), nullable=False),
        sa.Column("answers", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Integer(), nullable=False),
        sa.Column("updated_at", _TIME(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", "subject", "skill"),
    )


def upgrade() -> None:
    _items()
    op.add_column("users", sa.Column("level_asked_at", _TIME(), nullable=True))
    op.add_column("users", sa.Column("review_nudges", sa.Boolean(), nullable=False, server_default=sa.true()))
    op.add_column("conversations", sa.Column("last_user_message_at", _TIME(), nullable=True))
    with op.batch_alter_table("exercise_results") as batch:
        batch.add_column(sa.Column("skill", sa.String(length=200), nullable=False, server_default=""))
        batch.add_column(sa.Column("verified", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch.add_column(sa.Column("item_id", _ID, nullable=True))
        batch.create_foreign_key("fk_exercise_results_item", "quiz_items", ["item_id"], ["id"],
                                 ondelete="SET NULL")
    # What the model reported was never checked by the server.
    op.execute("UPDATE exercise_results SET verified = false WHERE source = 'report'")
    # Numbers that confirmed a parent link are parents (as a link confirmed from now on makes them):
    # MENU shows them ENFANTS, and the profile menu is not offered again.
    op.execute(
        "UPDATE users SET role = 'parent', mode = 'child', "
        "onboarding_step = CASE WHEN onboarding_step = 'new' THEN 'new' ELSE NULL END "
        "WHERE mode = 'guest' AND id IN (SELECT parent_id FROM parent_links WHERE status = 'confirmed')"
    )
    # Students who already gave their class are not asked again.
    op.execute("UPDATE users SET level_asked_at = created_at WHERE school_level IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("exercise_results") as batch:
        batch.drop_constraint("fk_exercise_results_item", type_="foreignkey")
        batch.drop_column("item_id")
        batch.drop_column("verified")
        batch.drop_column("skill")
    op.drop_column("conversations", "last_user_message_at")
    op.drop_column("users", "review_nudges")
    op.drop_column("users", "level_asked_at")
    op.drop_table("skill_mastery")
    op.drop_index("ix_quiz_items_user_due", table_name="quiz_items")
    op.drop_table("quiz_items")
