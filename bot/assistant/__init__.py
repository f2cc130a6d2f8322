"""The personal assistant's own data: what the user asked to be remembered (`memory`) and their
tasks and reminders, with the daily digest they are sent (`tasks`)."""

__all__ = ["memory", "tasks"]
