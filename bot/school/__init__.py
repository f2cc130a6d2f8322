"""Classes (cohorts) of students and the operators who see them: admins and teachers.

- `passwords`: Argon2id hashes of operators' passwords;
- `bank`: a class's own questions as its students meet them (`student_copy`, `bank_items`);
- `assignments`: a teacher's assignment to a class, its notices and each student's work;
- `sheets`: a school's CSV or XLSX file read under French or English headers (`read_table`);
- `roster_file`: a class list read and checked whole (`read_roster`);
- `items_file`: a teacher's questions read and checked whole, then added to the class's bank
  (`read_items`, `add_items`, `bank_counts`); `bank_review` fills a student's review round with
  them (`bank_fill`);
- `class_files`: a class's library, files its current students read (`add_class_file`,
  `student_classes`, `class_files` with who opened each, `record_opening`, `open_file`);
- `enrolment`: a checked list written in one transaction, and the parents' one SMS;
- `classes`: a class as its teacher sees it (roster, at risk, skills to work on), for the weekly
  summary and the dashboard;
- `operators`: who logs in, with which role and classes;
- `summary`: the teachers' weekly e-mail and its periodic job;
"""

from __future__ import annotations

from bot.school.assignments import (
    ASSIGNMENT_MENU,
    QUESTIONS_MAX,
    AssignmentError,
    ClassAssignment,
    answered,
    assign,
    assignment_jobs,
    class_assignments,
    draw_items,
    local_today,
    notice_menu,
    notice_text,
    open_work,
    parse_due,
    send_assignment_notices,
    told,
    untold,
    untold_work,
)
from bot.school.bank import bank_items, student_copy
from bot.school.bank_review import bank_fill
from bot.school.class_files import (
    MAX_CLASS_FILE_BYTES,
    TURN_CLASSES,
    ClassFile,
    Opener,
    add_class_file,
    class_files,
    class_label,
    open_file,
    record_opening,
    student_classes,
)
from bot.school.classes import (
    FELL_BY,
    QUIET_DAYS,
    AtRisk,
    ClassSkill,
    FallenSkill,
    Student,
    at_risk,
    bkt_before,
    find_cohort,
    is_active,
    mastery_falls,
    roster,
    skills_to_work_on,
)
from bot.school.enrolment import ImportReport, enrol_roster, linked_text, make_parent, notify_parents
from bot.school.errors import SchoolError
from bot.school.items_file import ItemRow, ItemsError, add_items, bank_counts, read_items
from bot.school.operators import (
    ROLES,
    OperatorError,
    OperatorView,
    add_operator,
    list_operators,
    operator_cohorts,
    remove_operator,
    valid_email,
)
from bot.school.passwords import DUMMY_HASH, hash_password, needs_rehash, random_password, verify_password
from bot.school.roster_file import RosterError, RosterRow, import_level, read_roster
from bot.school.sheets import SheetError, Table, fold_header, problem_at, read_table
from bot.school.summary import (
    ClassSummary,
    class_summary,
    send_teacher_summaries,
    summary_text,
    teacher_summary_jobs,
)

__all__ = [
    "ASSIGNMENT_MENU",
    "DUMMY_HASH",
    "FELL_BY",
    "MAX_CLASS_FILE_BYTES",
    "QUESTIONS_MAX",
    "QUIET_DAYS",
    "ROLES",
    "TURN_CLASSES",
    "AssignmentError",
    "AtRisk",
    "ClassAssignment",
    "ClassFile",
    "ClassSkill",
    "ClassSummary",
    "FallenSkill",
    "ImportReport",
    "ItemRow",
    "ItemsError",
    "Opener",
    "OperatorError",
    "OperatorView",
    "RosterError",
    "RosterRow",
    "SchoolError",
    "SheetError",
    "Student",
    "Table",
    "add_class_file",
    "add_items",
    "add_operator",
    "answered",
    "assign",
    "assignment_jobs",
    "at_risk",
    "bank_counts",
    "bank_fill",
    "bank_items",
    "bkt_before",
    "class_assignments",
    "class_files",
    "class_label",
    "class_summary",
    "draw_items",
    "enrol_roster",
    "find_cohort",
    "fold_header",
    "hash_password",
    "import_level",
    "is_active",
    "linked_text",
    "list_operators",
    "local_today",
    "make_parent",
    "mastery_falls",
    "needs_rehash",
    "notice_menu",
    "notice_text",
    "notify_parents",
    "open_file",
    "open_work",
    "operator_cohorts",
    "parse_due",
    "problem_at",
    "random_password",
    "read_items",
    "read_roster",
    "read_table",
    "record_opening",
    "remove_operator",
    "roster",
    "send_assignment_notices",
    "send_teacher_summaries",
    "skills_to_work_on",
    "student_classes",
    "student_copy",
    "summary_text",
    "teacher_summary_jobs",
    "told",
    "untold",
    "untold_work",
    "valid_email",
    "verify_password",
]
