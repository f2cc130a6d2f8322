"""The operator's commands, each parsed by bot.cli and run here: `users …` (enrol, credit, show,
export, forget, set-level, set-timezone), `cohorts …` and `operators …` (classes and who logs in to
the dashboard), `library reindex`, `costs rates` (the cost meter's rate table)."""

from bot.console.costs import costs_command
from bot.console.library import library_command
from bot.console.school import cohorts_command, operators_command
from bot.console.users import users

__all__ = ["cohorts_command", "costs_command", "library_command", "operators_command", "users"]
