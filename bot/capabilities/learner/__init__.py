"""What the tutor knows of a learner: the canonical subjects and skill keys, mastery per skill (BKT),
when each quiz item comes back (FSRS), the class level and the sessions."""

from bot.capabilities.learner.items import due_count, due_items, recently_missed
from bot.capabilities.learner.levels import (
    LEVEL_MENU_KIND,
    LEVELS,
    level_by_number,
    offer_level_menu,
    parse_level,
)
from bot.capabilities.learner.mastery import bkt_update, is_mastered, record_checked_answer
from bot.capabilities.learner.review import next_review, recall_probability
from bot.capabilities.learner.sessions import carried_note, current_session, start_session
from bot.capabilities.learner.subjects import (
    OTHER,
    SUBJECTS,
    canonical_subject,
    known_subject,
    skill_key,
    skill_label,
)

__all__ = [
    "LEVELS", "LEVEL_MENU_KIND", "OTHER", "SUBJECTS", "bkt_update", "canonical_subject", "carried_note",
    "current_session", "due_count", "due_items", "is_mastered", "known_subject", "level_by_number",
    "next_review", "offer_level_menu", "parse_level", "recall_probability", "recently_missed",
    "record_checked_answer", "skill_key", "skill_label", "start_session",
]
