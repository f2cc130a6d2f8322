"""The personal assistant's own data: what the user asked to be remembered (`memory`) and their
tasks and reminders, with the daily digest they are sent (`tasks`)."""

from bot.assistant.errors import AssistantError

__all__ = ["AssistantError", "memory", "tasks"]
