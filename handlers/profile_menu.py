"""The profile choice (Élève / Parent / Professionnel) as a pending menu with its buttons: offered by
the welcome (handlers/onboarding.py) and by the notice a guest gets past the day's free messages
(handlers/turn/gate.py); a tap or a typed number is answered by onboarding."""

from __future__ import annotations

from bot.channel import menus
from bot.channel.buttons import Menu
from bot.channel.context import Incoming

__all__ = ["PROFILE_MENU_KIND", "PROFILE_MENU_TTL_S", "PROFILE_NAMES", "profile_menu"]

PROFILE_MENU_KIND = "profile"
# A guest may choose days later: the buttons stay valid as long as typing the number does.
PROFILE_MENU_TTL_S = 30 * 86400
PROFILE_NAMES = {"student": ("Élève", "Student"), "parent": ("Parent", "Parent"),
                 "pro": ("Professionnel", "Professional")}


async def profile_menu(msg: Incoming) -> Menu:
    """The profile choice as buttons (its numbered text is in the welcome), made the pending menu;
    committed, so that the reply carrying it can go."""
    menu_id = await menus.set_menu(msg.services, msg.conversation.id, PROFILE_MENU_KIND, {},
                                   PROFILE_MENU_TTL_S, db=msg.db)
    await msg.db.commit()
    options = tuple(msg.t(fr, en) for fr, en in PROFILE_NAMES.values())  # 1 student, 2 parent, 3 pro
    return Menu(menu_id=menu_id, body="", options=options, language=msg.lang)
