"""Which tools each mode is offered, by name, as the product defines them.

guest: none (plain chat); child: 22 (all but bash_execute and draft_email); pro: all 24.
"""

from __future__ import annotations

ALL_TOOL_NAMES: tuple[str, ...] = (
    # Files
    "generate_xlsx", "generate_pdf", "generate_pptx", "generate_docx", "generate_html", "generate_md",
    # Communication
    "send_email_to_user", "draft_email", "send_sms_to_user", "send_whatsapp_to_user",
    # Files and memory
    "list_user_files", "read_user_file", "search_user_files", "save_memory",
    # Code
    "bash_execute",
    # Web
    "web_search", "browse_url",
    # Pedagogy
    "interactive_quiz", "true_false_quiz",
    # Rewards
    "award_bonus_credits", "report_exercise_result",
    # Tasks, billing, bugs
    "create_task", "buy_credits", "report_bug",
)

PRO_ONLY = frozenset({"bash_execute", "draft_email"})

MODE_TOOLS: dict[str, frozenset[str]] = {
    "guest": frozenset(),
    "child": frozenset(ALL_TOOL_NAMES) - PRO_ONLY,
    "pro": frozenset(ALL_TOOL_NAMES),
}

CHILD_AND_PRO = frozenset({"child", "pro"})
PRO = frozenset({"pro"})


def modes_for(name: str) -> frozenset[str]:
    """The modes a tool is offered in, derived from the table above."""
    return frozenset(mode for mode, names in MODE_TOOLS.items() if name in names)
