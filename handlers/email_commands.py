"""`EMAIL adresse` registers the user's own address; `CODE 123456` (or `EMAIL 123456`) confirms it.

The confirmed address is the only one `send_email_to_user` will ever write to, so it must be proven:
a six-digit code goes to the address and only that code, typed back here before it expires, makes it
the user's. Codes are a word plus six digits, never a bare number, so they cannot be taken for a
quiz answer. A sentence that merely starts with "email" is left to the agent.

An SMS sender can be spoofed, so a change asked by SMS is not applied on the code alone: it needs
the same code typed on WhatsApp, or a second code mailed to the previous confirmed address. Until
then the address files are mailed to stays what it was. Whenever the confirmed address changes or
is removed, the previous one is told.
"""

from __future__ import annotations

import logging
import re
import secrets
from datetime import timedelta

from bot.channel.context import Incoming
from bot.channel.email import (
    EmailError,
    build_message,
    normalize_address,
    send_message,
    sender_address,
    smtp_configured,
)
from bot.render import render

_COMMAND = re.compile(r"^(?:e-?mail|courriel)\s*[:=]?\s*(\S*)\s*$", re.I)
_CODE = re.compile(r"^(?:code|e-?mail|courriel)\s*[:=]?\s*(\d{6})$", re.I)
_REMOVE_WORDS = {"supprimer", "effacer", "retirer", "delete", "remove"}
MAX_WRONG_CODES = 5
MAX_CODES_PER_HOUR = 5
# The channel whose sender can be spoofed: a change asked there needs a second proof.
SPOOFABLE = "sms"

log = logging.getLogger(__name__)


async def handle(msg: Incoming) -> bool:
    text = msg.text.strip()
    code = _CODE.match(text)
    if code:
        await _confirm(msg, code.group(1))
        return True
    command = _COMMAND.match(text)
    if not command:
        return False
    arg = command.group(1)
    if not arg:
        await _status(msg)
        return True
    if arg.lower() in _REMOVE_WORDS:
        await _remove(msg)
        return True
    if "@" not in arg:
        return False  # e.g. "Email me this": a sentence for the agent, not a command
    await _register(msg, arg)
    return True


async def _status(msg: Incoming) -> None:
    user = msg.user
    if user.email and user.email_verified:
        await _reply(msg, msg.t(
            f"Adresse e-mail confirmée : {user.email}\n"
            "Pour la changer : EMAIL nouvelle@adresse.com — pour la retirer : EMAIL SUPPRIMER",
            f"Your confirmed e-mail address: {user.email}\n"
            "To change it: EMAIL new@address.com — to remove it: EMAIL DELETE",
        ))
        return
    await _reply(msg, msg.t(
        "Pour recevoir des documents par e-mail : EMAIL nom@adresse.com\n"
        "Un code à 6 chiffres arrivera à cette adresse pour la confirmer.",
        "To receive documents by e-mail, send: EMAIL your@address.com\n"
        "I'll send you a 6-digit code to confirm it.",
    ))


async def _remove(msg: Incoming) -> None:
    user = msg.user
    previous = _confirmed(msg)
    user.email = None
    user.email_verified = False
    _clear_code(msg)
    await _reply(msg, msg.t("L'adresse e-mail a été retirée.", "Your e-mail address has been removed."))
    if previous:
        await _tell_previous(msg, previous, None)


