"""What one send did, and the words that say it.

Every send returns a `SendResult`: `ok` only when Twilio accepted everything asked; otherwise
`reason` says why, `retryable` whether trying again later may work, and `for_model()` /
`explain()` say it to the model and to the user. The model is told in English what the user can
do (it says it in the user's language); a person reading it gets French first, English second.

The bottom of the package: it imports nothing of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.texts import fr_en


@dataclass
class SendResult:
    """What happened to one send. `ok`: Twilio accepted every message asked for, file included."""

    channel: str | None
    sids: list[str] = field(default_factory=list)
    # Nothing was sent: opted_out | delivery_blocked | window_closed | no_address | not_configured | empty
    # | erased (the user's data was erased meanwhile) | expired (queued longer than SEND_MAX_AGE_S)
    skipped: str | None = None
    error: str | None = None
    error_code: int | None = None  # Twilio's error code, when it gave one
    retryable: bool = False  # the failure may pass (Twilio unreachable, rate limited, ambiguous)
    template: bool = False
    file_as_link: bool = False  # the file went as a link in the text (SMS, template variable)
    pending_id: int | None = None  # the file waits for the user's next message (PendingDelivery)
    detail: str | None = None  # e.g. the delivery-blocked reason
    queued: bool = False  # some parts wait in the outbox: sent later, automatically; do not resend

    @property
    def accepted(self) -> bool:
        """Twilio accepted every message that was sent (a waiting file aside)."""
        return self.skipped is None and self.error is None and bool(self.sids) and not self.queued

    @property
    def ok(self) -> bool:
        return self.accepted and self.pending_id is None

    @property
    def reason(self) -> str | None:
        """None when ok; else skipped's value, file_waiting, refused, failed or unavailable."""
        if self.ok:
            return None
        if self.skipped:
            return self.skipped
        if self.queued:
            return "queued"
        if self.error is None:
            return "file_waiting" if self.pending_id is not None else "unavailable"
        if self.retryable:
            return "unavailable"
        return "refused" if self.error_code is not None else "failed"

    @property
    def permanent(self) -> bool:
        """Trying the same send again will not help (the scheduler gives up at once). A queued
        send is not permanent: the outbox sends it."""
        return not self.ok and not self.retryable and not self.queued

    def for_model(self) -> dict[str, Any]:
        """The tool result's view: {"delivered": …, "reason": …, "what_user_can_do": …}."""
        out: dict[str, Any] = {"delivered": self.ok, "channel": self.channel}
        if self.template:
            out["template"] = True
        if self.file_as_link:
            out["file_sent_as"] = "link"
        reason = self.reason
        if reason is None:
            return out
        out["reason"] = reason
        if self.error or self.detail:
            out["detail"] = (self.detail or self.error or "")[:300]
        if self.pending_id is not None:
            out["file_waiting_for_next_message"] = True
        out["what_user_can_do"] = MODEL_ADVICE.get(reason, MODEL_ADVICE["failed"])
        return out


