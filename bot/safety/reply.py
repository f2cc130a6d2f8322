"""The caring reply a child gets first, with the helpline of their country (SAFETY_HELPLINES).

Short, warm, and no lesson: it thanks the child, says they are not alone, gives a number that is
free to call and a person to talk to, and says the tutor is still there. Only GSM-7 letters, so
that on SMS it stays one cheap encoding.
"""

from __future__ import annotations

from bot.channel.locale import region_of
from bot.config_groups import Safety
from bot.storage.models import User

__all__ = ["caring_reply", "helpline_of"]


def helpline_of(safety: Safety, user: User) -> str | None:
    """The helpline of the user's country (from their number), None when none is known."""
    return safety.helpline(region_of(user.phone))


def caring_reply(safety: Safety, user: User) -> str:
    number = helpline_of(safety, user)
    if (user.language or "fr") == "en":
        call = (f"You can call {number} for free: people there listen to children and young people, "
                "without judging. " if number else "")
        return ("Thank you for telling me. What you feel matters, and you do not have to go through "
                f"this alone. {call}Please also talk to an adult you trust (a parent, a teacher). If you "
                "are in danger right now, call emergency services. I am still here if you want to "
                "talk or keep working.")
    call = (f"Tu peux appeler gratuitement le {number} : des personnes y écoutent les enfants et les "
            "jeunes, sans juger. " if number else "")
    return ("Merci de me l'avoir dit. Ce que tu ressens compte, et tu n'as pas à vivre cela sans aide. "
            f"{call}Parle aussi à un adulte de confiance (un parent, un enseignant). Si tu es en danger "
            "maintenant, appelle les secours. Je suis toujours là si tu veux parler ou continuer à "
            "travailler.")
