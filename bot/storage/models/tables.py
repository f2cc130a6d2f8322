"""The bot's own tables (users, conversations, messages, sends, jobs, credits, files, tasks, parents,
erasures; payments are in `payments`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from bot.storage.models.base import PK, Base, utcnow


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    phone: Mapped[str | None] = mapped_column(String(32), unique=True)  # E.164
    external_id: Mapped[str | None] = mapped_column(String(128), unique=True)  # WhatsApp BSUID
    display_name: Mapped[str | None] = mapped_column(String(200))
    mode: Mapped[str] = mapped_column(String(16), default="guest")  # guest | child | pro
    role: Mapped[str | None] = mapped_column(String(16))  # student | parent | pro
    onboarding_step: Mapped[str | None] = mapped_column(String(32))  # None when done
    language: Mapped[str] = mapped_column(String(8), default="fr")
    timezone: Mapped[str] = mapped_column(String(64), default="Africa/Abidjan")
    school_level: Mapped[str | None] = mapped_column(String(64))
    email: Mapped[str | None] = mapped_column(String(320))
    email_verified: Mapped[bool] = mapped_column(Boolean, default=False)
    pending_email: Mapped[str | None] = mapped_column(String(320))
    email_code: Mapped[str | None] = mapped_column(String(16))
    email_code_expires_at: Mapped[datetime | None]
    opted_out: Mapped[bool] = mapped_column(Boolean, default=False)
    opted_out_at: Mapped[datetime | None]
    credit_balance: Mapped[int] = mapped_column(Integer, default=0)
    last_inbound_at: Mapped[datetime | None]
    last_whatsapp_inbound_at: Mapped[datetime | None]
    last_channel: Mapped[str | None] = mapped_column(String(16))
    delivery_failures: Mapped[int] = mapped_column(Integer, default=0)
    # Set after repeated permanent send failures (bot.channel.outbound): proactive messages stop until the
    # user writes again. Reason like "21610 sms: unsubscribed (STOP to the carrier)".
    delivery_blocked_reason: Mapped[str | None] = mapped_column(String(160))
    delivery_blocked_at: Mapped[datetime | None]
    # A change of address asked by SMS (spoofable) and proven at the new address: the code mailed to
    # the previous confirmed address that approves it (handlers/email_commands).
    email_approval_code: Mapped[str | None] = mapped_column(String(16))
    # VOCAL / VOICE: answers also come as a WhatsApp voice note (handlers/voice_commands).
    voice_replies: Mapped[bool] = mapped_column(Boolean, default=False)
    # Wrong parent-link codes (OUI 1234) in a row, and until when answers are refused after too many
    # (handlers/parents): a spoofed SMS sender cannot try every code.
    parent_code_failures: Mapped[int] = mapped_column(Integer, default=0)
    parent_code_locked_until: Mapped[datetime | None]
    # When the class menu was shown (a student is asked once; CLASSE / LEVEL changes it later).
    level_asked_at: Mapped[datetime | None]
    # REVISION NON / REVIEW OFF: no practice nudges (bot.learning).
    review_nudges: Mapped[bool] = mapped_column(Boolean, default=True)
    # The local hour the student most often writes (bot.learning.study_hours), and when it was last
    # learned from their messages: missed questions come back, and nudges go, at that hour.
    study_hour: Mapped[int | None] = mapped_column(Integer)
    study_hour_at: Mapped[datetime | None]
    # BILAN NON / SUMMARY OFF: no weekly note of the student's own progress (bot.learning.weekly).
    weekly_progress_notes: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_user_active", "user_id", "active"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    quiz_count: Mapped[int] = mapped_column(Integer, default=0)
    user_message_count: Mapped[int] = mapped_column(Integer, default=0)
    # The session ends SESSION_IDLE_S after this: the next message opens a new conversation.
    last_user_message_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Message(Base):
    """The history the model sees: user, assistant (with tool_calls), tool results and notes."""

    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_conversation", "conversation_id", "id"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(16))  # user | assistant | tool | note
    content: Mapped[str | None] = mapped_column(Text)
    tool_calls: Mapped[list[Any] | None]
    tool_call_id: Mapped[str | None] = mapped_column(String(128))
    name: Mapped[str | None] = mapped_column(String(64))
    inbound_id: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class InboundMessage(Base):
    """Every webhook delivery we accepted; the durable queue of work per user."""

    __tablename__ = "inbound_messages"
    __table_args__ = (Index("ix_inbound_user_status", "user_id", "status", "id"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    message_sid: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    channel: Mapped[str] = mapped_column(String(16))  # whatsapp | sms | cli
    from_addr: Mapped[str] = mapped_column(String(160))
    to_addr: Mapped[str | None] = mapped_column(String(160))
    body: Mapped[str] = mapped_column(Text, default="")
    media: Mapped[list[Any] | None]  # [{"url":..., "content_type":...}]
    params: Mapped[dict[str, Any] | None]
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending|processing|done|failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    processed_at: Mapped[datetime | None]
    cost_micro: Mapped[int | None] = mapped_column(Integer)  # its price in US$ millionths, as stored


class OutboundMessage(Base):
    __tablename__ = "outbound_messages"

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    # Indexed: a user's latest sends are read to judge their delivery health (bot.channel.outbound).
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    channel: Mapped[str] = mapped_column(String(16))
    to_addr: Mapped[str] = mapped_column(String(160))
    body: Mapped[str] = mapped_column(Text, default="")
    media_url: Mapped[str | None] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(32), default="reply")
    sid: Mapped[str | None] = mapped_column(String(64), unique=True)
    status: Mapped[str] = mapped_column(String(16), default="created")
    error_code: Mapped[str | None] = mapped_column(String(16))
    segments: Mapped[int | None] = mapped_column(Integer)
    # An approved template (sent by its content sid; paid per message outside the 24 h window).
    template: Mapped[bool] = mapped_column(Boolean, default=False)
    # The inbound message whose turn produced this send: after a crash, a turn that already
    # answered is not run again (the user would get the answer twice).
    inbound_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime | None]
    # The outbox (bot.channel.outbound): a row without sid in status `queued` waits for the background
    # sender, which retries it (attempts, next_attempt_at, last_error) until Twilio takes it
    # (status: Twilio's) or refuses it for good (`failed`). `payload` holds the fields to send.
    # One logical message has one idempotency key (inbound id + part index): a replayed step
    # finds its row instead of sending again.
    idempotency_key: Mapped[str | None] = mapped_column(String(120), unique=True)
    payload: Mapped[dict[str, Any] | None]
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    next_attempt_at: Mapped[datetime | None] = mapped_column(index=True)
    last_error: Mapped[str | None] = mapped_column(Text)
    # When the user was told that this message never went out (on their next successful send).
    failure_told_at: Mapped[datetime | None]
    # Its price, in millionths of a US dollar, and WhatsApp's category it is priced as (service,
    # utility, …): `cost_micro` is set by the first status callback that says Twilio sent it, from
    # `price_micro`, the price as the row was recorded (an SMS's per segment; bot.channel.metering).
    cost_micro: Mapped[int | None] = mapped_column(Integer)
    category: Mapped[str | None] = mapped_column(String(16))
    price_micro: Mapped[int | None] = mapped_column(Integer)


class TurnRecord(Base):
    """Why one agent turn ended, with tokens and latency per iteration."""

    __tablename__ = "turns"

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    inbound_id: Mapped[int | None] = mapped_column(BigInteger)
    exit_reason: Mapped[str] = mapped_column(String(32))
    iterations: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[int] = mapped_column(Integer, default=0)
    detail: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PendingMenu(Base):
    """The numbered menu a conversation waits an answer to (bot.channel.menus), kept in the
    database as well as in the shared state, so that a Redis restart does not turn « 2 » into chat."""

    __tablename__ = "pending_menus"

    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]]
    expires_at: Mapped[datetime]  # the menu's own end
    hint_until: Mapped[datetime]  # a late answer still gets a hint until then


class GenerationJob(Base):
    """A long turn carried on in the background (bot.jobs): its saved state, status,
    steps and result. The row is the truth; the job queue only says which job to run next."""

    __tablename__ = "generation_jobs"
    __table_args__ = (Index("ix_generation_jobs_user_status", "user_id", "status"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    inbound_id: Mapped[int | None] = mapped_column(BigInteger)  # the message that asked for it
    channel: Mapped[str] = mapped_column(String(16))  # whatsapp | sms | cli
    request: Mapped[str] = mapped_column(Text, default="")  # the user's words, for STATUT and the page
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    # queued | running | completed | failed | cancelled (starting: made for the ⏳ note, see jobs.STARTING)
    state: Mapped[dict[str, Any] | None]  # the saved TurnState (bot.agent.loop), after every step
    step: Mapped[str | None] = mapped_column(String(200))  # what it is doing now, as the user reads it
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # runs started (a dead worker's too)
    worker: Mapped[str | None] = mapped_column(String(64))
    heartbeat_at: Mapped[datetime | None]
    deadline_at: Mapped[datetime | None]  # AGENT_BACKGROUND_TIMEOUT_S after the turn began
    result_text: Mapped[str | None] = mapped_column(Text)
    result_files: Mapped[list[Any] | None]  # user_files ids, in the order they were made
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class JobEvent(Base):
    """One event of a job's timeline (tool_start, tool_progress, tool_end, status, file, done).
    `key` is unique per job, so a step replayed after a crash does not write its events twice."""

    __tablename__ = "job_events"
    __table_args__ = (UniqueConstraint("job_id", "key", name="uq_job_events_key"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("generation_jobs.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(80))
    type: Mapped[str] = mapped_column(String(24))
    data: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class CreditEntry(Base):
    """The credit ledger: every change of a balance is a row with its reason."""

    __tablename__ = "credit_entries"
    __table_args__ = (UniqueConstraint("reason", "ref", name="uq_credit_reason_ref"),
                      Index("ix_credit_entries_cohort", "cohort_id", "created_at"))

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    # A row of a class's pool (`cohort_id` set, `balance_after` the pool's) names the student who
    # spent from it, and no one when the school funded it (bot.billing.pool).
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    cohort_id: Mapped[int | None] = mapped_column(ForeignKey("cohorts.id", ondelete="CASCADE"))
    delta: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(String(32))  # signup | usage | ai_bonus | purchase | pool_* ...
    ref: Mapped[str | None] = mapped_column(String(128))  # idempotency reference, e.g. payment id
    note: Mapped[str | None] = mapped_column(String(200))  # why, in words (an operator's --reason)
    balance_after: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ToolEffect(Base):
    """A tool call with side effects, keyed by its inbound message and position in the turn
    (bot.agent.effects): a turn run again after a crash gets the stored result instead of a repeat."""

    __tablename__ = "tool_effects"

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(160), unique=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    tool: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="started")  # started | done
    result: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]


class ExerciseResult(Base):
    __tablename__ = "exercise_results"
    __table_args__ = (Index("ix_exercise_user_time", "user_id", "created_at"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id", ondelete="SET NULL"))
    subject: Mapped[str] = mapped_column(String(100), default="")
    topic: Mapped[str] = mapped_column(String(200), default="")
    # The canonical subject's skill: the topic folded (bot.learning.subjects), or the student's key
    # of the same meaning (bot.learning.skills).
    skill: Mapped[str] = mapped_column(String(200), default="")
    correct: Mapped[bool] = mapped_column(Boolean)
    time_to_answer_s: Mapped[float | None]
    source: Mapped[str] = mapped_column(String(16), default="quiz")  # quiz | review | report
    # False for what the model only reported (report_exercise_result): never moves mastery, shown apart.
    verified: Mapped[bool] = mapped_column(Boolean, default=True)
    item_id: Mapped[int | None] = mapped_column(ForeignKey("quiz_items.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class UserFile(Base):
    """A person's file (`user_id`), or a class's (`cohort_id`, origin « class »: its library, stored
    once and read by the class's current students, never changed by them)."""

    __tablename__ = "user_files"
    __table_args__ = (Index("ix_user_files_user", "user_id", "id"),
                      Index("ix_user_files_cohort", "cohort_id"))

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    cohort_id: Mapped[int | None] = mapped_column(ForeignKey("cohorts.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    mime: Mapped[str] = mapped_column(String(128))
    size: Mapped[int] = mapped_column(BigInteger)
    origin: Mapped[str] = mapped_column(String(16))  # upload | generated | class
    storage_key: Mapped[str] = mapped_column(String(512))
    text: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PendingDelivery(Base):
    """A file that could not reach the user yet (WhatsApp's 24 h window closed, no other way):
    sent when they next write (handlers/waiting_files.py), then `sent_at` is set."""

    __tablename__ = "pending_deliveries"
    __table_args__ = (Index("ix_pending_deliveries_user", "user_id", "sent_at"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    file_id: Mapped[int] = mapped_column(ForeignKey("user_files.id", ondelete="CASCADE"))
    text: Mapped[str] = mapped_column(Text, default="")
    kind: Mapped[str] = mapped_column(String(32), default="file")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    sent_at: Mapped[datetime | None]


class Memory(Base):
    __tablename__ = "memories"

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    fact: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Task(Base):
    __tablename__ = "tasks"
    __table_args__ = (Index("ix_tasks_due", "done", "due_at"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(300))
    priority: Mapped[str] = mapped_column(String(8), default="normal")
    due_at: Mapped[datetime | None]
    tags: Mapped[list[Any] | None]
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    lead_reminder_sent_at: Mapped[datetime | None]
    reminder_sent_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ParentLink(Base):
    __tablename__ = "parent_links"
    __table_args__ = (UniqueConstraint("student_id", "parent_id", name="uq_parent_link"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    student_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    parent_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending|confirmed|refused|stopped
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    confirmed_at: Mapped[datetime | None]
    last_summary_at: Mapped[datetime | None]
    # The request's own confirmation code (OUI 4821 / NON 4821), random, valid until code_expires_at;
    # invited_at: when Twilio accepted the SMS carrying this code (None: it never left).
    code: Mapped[str | None] = mapped_column(String(8))
    code_expires_at: Mapped[datetime | None]
    invited_at: Mapped[datetime | None]


class ScheduledSend(Base):
    """One proactive message (a task reminder, a weekly summary, a parent's daily digest), see
    bot.channel.scheduled: `key` makes it unique, a claim (status "sending" until `claimed_until`) is taken
    before sending and released with a later `next_attempt_at` when the send fails."""

    __tablename__ = "scheduled_sends"
    __table_args__ = (Index("ix_scheduled_sends_due", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(160), unique=True)
    kind: Mapped[str] = mapped_column(String(32))  # reminder_lead | reminder_due | parent_summary | …
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    task_id: Mapped[int | None] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    link_id: Mapped[int | None] = mapped_column(ForeignKey("parent_links.id", ondelete="CASCADE"))
    slot_at: Mapped[datetime]  # the moment the message is about (due time, summary slot, digest time)
    # pending | sending (claimed) | sent | skipped | failed | unknown (may have reached Twilio)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    claimed_until: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(String(300))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime | None]


class Erasure(Base):
    """A number or WhatsApp id erased (`users forget`, SUPPRIMER), kept only as its HMAC under
    SECRET_KEY (`bot.storage.erasures`), with when: a webhook of it received before then and left in
    the spool is never stored (`spool retry`, the spool's replay). Nothing else about the person."""

    __tablename__ = "erasures"
    __table_args__ = (Index("ix_erasures_key", "key_hash"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    erased_at: Mapped[datetime]


# Full-text search over the user's files (bot.library.search_files). Created with the table, so a
# fresh schema from `create_all` has it too; migration 0002 creates the same on existing databases.
USER_FILES_SEARCH_DDL: dict[str, tuple[str, ...]] = {
    "sqlite": (
        "CREATE VIRTUAL TABLE IF NOT EXISTS user_files_fts USING fts5("
        "name, text, content='user_files', content_rowid='id', "
        "tokenize='unicode61 remove_diacritics 2')",
        "CREATE TRIGGER IF NOT EXISTS user_files_fts_ai AFTER INSERT ON user_files BEGIN "
        "INSERT INTO user_files_fts(rowid, name, text) VALUES (new.id, new.name, new.text); END",
        "CREATE TRIGGER IF NOT EXISTS user_files_fts_ad AFTER DELETE ON user_files BEGIN "
        "INSERT INTO user_files_fts(user_files_fts, rowid, name, text) "
        "VALUES ('delete', old.id, old.name, old.text); END",
        "CREATE TRIGGER IF NOT EXISTS user_files_fts_au AFTER UPDATE ON user_files BEGIN "
        "INSERT INTO user_files_fts(user_files_fts, rowid, name, text) "
        "VALUES ('delete', old.id, old.name, old.text); "
        "INSERT INTO user_files_fts(rowid, name, text) VALUES (new.id, new.name, new.text); END",
    ),
    "postgresql": (
        # French stemming, and accents ignored when the unaccent extension can be had: people
        # often type "ecole" on a phone for "école".
        "DO $$ BEGIN "
        "IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'deblo_fr') THEN "
        "CREATE TEXT SEARCH CONFIGURATION deblo_fr (COPY = french); "
        "BEGIN "
        "CREATE EXTENSION IF NOT EXISTS unaccent; "
        "ALTER TEXT SEARCH CONFIGURATION deblo_fr "
        "ALTER MAPPING FOR hword, hword_part, word WITH unaccent, french_stem; "
        "EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'unaccent unavailable: accents stay significant'; "
        "END; "
        "END IF; "
        "END $$",
        "CREATE INDEX IF NOT EXISTS ix_user_files_fts ON user_files USING GIN ("
        "to_tsvector('deblo_fr'::regconfig, coalesce(name, '') || ' ' || coalesce(text, '')))",
    ),
}
USER_FILES_SEARCH_DROP: dict[str, tuple[str, ...]] = {
    "sqlite": (
        "DROP TRIGGER IF EXISTS user_files_fts_au",
        "DROP TRIGGER IF EXISTS user_files_fts_ad",
        "DROP TRIGGER IF EXISTS user_files_fts_ai",
        "DROP TABLE IF EXISTS user_files_fts",
    ),
    "postgresql": ("DROP INDEX IF EXISTS ix_user_files_fts",),
}


def _create_user_files_search(target: Any, connection: Any, **_kw: Any) -> None:
    from sqlalchemy import text as sql

    for statement in USER_FILES_SEARCH_DDL.get(connection.dialect.name, ()):
        connection.execute(sql(statement))


def _drop_user_files_search(target: Any, connection: Any, **_kw: Any) -> None:
    from sqlalchemy import text as sql

    for statement in USER_FILES_SEARCH_DROP.get(connection.dialect.name, ()):
        connection.execute(sql(statement))


from sqlalchemy import event as _event  # noqa: E402

_event.listen(UserFile.__table__, "after_create", _create_user_files_search)
_event.listen(UserFile.__table__, "before_drop", _drop_user_files_search)
