"""What the tutor knows of a learner: the canonical subjects and skill keys, mastery per skill (BKT)
and when each quiz item comes back (FSRS); what is known of a learner, read back (progress, the
prompt's learner block) and the practice nudges."""

from bot.capabilities.learner.items import due_count, due_items, recently_missed
from bot.capabilities.learner.mastery import bkt_update, is_mastered, record_checked_answer
from bot.capabilities.learner.nudges import nudge_jobs, send_review_nudges
from bot.capabilities.learner.profile import (
    LearnerView,
    SkillView,
    learner_block,
    learner_view,
    skill_views,
    subject_name,
    to_work_on,
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
    "OTHER", "SUBJECTS", "LearnerView", "SkillView", "bkt_update", "canonical_subject", "due_count",
    "due_items", "is_mastered", "known_subject", "learner_block", "learner_view", "next_review",
    "nudge_jobs", "recall_probability", "recently_missed", "record_checked_answer", "send_review_nudges",
    "skill_key", "skill_label", "skill_views", "subject_name", "to_work_on",
]
