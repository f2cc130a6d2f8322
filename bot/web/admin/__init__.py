"""The dashboard at /admin/: operators (admins and teachers) log in and see the learners' activity,
a class's roster, mastery heatmap and students at risk, one student's progress, the class's CSV
exports, the running costs and the open safety flags. bot/cli.py mounts ROUTES."""

from bot.web.admin.auth import SESSION_COOKIE, Viewer
from bot.web.admin.exports import safe_cell
from bot.web.admin.pages import ROUTES

__all__ = ["ROUTES", "SESSION_COOKIE", "Viewer", "safe_cell"]
