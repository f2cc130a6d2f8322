"""Linking a parent: `PARENT +225…` from a student, `OUI 4821` / `NON 4821` from the parent.

The parent gets exactly one SMS asking for confirmation and nothing else until they confirm (then a
weekly progress summary, see bot.learning.progress.send_weekly_summaries, and at most one message a
day about the child's tasks, bot.assistant.tasks.send_parent_digests).

That SMS goes to a number that has not agreed to anything yet, so it carries no text the requester
chose (no WhatsApp display name, nothing they typed): fixed words, the requester's masked number and
the request's own code. Each request has its code (random, valid `CODE_TTL`): `OUI 4821` confirms
that one request and `NON 4821` refuses it. A bare OUI or NON confirms nothing; it is answered with
the codes of the pending requests, sent back to the number that wrote (so a spoofed SMS sender
never sees them). After `MAX_CODE_TRIES` wrong codes in a row, answers are refused for
`CODE_LOCK`, so the codes cannot be guessed.

The student is told the SMS was sent only when Twilio accepted it; otherwise (no SMS sender, a
refusal) they are told so, and that the parent can write OUI to the bot themself to get the code.
Sending PARENT again for a request whose SMS never left, or whose code expired, sends a new code.
NON refuses for good: the same student asking again sends nothing more. A parent who sent STOP
(opted out) is never contacted. A student can ask at most `MAX_REQUESTS_PER_DAY` times a day and
have at most `MAX_PENDING_LINKS` unanswered requests, so the command cannot be used to spam numbers.
"""

from __future__ import annotations

import logging
import math
import re
import secrets
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import phonenumbers
from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from bot import accounts
from bot.channel.context import Incoming
from bot.channel.locale import default_locale, locale_for
from bot.learning.quiz_types import normalise
from bot.school import make_parent
from bot.storage.db import rowcount
from bot.storage.models import ParentLink, User
from bot.texts import fr_en

if TYPE_CHECKING:
    from bot.channel.outbound import SendResult

log = logging.getLogger("deblo.parents")

MAX_PENDING_LINKS = 3
MAX_REQUESTS_PER_DAY = 5
CODE_DIGITS = 4
CODE_TTL = timedelta(days=3)
MAX_CODE_TRIES = 5
CODE_LOCK = timedelta(hours=1)

_COMMAND = re.compile(r"^parent\s*[:=]?\s*([+\d][\d\s().\-/]*)?$", re.IGNORECASE)
# "oui", "OUI 4821", "Oui, 4821", "non #4821" (after normalise: lower case, no accents).
_ANSWER = re.compile(r"^(oui|yes|non|no)(?:[\s,:#-]*(\d{1,8}))?$")
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


def masked_number(phone: str | None) -> str | None:
    """`+225xxxxxx0304`: the country code and the last digits, enough for a parent to recognise the
    child's number without telling a stranger the whole of it. None for a user with no number."""
    if not phone:
        return None
    try:
        number = phonenumbers.parse(phone, None)
    except phonenumbers.NumberParseException:
        return None
    national = phonenumbers.national_significant_number(number)
    keep = 4 if len(national) > 6 else 2
    return f"+{number.country_code}{'x' * (len(national) - keep)}{national[-keep:]}"


def _region_of(phone: str | None) -> str:
    if phone:
        try:
            return phonenumbers.region_code_for_number(phonenumbers.parse(phone, None)) or "CI"
        except phonenumbers.NumberParseException:
            pass
    return "CI"


async def handle(msg: Incoming) -> bool:
    # During onboarding "PARENT" is the answer to the profile menu, not this command; a student the
    # school or operator enrolled ("new", mode child) has no menu to answer and may need a parent's OUI.
    step, user = msg.user.onboarding_step, msg.user
    command = _COMMAND.match(msg.text) if step is None or (step == "new" and user.mode == "child") else None
    if command:
        # Committed first: sends record rows in their own sessions (SQLite has one writer).
        await msg.db.commit()
        await add_parent(msg, (command.group(1) or "").strip())
        return True
    answer = _ANSWER.match(normalise(msg.text))
    if answer:
        return await answer_request(msg, confirm=answer.group(1) in YES_WORDS, code=answer.group(2))
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
    await _link_or_retry(msg, phone)


