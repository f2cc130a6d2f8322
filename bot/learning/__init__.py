"""What the tutor knows of a learner: the canonical subjects and skill keys, mastery per skill (BKT),
when each quiz item comes back (FSRS), the class level and the sessions; recording checked answers and
review rounds; what is known of a learner, read back (progress, the prompt's learner block), the
hour each student studies, the practice nudges and the way back after a silence; an item missed
again taught again by the model (reteach)."""

from bot.learning.assigned import due_text, homework_line, work_score
from bot.learning.errors import LearningError
from bot.learning.items import due_count, due_items, needs_reteach, recently_missed
from bot.learning.levels import (
    CYCLES,
    LEVEL_MENU_KIND,
    LEVELS,
    Cycle,
    cycle_by_number,
    level_by_number,
    level_menu,
    offer_cycle,
    offer_level_menu,
    parse_level,
)
from bot.learning.mastery import bkt_update, is_mastered, record_checked_answer
from bot.learning.nudges import NUDGE_MENU, nudge_jobs, send_review_nudges
from bot.learning.profile import (
    LearnerView,
    SkillView,
    learner_block,
    learner_view,
    skill_views,
    subject_name,
    to_work_on,
)
from bot.learning.record import (
    conversation_subject,
    find_item,
    keep_item,
    record_checked,
    record_reported,
    schedule,
    skill_of,
    subject_for,
)
from bot.learning.reengage import reengage_jobs, send_reengagement
from bot.learning.reteach import (
    RETEACH_AFTER,
    RETIRE_AFTER,
    mark_retaught,
    pending_item,
    reteach_block,
    reteach_items,
)
from bot.learning.review import next_review, recall_probability
from bot.learning.rounds import (
    REVIEW_KIND,
    ROUND_SIZE,
    Round,
    has_items,
    item_topic,
    new_round,
    pick_items,
    round_from_menu,
    round_intro,
    score_line,
)
from bot.learning.sessions import carried_note, current_session, start_session
from bot.learning.skills import MERGE_AT, apart, closest_key, resolve_skill, similarity
from bot.learning.study_hours import DEFAULT_STUDY_HOUR, StudyTime, learned_hour, send_hour, study_hour
from bot.learning.subjects import OTHER, SUBJECTS, canonical_subject, known_subject, skill_key, skill_label
from bot.learning.weekly import answer_streak, send_weekly_notes, streak_line, weekly_note_jobs

__all__ = [
    "CYCLES",
    "DEFAULT_STUDY_HOUR",
    "LEVELS",
    "LEVEL_MENU_KIND",
    "MERGE_AT",
    "NUDGE_MENU",
    "OTHER",
    "RETEACH_AFTER",
    "RETIRE_AFTER",
    "REVIEW_KIND",
    "ROUND_SIZE",
    "SUBJECTS",
    "Cycle",
    "LearnerView",
    "LearningError",
    "Round",
    "SkillView",
    "StudyTime",
    "answer_streak",
    "apart",
    "bkt_update",
    "canonical_subject",
    "carried_note",
    "closest_key",
    "conversation_subject",
    "current_session",
    "cycle_by_number",
    "due_count",
    "due_items",
    "due_text",
    "find_item",
    "has_items",
    "homework_line",
    "is_mastered",
    "item_topic",
    "keep_item",
    "known_subject",
    "learned_hour",
    "learner_block",
    "learner_view",
    "level_by_number",
    "level_menu",
    "mark_retaught",
    "needs_reteach",
    "new_round",
    "next_review",
    "nudge_jobs",
    "offer_cycle",
    "offer_level_menu",
    "parse_level",
    "pending_item",
    "pick_items",
    "recall_probability",
    "recently_missed",
    "record_checked",
    "record_checked_answer",
    "record_reported",
    "reengage_jobs",
    "resolve_skill",
    "reteach_block",
    "reteach_items",
    "round_from_menu",
    "round_intro",
    "schedule",
    "score_line",
    "send_hour",
    "send_reengagement",
    "send_review_nudges",
    "send_weekly_notes",
    "similarity",
    "skill_key",
    "skill_label",
    "skill_of",
    "skill_views",
    "start_session",
    "streak_line",
    "study_hour",
    "subject_for",
    "subject_name",
    "to_work_on",
    "weekly_note_jobs",
    "work_score",
]
