"""Linking a parent: `PARENT +225…` from a student, `OUI`/`NON` from the parent.

The parent gets exactly one SMS asking for confirmation and nothing else until they answer OUI
(then a weekly progress SMS, see bot.progress.send_weekly_summaries). NON refuses for good: the
same student asking again sends nothing more. A parent who sent STOP (opted out) is never
contacted. A student can ask at most `MAX_REQUESTS_PER_DAY` times a day and have at most
`MAX_PENDING_LINKS` unanswered requests, so the command cannot be used to spam numbers.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import phonenumbers
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from bot.context import Incoming
from bot.models import ParentLink, User
from bot.quiz import normalise

log = logging.getLogger("deblo.parents")

MAX_PENDING_LINKS = 3
MAX_REQUESTS_PER_DAY = 5

_COMMAND = re.compile(r"^parent\s*[:=]?\s*([+\d][\d\s().\-/]*)?$", re.IGNORECASE)
YES_WORDS = frozenset({"oui", "yes"})
NO_WORDS = frozenset({"non", "no"})


def parse_phone(raw: str, default_region: str | None) -> str | None:
    """The number in E.164, or None when it is not a valid phone number."""
    try:
        number = phonenumbers.parse(raw, None if raw.strip().startswith("+") else default_region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def _region_of(phone: str | None) -> str:
    if phone:
        try:
            return phonenumbers.region_code_for_number(phonenumbers.parse(phone, None)) or "CI"
        except phonenumbers.NumberParseException:
            pass
    return "CI"


async def handle(msg: Incoming) -> bool:
    # During onboarding "PARENT" is the answer to the profile menu, not this command.
    command = _COMMAND.match(msg.text) if msg.user.onboarding_step is None else None
    if command:
        # Committed first: sends record rows in their own sessions (SQLite has one writer).
        await msg.db.commit()
        await add_parent(msg, (command.group(1) or "").strip())
        return True
    word = normalise(msg.text)
    if word in YES_WORDS or word in NO_WORDS:
        return await answer_request(msg, confirm=word in YES_WORDS)
    return False


async def add_parent(msg: Incoming, raw_number: str) -> None:
    student = msg.user
    if not raw_number:
        await msg.reply(msg.t(
            "Pour ajouter un parent, envoie PARENT suivi de son numéro, par exemple : PARENT +2250701020304",
            "To add a parent, send PARENT and their number, for example: PARENT +2250701020304",
        ))
        return
    if student.mode == "guest" or student.role == "parent":
        await msg.reply(msg.t(
            "Seul un élève inscrit peut ajouter un parent.",
            "Only a registered student can add a parent.",
        ))
        return
    phone = parse_phone(raw_number, _region_of(student.phone))
    if phone is None:
        await msg.reply(msg.t(
            f"Le numéro « {raw_number} » n'est pas valide. "
            "Écris-le avec l'indicatif, par exemple +2250701020304.",
            f"The number \"{raw_number}\" is not valid. Write it with the country code, e.g. +2250701020304.",
        ))
        return
    if phone == student.phone:
        await msg.reply(msg.t("C'est ton propre numéro 🙂 Indique celui de ton parent.",
                              "That's your own number 🙂 Send your parent's number."))
        return
    requests = await msg.services.state.incr(f"parent-requests:{student.id}", 86400)
    if requests > MAX_REQUESTS_PER_DAY:
        await msg.reply(msg.t("Trop de demandes aujourd'hui. Réessaie demain.",
                              "Too many requests today. Try again tomorrow."))
        return
    known = await msg.db.scalar(select(User).where(User.phone == phone))
    if known is not None:
        link = await msg.db.scalar(
            select(ParentLink).where(ParentLink.student_id == student.id, ParentLink.parent_id == known.id)
        )
        if link is not None:
            await msg.reply(_existing_link_text(msg, link.status, known.opted_out))
            return
        if known.opted_out:
            await msg.reply(msg.t(
                "Ce numéro a choisi de ne plus recevoir nos messages : impossible de l'ajouter.",
                "This number chose to receive no messages from us: it cannot be added.",
            ))
            return
    pending = await msg.db.scalar(
        select(func.count(ParentLink.id)).where(ParentLink.student_id == student.id,
                                                ParentLink.status == "pending")
    )
    if (pending or 0) >= MAX_PENDING_LINKS:
        await msg.reply(msg.t("Tu as déjà plusieurs demandes en attente. Attends qu'un parent réponde.",
                              "You already have several requests waiting. Wait for a parent to answer."))
        return
    parent = known or await _new_parent_user(msg, phone)
    msg.db.add(ParentLink(student_id=student.id, parent_id=parent.id, status="pending",
                          created_at=msg.services.clock()))
    # The link is durable before the SMS leaves (and sends write in their own sessions).
    await msg.db.commit()
    await _ask_parent(msg, parent, phone)
    await msg.reply(msg.t(
        f"📨 J'ai envoyé un SMS au {phone} pour confirmer. "
        "Dès qu'il répond OUI, il recevra tes progrès chaque semaine.",
        f"📨 I sent an SMS to {phone} to confirm. Once they reply YES, they'll get your progress every week.",
    ))


def _existing_link_text(msg: Incoming, status: str, opted_out: bool) -> str:
    if status == "confirmed" and not opted_out:
        return msg.t("Ce parent est déjà lié à ton compte ✅",
                     "This parent is already linked to your account ✅")
    if status == "pending":
        return msg.t("Une demande est déjà en attente pour ce numéro.",
                     "A request is already waiting for this number.")
    return msg.t("Ce numéro a refusé ou arrêté le suivi : je ne peux pas le lui redemander.",
                 "This number refused or stopped the follow-up: I can't ask again.")


async def _new_parent_user(msg: Incoming, phone: str) -> User:
    try:
        async with msg.db.begin_nested():
            # A new number like any other ("new": welcomed and onboarded when they first write),
            # so that after OUI the parent can use the bot too.
            parent = User(phone=phone, role="parent", mode="guest", onboarding_step="new",
                          language=msg.user.language or "fr", last_channel="sms",
                          created_at=msg.services.clock())
            msg.db.add(parent)
            await msg.db.flush()
        return parent
    except IntegrityError:
        # The same number was created at the same moment by another message: use that one.
        found = await msg.db.scalar(select(User).where(User.phone == phone))
        assert found is not None
        return found


async def _ask_parent(msg: Incoming, parent: User, phone: str) -> None:
    from bot.outbound import send_to_number

    name = msg.user.display_name or msg.user.phone or "?"
    number = msg.user.phone or ""
    who = f"{name} ({number})" if number and number != name else name
    text = (
        f"Deblo: {who} wants to add you as a parent to follow their schoolwork progress. "
        "Reply YES to accept or NO to refuse."
        if parent.language == "en"
        else f"Deblo : {who} souhaite vous ajouter comme parent pour suivre ses progrès scolaires. "
        "Répondez OUI pour accepter ou NON pour refuser."
    )
    await send_to_number(msg.services, phone, text=text, channel="sms", kind="parent_confirm")


async def answer_request(msg: Incoming, *, confirm: bool) -> bool:
    """OUI/NON from someone with pending parent requests; other OUI/NON go on down the chain."""
    links = (
        await msg.db.scalars(
            select(ParentLink).where(ParentLink.parent_id == msg.user.id, ParentLink.status == "pending")
        )
    ).all()
    if not links:
        return False
    now = msg.services.clock()
    status = "confirmed" if confirm else "refused"
    await msg.db.execute(
        update(ParentLink)
        .where(ParentLink.id.in_([link.id for link in links]), ParentLink.status == "pending")
        .values(status=status, confirmed_at=now if confirm else None)
    )
    if msg.user.role is None:
        msg.user.role = "parent"
    student_ids = [link.student_id for link in links]
    students = (await msg.db.scalars(select(User).where(User.id.in_(student_ids)))).all()
    names = ", ".join(s.display_name or s.phone or "?" for s in students)
    await msg.db.commit()
    if confirm:
        await msg.reply(msg.t(
            f"Merci ! Vous recevrez chaque semaine un résumé des progrès de {names}. "
            "Envoyez ENFANTS pour les voir à tout moment, STOP pour ne plus rien recevoir.",
            f"Thank you! You'll get a weekly summary of {names}'s progress. "
            "Send CHILDREN to see it any time, STOP to receive nothing more.",
        ))
    else:
        await msg.reply(msg.t("C'est noté, vous ne recevrez rien de plus.",
                              "Noted, you won't receive anything more."))
    await _tell_students(msg, students, confirm)
    return True


async def _tell_students(msg: Incoming, students: Sequence[User], confirmed: bool) -> None:
    from bot.outbound import send_to_user

    for student in students:
        en = student.language == "en"
        if confirmed:
            text = "✅ Your parent confirmed: they'll get your weekly progress." if en else \
                "✅ Ton parent a confirmé : il recevra tes progrès chaque semaine."
        else:
            text = "Your parent declined the follow-up." if en else "Ton parent a refusé le suivi."
        try:
            await send_to_user(msg.services, student, text=text, kind="parent_link")
        except Exception:
            log.exception("could not tell student %s about the parent's answer", student.id)