async def _link_or_retry(msg: Incoming, phone: str) -> None:
    """A new request to `phone`, or the existing one: sent again when its SMS never left or its code
    expired, otherwise the student is told where it stands."""
    student, now = msg.user, msg.services.clock()
    known = await msg.db.scalar(select(User).where(User.phone == phone))
    if known is not None:
        link = await msg.db.scalar(
            select(ParentLink).where(ParentLink.student_id == student.id, ParentLink.parent_id == known.id)
        )
        if link is not None:
            stale = link.invited_at is None or not _code_valid(link, now)
            if link.status == "pending" and not known.opted_out and stale:
                await _invite(msg, link, known, phone)
                return
            if link.status == "confirmed" and not known.opted_out and await _consent_lacking(msg):
                # Linked by the school (or before CONSENT_MODE): the parent's own OUI is asked for.
                await _invite(msg, link, known, phone)
                return
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
    link = ParentLink(student_id=student.id, parent_id=parent.id, status="pending", created_at=now)
    msg.db.add(link)
    await msg.db.flush()
    await _invite(msg, link, parent, phone)


def answerable() -> ColumnElement[bool]:
    """The requests a parent's OUI or NON may settle: pending ones, and confirmed ones whose consent
    was asked (they carry a code until it is answered)."""
    asked = and_(ParentLink.status == "confirmed", ParentLink.code.is_not(None))
    return or_(ParentLink.status == "pending", asked)


async def _consent_lacking(msg: Incoming) -> bool:
    """A child who needs a consent and has none: their parent already linked is asked for it."""
    safety = msg.services.settings.safety
    return await accounts.consent_missing(msg.db, replace(safety, consent_grace_messages=0), msg.user)


def _code_valid(link: ParentLink, now: datetime) -> bool:
    return bool(link.code) and link.code_expires_at is not None and link.code_expires_at > now


async def _issue_code(msg: Incoming, link: ParentLink, now: datetime) -> str:
    """A fresh random code for this request, different from the parent's other pending ones (so
    that one code names one request)."""
    taken = set(await msg.db.scalars(
        select(ParentLink.code).where(ParentLink.parent_id == link.parent_id, answerable(),
                                      ParentLink.id != link.id, ParentLink.code.is_not(None))
    ))
    code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
    while code in taken:
        code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
    link.code, link.code_expires_at = code, now + CODE_TTL
    return code


async def _invite(msg: Incoming, link: ParentLink, parent: User, phone: str) -> None:
    """Sends the invitation with a new code; the student is told it was sent only when Twilio
    accepted it, and `invited_at` records that it left."""
    now = msg.services.clock()
    code = await _issue_code(msg, link, now)
    link.invited_at = None  # until Twilio accepts the SMS carrying this code
    # The link and its code are durable before the SMS leaves (and sends write in their own sessions).
    await msg.db.commit()
    result = await _ask_parent(msg, parent, phone, code)
    if result.ok:
        await msg.db.execute(update(ParentLink).where(ParentLink.id == link.id, ParentLink.code == code)
                             .values(invited_at=now))
        await msg.db.commit()
        await msg.reply(msg.t(
            f"📨 J'ai envoyé un SMS au {phone} pour confirmer. "
            "Dès qu'il répond OUI avec le code reçu, il recevra tes progrès chaque semaine.",
            f"📨 I sent an SMS to {phone} to confirm. "
            "Once they reply YES with the code they got, they'll get your progress every week.",
        ))
        return
    log.warning("parent invitation not sent", extra={"skipped": result.skipped, "error": result.error})
    await msg.reply(_not_sent_text(msg, phone, configured=result.skipped != "not_configured"))


