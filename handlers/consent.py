"""A child without the consent CONSENT_MODE asks for, past the grace (bot.accounts.consent): every
message gets one short answer, what is missing and how to get it, with the helpline; nothing else.

It sits after the safety reply, a person's hold, STOP, SUPPRIMER and PARENT (the child must be able
to link a parent, and to leave): distress is still heard and answered with the helpline, and the
caring reply is then the whole answer (a refusal right after « je suis toujours là » would read as
one). Commands, menus and the tutor come after it and are not reached. The answer is sent to every
message, never rate-limited: a child who writes is never met with silence.
"""

from __future__ import annotations

from sqlalchemy import select

from bot import accounts, safety
from bot.channel.context import Incoming
from bot.storage.models import ParentLink
from handlers.parents import answerable
from handlers.safety import DISTRESS


async def handle(msg: Incoming) -> bool:
    settings = msg.services.settings
    if not await accounts.consent_missing(msg.db, settings.safety, msg.user):
        return False
    if DISTRESS in msg.extra:
        return True  # the caring reply and the helpline were this message's answer
    pending = await msg.db.scalar(select(ParentLink.id).where(ParentLink.student_id == msg.user.id,
                                                              answerable()).limit(1))
    # Sends write in their own sessions (SQLite has one writer): what the pipeline wrote goes first.
    await msg.db.commit()
    await msg.reply(consent_needed_text(msg, waiting=pending is not None), kind="notice")
    return True


def consent_needed_text(msg: Incoming, *, waiting: bool) -> str:
    """What is missing, what to do, and where to call for help meanwhile."""
    if waiting:
        what = msg.t(
            "J'attends l'accord de ton parent : il doit répondre OUI avec le code reçu par SMS. "
            "Tu peux aussi envoyer PARENT suivi du numéro d'un autre parent.",
            "I'm waiting for your parent's consent: they must answer YES with the code they got by SMS. "
            "You can also send PARENT and another parent's number.",
        )
    else:
        what = msg.t(
            "Pour continuer à travailler avec moi, il me faut l'accord d'un parent. Envoie PARENT suivi "
            "de son numéro, par exemple PARENT +2250701020304 : il recevra un SMS et devra répondre OUI "
            "avec le code.",
            "To keep working with me, I need a parent's consent. Send PARENT and their number, for "
            "example PARENT +2250701020304: they'll get an SMS and must answer YES with the code.",
        )
    number = safety.helpline_of(msg.services.settings.safety, msg.user)
    help_line = msg.t(
        f" Si tu ne vas pas bien, appelle gratuitement le {number}, ou parle à un adulte de confiance."
        if number else " Si tu ne vas pas bien, parle à un adulte de confiance.",
        f" If you are not feeling well, call {number} for free, or talk to an adult you trust."
        if number else " If you are not feeling well, talk to an adult you trust.",
    )
    return what + help_line
