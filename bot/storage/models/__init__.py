"""Database tables: one package so that the schema reads in one place (Alembic migrations follow it).
Import from here: `from bot.storage.models import User`."""

from __future__ import annotations

from bot.storage.models.base import PK, Base, UTCDateTime, utcnow
from bot.storage.models.classwork import Assignment, AssignmentWork, ClassFileOpen, ClassItem
from bot.storage.models.consent import Consent, consent_lacking
from bot.storage.models.learner import QuizItem, SkillMastery
from bot.storage.models.library import LIBRARY_CHUNKS_SEARCH_DDL, LIBRARY_CHUNKS_SEARCH_DROP, LibraryChunk
from bot.storage.models.payments import Payment
from bot.storage.models.school import (
    GENTLE_S,
    Cohort,
    CohortMember,
    Operator,
    OperatorCohort,
    OperatorSession,
    SafetyFlag,
    SafetyFlagEvent,
    gentle_flag,
)
from bot.storage.models.tables import (
    USER_FILES_SEARCH_DDL,
    USER_FILES_SEARCH_DROP,
    Conversation,
    CreditEntry,
    Erasure,
    ExerciseResult,
    GenerationJob,
    InboundMessage,
    JobEvent,
    Memory,
    Message,
    OutboundMessage,
    ParentLink,
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
    "GENTLE_S",
    "LIBRARY_CHUNKS_SEARCH_DDL",
    "LIBRARY_CHUNKS_SEARCH_DROP",
    "PK",
    "USER_FILES_SEARCH_DDL",
    "USER_FILES_SEARCH_DROP",
    "Assignment",
    "AssignmentWork",
    "Base",
    "ClassFileOpen",
    "ClassItem",
    "Cohort",
    "CohortMember",
    "Consent",
    "Conversation",
    "CreditEntry",
    "Erasure",
    "ExerciseResult",
    "GenerationJob",
    "InboundMessage",
    "JobEvent",
    "LibraryChunk",
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
    "SafetyFlagEvent",
    "ScheduledSend",
    "SkillMastery",
    "Task",
    "ToolEffect",
    "TurnRecord",
    "UTCDateTime",
    "User",
    "UserFile",
    "consent_lacking",
    "gentle_flag",
    "utcnow",
]