def _bot_numbers(msg: Incoming) -> list[str]:
    """Where a parent can write to the bot: its WhatsApp number, and its SMS number if it is one."""
    settings = msg.services.settings
    numbers = []
    if settings.twilio_whatsapp_from:
        numbers.append(f"{settings.twilio_whatsapp_from.removeprefix('whatsapp:')} (WhatsApp)")
    if settings.twilio_sms_from.startswith("+"):  # an alphanumeric sender cannot be answered
        numbers.append(f"{settings.twilio_sms_from} (SMS)")
    return numbers


def _not_sent_text(msg: Incoming, phone: str, *, configured: bool) -> str:
    what = msg.t(
        f"⚠️ Je n'ai pas envoyé de SMS au {phone} : ce service n'envoie pas de SMS." if not configured
        else f"⚠️ Le SMS au {phone} n'a pas pu partir.",
        f"⚠️ I did not send an SMS to {phone}: this service does not send SMS." if not configured
        else f"⚠️ The SMS to {phone} could not be sent.",
    )
    numbers = msg.t(" ou ", " or ").join(_bot_numbers(msg))
    where = msg.t(f"au {numbers}", f"to {numbers}") if numbers else msg.t("à ce service", "to this service")
    todo = msg.t(
        f" Ta demande est enregistrée : pour la confirmer, ton parent peut écrire OUI {where} "
        f"depuis le {phone}, puis répondre avec le code qu'il recevra.",
        f" Your request is saved: to confirm it, your parent can write YES {where} from {phone}, "
        "then answer with the code they get.",
    )
    if configured:
        todo += msg.t(f" Tu peux aussi renvoyer PARENT {phone} plus tard pour réessayer.",
                      f" You can also send PARENT {phone} again later to retry.")
    return what + todo


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
            # Its country's time zone; the student's language, which the family is likely to share.
            zone = locale_for(phone, default_locale(msg.services.settings)).timezone
            parent = User(phone=phone, role="parent", mode="guest", onboarding_step="new",
                          language=msg.user.language or "fr", timezone=zone, last_channel="sms",
                          created_at=msg.services.clock())
            msg.db.add(parent)
            await msg.db.flush()
        return parent
    except IntegrityError:
        # The same number was created at the same moment by another message: use that one.
        found = await msg.db.scalar(select(User).where(User.phone == phone))
        assert found is not None
        return found


def _who(student_phone: str | None, language: str) -> str:
    """The requester as fixed words and a masked number: nothing they could have written."""
    masked = masked_number(student_phone)
    who = fr_en(language, "un élève", "a student")
    return f"{who} ({masked})" if masked else who


def invitation_text(student_phone: str | None, code: str, language: str, *, consent: bool = False) -> str:
    """The SMS to a number not linked yet: fixed text, the requester's masked number, the code.
    `consent` (CONSENT_MODE): the parent is told that OUI also lets the child use the tutor (in
    words short enough for the SMS to stay one message)."""
    days = CODE_TTL.days
    if language == "en":
        also = " Your YES also lets them use Deblo." if consent else ""
        return (f"Deblo: {_who(student_phone, language)} asks to add you as a parent to follow their "
                f"schoolwork progress.{also} To accept, reply YES {code}; to refuse, NO {code} "
                f"(code valid {days} days). Without an answer, nothing more will be sent to you.")
    also = " Votre OUI l'autorise aussi à utiliser Deblo." if consent else ""
    return (f"Deblo : {_who(student_phone, language)} demande à vous ajouter comme parent pour suivre ses "
            f"progrès scolaires.{also} Pour accepter, répondez OUI {code} ; pour refuser, NON {code} "
            f"(code valable {days} jours). Sans réponse, rien d'autre ne vous sera envoyé.")


async def _ask_parent(msg: Incoming, parent: User, phone: str, code: str) -> SendResult:
    from bot.channel.outbound import send_to_number

    consent = msg.services.settings.safety.consent_mode != "none"
    text = invitation_text(msg.user.phone, code, parent.language, consent=consent)
    return await send_to_number(msg.services, phone, text=text, channel="sms", kind="parent_confirm")