async def _register(msg: Incoming, raw: str) -> None:
    services, user = msg.services, msg.user
    settings = services.settings
    address = normalize_address(raw.strip("<>.,;"))
    if address is None:
        await _reply(msg, msg.t(
            f"« {raw[:80]} » n'est pas une adresse e-mail valide. Exemple : EMAIL awa@exemple.com",
            f"\"{raw[:80]}\" is not a valid e-mail address. Example: EMAIL awa@example.com",
        ))
        return
    if smtp_configured(settings):
        await _reply(msg, msg.t("L'envoi d'e-mails n'est pas disponible pour le moment.",
                              "E-mail is not available at the moment."))
        return
    if user.email_verified and user.email == address:
        await _reply(msg, msg.t(f"{address} est déjà l'adresse confirmée.",
                              f"{address} is already your confirmed address."))
        return
    sent = await services.state.incr(f"email-code-sent:{user.id}", 3600)
    if sent > MAX_CODES_PER_HOUR:
        await _reply(msg, msg.t("Trop de codes demandés. Merci de réessayer dans une heure.",
                              "Too many codes requested. Try again in an hour."))
        return
    code = f"{secrets.randbelow(1_000_000):06d}"
    minutes = max(1, settings.email_code_ttl_s // 60)
    mail = build_message(
        from_addr=sender_address(settings),
        to=[address],
        subject=msg.t("Code de confirmation Deblo", "Your Deblo confirmation code"),
        body=render(f"email/confirm_code.{msg.t('fr', 'en')}.txt", code=code, minutes=minutes),
    )
    try:
        await send_message(settings, mail)
    except EmailError:
        await _reply(msg, msg.t(
            "Je n'ai pas pu envoyer le code à cette adresse. Merci de la vérifier et de réessayer plus tard.",
            "I could not send the code to this address. Check it and try again later.",
        ))
        return
    user.pending_email = address
    user.email_code = code
    user.email_approval_code = None
    user.email_code_expires_at = services.clock() + timedelta(seconds=settings.email_code_ttl_s)
    await services.state.kv_delete(f"email-code-wrong:{user.id}")
    await _reply(msg, msg.t(
        f"Un code est parti à {address}. Réponse ici : CODE suivi des 6 chiffres "
        f"(ex. CODE 123456). Valable {minutes} minutes.",
        f"I sent a code to {address}. Reply here: CODE followed by the 6 digits "
        f"(e.g. CODE 123456). Valid for {minutes} minutes.",
    ))


async def _confirm(msg: Incoming, code: str) -> None:
    services, user = msg.services, msg.user
    if not user.pending_email or not user.email_code:
        await _reply(msg, msg.t(
            "Aucun code en attente. Pour enregistrer une adresse : EMAIL nom@adresse.com",
            "No code is pending. To register your address: EMAIL your@address.com",
        ))
        return
    expires = user.email_code_expires_at
    if expires is None or services.clock() >= expires:
        _clear_code(msg)
        await _reply(msg, msg.t(
            "Ce code a expiré. EMAIL nom@adresse.com de nouveau pour en recevoir un autre.",
            "This code has expired. Send EMAIL your@address.com again to get a new one.",
        ))
        return
    approval = user.email_approval_code
    if approval and secrets.compare_digest(code, approval):
        await _apply(msg)  # the previous address approved the change
        return
    if not secrets.compare_digest(code, user.email_code):
        wrong = await services.state.incr(f"email-code-wrong:{user.id}", services.settings.email_code_ttl_s)
        if wrong >= MAX_WRONG_CODES:
            _clear_code(msg)
            await _reply(msg, msg.t(
                "Code incorrect trop de fois. EMAIL nom@adresse.com de nouveau pour recommencer.",
                "Wrong code too many times. Send EMAIL your@address.com to start again.",
            ))
            return
        await _reply(msg, msg.t("Code incorrect. Le bon code est dans l'e-mail reçu.",
                              "Wrong code. Check the e-mail you received and try again."))
        return
    if msg.channel == SPOOFABLE:
        await _ask_approval(msg)
        return
    await _apply(msg)


async def _apply(msg: Incoming) -> None:
    services, user = msg.services, msg.user
    previous = _confirmed(msg)
    user.email = user.pending_email
    user.email_verified = True
    _clear_code(msg)
    await services.state.kv_delete(f"email-code-wrong:{user.id}")
    await _reply(msg, msg.t(
        f"C'est confirmé ✅ Les documents pourront partir à {user.email}.",
        f"Confirmed ✅ I can now send your documents to {user.email}.",
    ))
    if previous and previous.lower() != (user.email or "").lower():
        await _tell_previous(msg, previous, user.email)


async def _ask_approval(msg: Incoming) -> None:
    """The new address is proven, but by SMS: WhatsApp or the previous address must approve."""
    services, user = msg.services, msg.user
    settings = services.settings
    previous = _confirmed(msg)
    if previous and not user.email_approval_code:  # mailed once per change asked
        approval = f"{secrets.randbelow(1_000_000):06d}"
        subject = msg.t("Changement d'adresse e-mail demandé", "E-mail change requested")
        if await _mail(msg, previous, subject, msg.t(
            f"Bonjour,\n\nQuelqu'un a demandé par SMS de remplacer l'adresse e-mail du compte Deblo "
            f"({previous}) par {user.pending_email}.\n\nPour confirmer cette demande : CODE {approval} dans "
            "la conversation avec Deblo. Sans cela, rien ne change.",
            f"Hello,\n\nSomeone asked by SMS to replace the e-mail address of your Deblo account "
            f"({previous}) with {user.pending_email}.\n\nIf it was you, send CODE {approval} in your "
            "conversation with Deblo to confirm. Otherwise, ignore this message: nothing changes.",
        )):
            user.email_approval_code = approval
            user.email_code_expires_at = services.clock() + timedelta(seconds=settings.email_code_ttl_s)
    other = msg.t(
        f", ou le code envoyé à l'adresse actuelle {previous}",
        f", or send the code sent to your current address {previous}",
    ) if user.email_approval_code else ""
    await _reply(msg, msg.t(
        f"Le code est bon, mais par sécurité un changement d'adresse demandé par SMS doit être "
        f"confirmé : ce même code (CODE suivi des 6 chiffres) depuis WhatsApp{other}. "
        f"D'ici là, {'l’adresse reste ' + previous if previous else 'aucune adresse n’est enregistrée'}.",
        f"The code is right, but for your safety an address change asked by SMS must be confirmed: "
        f"send the same code (CODE followed by the 6 digits) from WhatsApp{other}. "
        f"Until then, {'your address stays ' + previous if previous else 'no address is registered'}.",
    ))


def _confirmed(msg: Incoming) -> str | None:
    user = msg.user
    return user.email if user.email and user.email_verified else None


async def _tell_previous(msg: Incoming, previous: str, new: str | None) -> None:
    """The previous address hears of the change, so that a change its owner did not ask for is seen."""
    channel = "WhatsApp" if msg.channel == "whatsapp" else msg.channel.upper()
    subject = msg.t("L'adresse e-mail Deblo a changé", "Your Deblo e-mail address changed")
    body = render(f"email/address_changed.{msg.t('fr', 'en')}.txt", previous=previous, new=new,
                  channel=channel)
    await _mail(msg, previous, subject, body)


async def _mail(msg: Incoming, to: str, subject: str, body: str) -> bool:
    settings = msg.services.settings
    try:
        await send_message(settings, build_message(from_addr=sender_address(settings), to=[to],
                                                   subject=subject, body=body))
        return True
    except EmailError as exc:
        log.warning("could not mail the previous address", extra={"user_id": msg.user.id, "error": str(exc)})
        return False


async def _reply(msg: Incoming, text: str) -> None:
    # Changes are committed before the user hears about them, and no write lock is held while sending.
    await msg.db.commit()
    await msg.reply(text)


def _clear_code(msg: Incoming) -> None:
    msg.user.pending_email = None
    msg.user.email_code = None
    msg.user.email_approval_code = None
    msg.user.email_code_expires_at = None
