"""Database tables: one package so that the schema reads in one place (Alembic migrations follow it).
Import from here: `from bot.storage.models import User`."""

from __future__ import annotations

from bot.storage.models.base import PK, Base, UTCDateTime, utcnow
from bot.storage.models.learner import QuizItem, SkillMastery
from bot.storage.models.school import (
    Cohort,
    CohortMember,
    Operator,
    OperatorCohort,
    OperatorSession,
    SafetyFlag,
)
from bot.storage.models.tables import (
    USER_FILES_SEARCH_DDL,
    USER_FILES_SEARCH_DROP,
    Conversation,
    CreditEntry,
    ExerciseResult,
    GenerationJob,
    InboundMessage,
    JobEvent,
    Memory,
    Message,
    OutboundMessage,
    ParentLink,
    Payment,
    PendingDelivery,
    PendingMenu,
    ScheduledSend,
    Task,
    ToolEffect,
    TurnRecord,
    User,
    UserFile,
)

__all__ = [
    "PK",
    "USER_FILES_SEARCH_DDL",
    "USER_FILES_SEARCH_DROP",
    "Base",
    "Cohort",
    "CohortMember",
    "Conversation",
    "CreditEntry",
    "ExerciseResult",
    "GenerationJob",
    "InboundMessage",
    "JobEvent",
    "Memory",
    "Message",
    "Operator",
    "OperatorCohort",
    "OperatorSession",
    "OutboundMessage",
    "ParentLink",
    "Payment",
    "PendingDelivery",
    "PendingMenu",
    "QuizItem",
    "SafetyFlag",
    "ScheduledSend",
    "SkillMastery",
    "Task",
    "ToolEffect",
    "TurnRecord",
    "UTCDateTime",
    "User",
    "UserFile",
    "utcnow",
]