# --- the parent's answer -------------------------------------------------------------------------


async def answer_request(msg: Incoming, *, confirm: bool, code: str | None = None) -> bool:
    """OUI/NON from someone with pending parent requests; other OUI/NON go on down the chain.

    Only a code confirms or refuses, and one code names one request."""
    links = list((
        await msg.db.scalars(
            select(ParentLink).where(ParentLink.parent_id == msg.user.id, answerable())
            .order_by(ParentLink.id)
        )
    ).all())
    if not links:
        return False
    now = msg.services.clock()
    locked = msg.user.parent_code_locked_until
    if locked is not None and locked > now:
        minutes = max(1, math.ceil((locked - now).total_seconds() / 60))
        await msg.reply(msg.t(f"Trop de codes erronés. Réessayez dans {minutes} min.",
                              f"Too many wrong codes. Try again in {minutes} min."))
        return True
    if code is None:
        await _tell_codes(msg, links, now)
        return True
    link = next((item for item in links if item.code == code), None)
    if link is None:
        await _wrong_code(msg, now)
        return True
    if not _code_valid(link, now):
        await msg.reply(msg.t("Ce code a expiré. Écrivez OUI (sans code) pour en recevoir un nouveau.",
                              "This code has expired. Write YES (without a code) to get a new one."))
        return True
    await _settle(msg, link, confirm, now)
    return True


async def _tell_codes(msg: Incoming, links: Sequence[ParentLink], now: datetime) -> None:
    """A bare OUI or NON: the codes of the pending requests (expired ones renewed), sent back to the
    number that wrote; nothing is confirmed."""
    students = {s.id: s for s in await msg.db.scalars(
        select(User).where(User.id.in_([link.student_id for link in links])))}
    for link in links:
        if not _code_valid(link, now):
            await _issue_code(msg, link, now)
    await msg.db.commit()

    def line(link: ParentLink) -> str:
        who = _who(students[link.student_id].phone if link.student_id in students else None, msg.lang)
        if msg.lang == "en":
            return f"{who}: YES {link.code} to accept, NO {link.code} to refuse"
        return f"{who} : OUI {link.code} pour accepter, NON {link.code} pour refuser"

    if len(links) == 1:
        await msg.reply(msg.t(f"Pour répondre à la demande de suivi de {line(links[0])}.",
                              f"To answer the follow-up request from {line(links[0])}."))
        return
    lines = "\n".join(f"• {line(link)}" for link in links)
    await msg.reply(msg.t(
        f"Vous avez {len(links)} demandes de suivi. Répondez à chacune avec son code :\n{lines}",
        f"You have {len(links)} follow-up requests. Answer each with its code:\n{lines}",
    ))


