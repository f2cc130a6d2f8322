"""What the tutor knows of a learner: the canonical subjects and skill keys, mastery per skill (BKT)
and when each quiz item comes back (FSRS); recording checked answers."""

from bot.capabilities.learner.items import due_count, due_items, recently_missed
from bot.capabilities.learner.mastery import bkt_update, is_mastered, record_checked_answer
from bot.capabilities.learner.record import (
    conversation_subject,
    find_item,
    keep_item,
    record_checked,
    record_reported,
    schedule,
    skill_of,
    subject_for,
)
from bot.capabilities.learner.review import next_review, recall_probability
from bot.capabilities.learner.subjects import (
    OTHER,
    SUBJECTS,
    canonical_subject,
    known_subject,
    skill_key,
    skill_label,
)

__all__ = [
    "OTHER", "SUBJECTS", "bkt_update", "canonical_subject", "conversation_subject", "due_count", "due_items",
    "find_item", "is_mastered", "keep_item", "known_subject", "next_review", "recall_probability",
    "recently_missed", "record_checked", "record_checked_answer", "record_reported", "schedule", "skill_key",
    "skill_label", "skill_of", "subject_for",
]