# What the model is told the user can do, per reason (the model says it in the user's language).
MODEL_ADVICE = {
    "opted_out": "Nothing was sent: the user opted out (STOP). They can send START to get messages again.",
    "delivery_blocked": (
        "Nothing was sent: messages to this number were refused several times in a row (see detail). "
        "The user can check their number; answers here in the chat still reach them."),
    "window_closed": (
        "Nothing was sent: WhatsApp allows messages only within 24 h of the user's last WhatsApp message, "
        "and no template or SMS sender is set up. They can write on WhatsApp, then ask again."),
    "no_address": "Nothing was sent: there is no number for this user on that channel. Give it here instead.",
    "not_configured": (
        "Nothing was sent: this channel is not set up on this service. Give the content here, in the "
        "conversation, instead."),
    "empty": "Nothing was sent: the message was empty.",
    "erased": "Nothing was sent: this person's data was erased; there is no one to send it to.",
    "expired": ("Nothing was sent: the message waited too long to leave (the messaging service was "
                "busy) and was dropped rather than arrive late. Give the content here instead."),
    "file_waiting": (
        "The file did not go yet (WhatsApp's 24 h window is closed); it is kept and is sent automatically "
        "as soon as the user writes any message. Tell them so."),
    "refused": (
        "Nothing was sent: the messaging provider refused it (see detail). The user can check the number, "
        "or get the content here in the conversation."),
    "failed": "The message could not be delivered (see detail). The user can get the content here instead.",
    "unavailable": "Nothing was sent: the messaging service did not answer. Try again in a few minutes.",
    "queued": (
        "Not delivered yet: the messaging service did not take it right now. It is kept and sent "
        "automatically as soon as the service answers; do not send it again."),
}
# The same for a person reading it (handlers tell the user directly): French, then English.
USER_ADVICE = {
    "opted_out": ("Rien n'a été envoyé : ce numéro a demandé à ne plus recevoir de messages. START pour "
                  "les recevoir de nouveau.",
                  "Nothing was sent: you asked to receive no more messages. Send START to get them again."),
    "delivery_blocked": ("Rien n'a été envoyé : les derniers messages vers ce numéro ont été refusés. "
                         "Le numéro est-il le bon ? Ici, dans notre conversation, mes réponses arrivent "
                         "bien.",
                         "Nothing was sent: the last messages to this number were refused. Check the "
                         "number; here, in our chat, my answers still reach you."),
    "window_closed": ("Rien n'a été envoyé sur WhatsApp : aucun message de ce numéro n'y est arrivé depuis "
                      "plus de 24 h. Un message sur WhatsApp d'abord, puis la demande de nouveau.",
                      "Nothing was sent on WhatsApp: you have not written to me there for over 24 h. "
                      "Write to me on WhatsApp, then ask again."),
    "no_address": ("Rien n'a été envoyé : je n'ai pas de numéro pour ce canal. Je peux le donner ici.",
                   "Nothing was sent: I have no number for that channel. I can give it to you here."),
    "not_configured": ("Rien n'a été envoyé : ce moyen d'envoi n'est pas disponible sur ce service. "
                       "Je peux le donner ici, dans notre conversation.",
                       "Nothing was sent: that way of sending is not available on this service. "
                       "I can give it to you here, in our chat."),
    "empty": ("Il n'y avait rien à envoyer.", "There was nothing to send."),
    "erased": ("Rien n'a été envoyé : les données de ce compte ont été effacées.",
               "Nothing was sent: this account's data was erased."),
    "expired": ("Le message a trop attendu pour partir : il n'a pas été envoyé, plutôt que d'arriver "
                "en retard. Je peux le donner ici.",
                "The message waited too long to leave: it was not sent, rather than arrive late. "
                "I can give it to you here."),
    "file_waiting": ("Le fichier n'a pas pu partir tout de suite : il attend ici. Au prochain message, quel "
                     "qu'il soit, je l'envoie aussitôt.",
                     "Your file could not go right away: it is waiting for you. Send me any message and "
                     "I will send it at once."),
    "refused": ("Le message n'a pas été envoyé : l'opérateur l'a refusé. Le numéro est-il le bon ? "
                "Je peux aussi le donner ici.",
                "The message was not sent: the carrier refused it. Check the number, or ask me for it here."),
    "failed": ("Le message n'a pas pu être remis. Je peux le donner ici, dans notre conversation.",
               "The message could not be delivered. I can give it to you here, in our chat."),
    "unavailable": ("Le service d'envoi ne répond pas : rien n'est parti. Merci de réessayer dans quelques "
                    "minutes.",
                    "The messaging service is not answering: nothing was sent. Try again in a few minutes."),
    "queued": ("Le message n'est pas encore parti : le service d'envoi ne répond pas. Il partira tout "
               "seul dès que possible.",
               "The message has not gone yet: the messaging service is not answering. It will go by "
               "itself as soon as possible."),
}


def explain(result: SendResult, language: str = "fr") -> str:
    """A plain sentence for the user: what did not happen and what they can do ("" when ok)."""
    reason = result.reason
    if reason is None:
        return ""
    fr, en = USER_ADVICE.get(reason, USER_ADVICE["failed"])
    return fr_en(language, fr, en)