async def _wrong_code(msg: Incoming, now: datetime) -> None:
    """Counts a wrong code; the MAX_CODE_TRIES-th in a row locks answers for CODE_LOCK."""
    user = msg.user
    user.parent_code_failures = (user.parent_code_failures or 0) + 1
    if user.parent_code_failures >= MAX_CODE_TRIES:
        user.parent_code_failures, user.parent_code_locked_until = 0, now + CODE_LOCK
        await msg.db.commit()
        log.warning("parent code answers locked after wrong codes", extra={"user_id": user.id})
        minutes = int(CODE_LOCK.total_seconds() // 60)
        await msg.reply(msg.t(f"Code erroné. Trop d'essais : réessayez dans {minutes} min.",
                              f"Wrong code. Too many tries: try again in {minutes} min."))
        return
    await msg.db.commit()
    left = MAX_CODE_TRIES - user.parent_code_failures
    await msg.reply(msg.t(
        f"Ce code ne correspond à aucune demande. Vérifiez le code du SMS, ou écrivez OUI seul pour le "
        f"recevoir à nouveau ({left} essai{'s' if left > 1 else ''} avant un blocage).",
        f"This code matches no request. Check the code in the SMS, or write YES alone to get it again "
        f"({left} tr{'ies' if left > 1 else 'y'} left before a lock).",
    ))


async def _settle(msg: Incoming, link: ParentLink, confirm: bool, now: datetime) -> None:
    """Confirms or refuses the one request the code names."""
    result = await msg.db.execute(
        update(ParentLink)
        .where(ParentLink.id == link.id, answerable(), ParentLink.code == link.code)
        .values(status="confirmed" if confirm else "refused", confirmed_at=now if confirm else None,
                code=None, code_expires_at=None)
    )
    if rowcount(result) != 1:
        # Answered at the same moment by another message: nothing was changed here.
        await msg.reply(msg.t("Cette demande a déjà reçu une réponse.",
                              "This request has already been answered."))
        return
    msg.user.parent_code_failures = 0
    if confirm:
        await become_parent(msg)
        await _record_consent(msg, link.student_id, now)
    student = await msg.db.get(User, link.student_id)
    await msg.db.commit()
    who = _who(student.phone if student else None, msg.lang)
    if confirm:
        await msg.reply(msg.t(
            f"Merci ! Vous suivez maintenant {who} : un résumé de ses progrès chaque semaine, et au plus "
            "un message par jour sur ses tâches du jour. Envoyez ENFANTS pour voir ses progrès à tout "
            "moment ; STOP pour ne plus recevoir aucun message de Deblo, START pour reprendre.",
            f"Thank you! You now follow {who}: a summary of their progress every week, and at most one "
            "message a day about their tasks of the day. Send CHILDREN to see their progress any time; "
            "STOP to get no more messages from Deblo at all, START to resume.",
        ))
    else:
        await msg.reply(msg.t("C'est noté : vous ne recevrez rien de plus pour cette demande.",
                              "Noted: you won't receive anything more about this request."))
    if student is not None:
        await _tell_student(msg, student, confirm)


async def _record_consent(msg: Incoming, student_id: int, now: datetime) -> None:
    """With CONSENT_MODE, the parent's OUI to this request is their consent: who (their number, read
    from the sender Twilio signed for, never from the text), when and on which channel."""
    if msg.services.settings.safety.consent_mode == "none":
        return
    who = msg.user.phone or f"user {msg.user.id}"
    recorded = await accounts.record_consent(msg.db, student_id, given_by=who, given_by_id=msg.user.id,
                                             channel=msg.channel, now=now)
    log.info("consent recorded" if recorded else "consent already on record",
             extra={"user_id": msg.user.id, "student_id": student_id, "channel": msg.channel})


async def become_parent(msg: Incoming) -> None:
    """A confirmed link makes a parent, as choosing 2 Parent in the profile menu does (role
    "parent", mode "child", the signup credits once): MENU then lists ENFANTS and the profile menu
    is not offered again. A pro keeps its profile and its tools. The reply to the OUI is the
    parent's welcome: a number that never wrote before it is not welcomed again as new."""
    await make_parent(msg.db, msg.user, msg.services.settings.signup_credits)


async def _tell_student(msg: Incoming, student: User, confirmed: bool) -> None:
    from bot.channel.outbound import send_to_user

    if confirmed and msg.services.settings.safety.consent_mode != "none":
        text = fr_en(student.language, "✅ Ton parent a donné son accord : on peut continuer ! Il recevra "
                     "tes progrès chaque semaine.",
                     "✅ Your parent gave their consent: we can go on! They'll get your weekly progress.")
    elif confirmed:
        text = fr_en(student.language, "✅ Ton parent a confirmé : il recevra tes progrès chaque semaine.",
                     "✅ Your parent confirmed: they'll get your weekly progress.")
    else:
        text = fr_en(student.language, "Ton parent a refusé le suivi.", "Your parent declined the follow-up.")
    try:
        await send_to_user(msg.services, student, text=text, kind="parent_link")
    except Exception:
        log.exception("could not tell student %s about the parent's answer", student.id)
