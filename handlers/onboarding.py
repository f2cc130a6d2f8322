"""A new number: a welcome, then a numbered profile menu (1 Élève, 2 Parent, 3 Professionnel).

Until a profile is chosen the user is a guest: their other messages go on to the agent turn as
guest chat (text only, no tools). The choice sets the mode:
- 1 Élève: role "student", mode "child" (the tutor with its 22 tools);
- 2 Parent: role "parent", mode "child" — a parent mostly helps a child with school work, so the
  tutor and its tools fit, and the role lets the parents' features (linking a child, weekly
  summaries) recognise them;
- 3 Professionnel: role "pro", mode "pro" (all 24 tools).
The signup credits are granted once, when the profile is chosen (the ledger's ref makes it so).
"""

from __future__ import annotations

from bot import credits
from bot.context import Incoming
from handlers.keywords import keyword

PROFILES = {
    "1": ("student", "child"), "ELEVE": ("student", "child"), "STUDENT": ("student", "child"),
    "2": ("parent", "child"), "PARENT": ("parent", "child"),
    "3": ("pro", "pro"), "PROFESSIONNEL": ("pro", "pro"), "PRO": ("pro", "pro"),
    "PROFESSIONAL": ("pro", "pro"),
}


def welcome(msg: Incoming) -> str:
    name = (msg.user.display_name or "").split(" ")[0]
    hello = f"Bienvenue sur Deblo, {name} ! 👋" if name else "Bienvenue sur Deblo ! 👋"
    hello_en = f"Welcome to Deblo, {name}! 👋" if name else "Welcome to Deblo! 👋"
    return msg.t(
        f"{hello} Je t'aide pour les devoirs, les révisions et le travail, ici et par SMS.\n\n"
        "Qui es-tu ? Réponds avec le numéro :\n"
        "1 Élève\n2 Parent\n3 Professionnel\n\n"
        "Tu peux aussi me poser une question tout de suite. Écris STOP pour ne plus recevoir de messages.",
        f"{hello_en} I help with homework, revision and work, here and by SMS.\n\n"
        "Who are you? Reply with the number:\n"
        "1 Student\n2 Parent\n3 Professional\n\n"
        "You can also ask me a question right away. Send STOP to receive no more messages.",
    )


def confirmation(msg: Incoming, role: str, balance: int | None) -> str:
    gift = msg.t(f" Je t'offre {balance} crédits pour commencer.", f" Here are {balance} credits to start.") \
        if balance else ""
    if role == "student":
        return msg.t("C'est parti ! Pose-moi une question ou envoie la photo d'un exercice.",
                     "Let's go! Ask me a question or send a photo of an exercise.") + gift
    if role == "parent":
        return msg.t("Bienvenue ! Je peux aider ton enfant dans ses devoirs et te tenir au courant de ses "
                     "progrès. Pose-moi ta question.",
                     "Welcome! I can help your child with homework and keep you informed of their "
                     "progress. Ask me your question.") + gift
    return msg.t("Parfait. Documents, e-mails, calculs, recherches : dis-moi ce dont tu as besoin.",
                 "Great. Documents, e-mails, calculations, research: tell me what you need.") + gift


async def handle(msg: Incoming) -> bool:
    user = msg.user
    if user.onboarding_step is None:
        return False
    if user.onboarding_step == "new":
        user.onboarding_step = "profile"
        await msg.db.flush()
        await msg.reply(welcome(msg))
        return True
    choice = PROFILES.get(keyword(msg.text))
    if choice is None:
        return False  # guest chat until a profile is chosen
    role, mode = choice
    user.role, user.mode, user.onboarding_step = role, mode, None
    await msg.db.flush()
    granted = await credits.apply(msg.db, user.id, msg.services.settings.signup_credits, "signup",
                                  ref=f"signup:{user.id}")
    await msg.reply(confirmation(msg, role, granted and msg.services.settings.signup_credits))
    return True
