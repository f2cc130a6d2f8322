"""create_task: a task with a priority, a due date and time in the user's time zone, and tags."""

from __future__ import annotations

from typing import Any

from bot.agent.toolspec import Tool, ToolContext, ToolResult, tool_error
from bot.capabilities import tasks
from tools.modes import modes_for


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    try:
        task, tz = await tasks.create(
            ctx.services,
            ctx.user_id,
            title=str(args.get("title") or ""),
            priority=str(args.get("priority") or "normal"),
            due_date=args.get("due_date"),
            due_time=args.get("due_time"),
            tags=args.get("tags"),
        )
    except tasks.TaskLimitError as exc:
        return tool_error(str(exc), limit=ctx.services.settings.max_open_tasks)
    except tasks.TaskInputError as exc:
        return tool_error(str(exc))
    result: ToolResult = {
        "success": True,
        "task_id": task.id,
        "title": task.title,
        "priority": task.priority,
        "tags": task.tags or [],
        "timezone": tz.key,
    }
    if task.due_at is not None:
        result["due_local"] = tasks.local_time(task.due_at, tz)
        lead = ctx.services.settings.reminder_lead_minutes
        result["reminders"] = (
            f"at the due time{'' if task.lead_reminder_sent_at else f' and {lead} minutes before'}"
        )
    result["note"] = "The user can reply TACHES (TASKS) to list open tasks and FAIT n (DONE n) to close one."
    return result


TOOL = Tool(
    name="create_task",
    description="Task or reminder, sent before and at the due time.",
    parameters={
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "priority": {"type": "string", "enum": list(tasks.PRIORITIES)},
            "due_date": {"type": "string"},
            "due_time": {"type": "string"},
            "tags": {"type": "array"},
        },
        "required": ["title"],
    },
    modes=modes_for("create_task"),
    run=run,
    side_effects=True,
)
