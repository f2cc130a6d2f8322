"""One WhatsApp number per persona: with TWILIO_WHATSAPP_FROM_PRO set, pro users (the accountant's
assistant) write to it and everyone else to TWILIO_WHATSAPP_FROM, the students' tutor. A message on
the other persona's number is answered by one short line naming the right number, with no model
call: one number offering both would read to WhatsApp as a general-purpose assistant.

The line goes from the number they wrote to (bot.channel.outbound answers from there: its 24 h
window is the one open). It sits after opt-out (STOP works on either number) and safety (a
child's distress is answered wherever it arrives), before anything else. A guest on the pro
number is told the students' number too: a number becomes pro by the operator's `users set-mode`.
"""

from __future__ import annotations

from bot.channel.context import Incoming


def _bare(address: str) -> str:
    return address.removeprefix("whatsapp:").strip()


def right_number(msg: Incoming) -> str | None:
    """The number of ours this user should write to, when they wrote to the other one; else None."""
    settings = msg.services.settings
    students, pro = _bare(settings.twilio_whatsapp_from), _bare(settings.twilio_whatsapp_from_pro)
    if msg.channel != "whatsapp" or not pro or not students or pro == students:
        return None
    to = _bare(msg.inbound.to_addr or "")
    is_pro = msg.user.mode == "pro"
    if to == students and is_pro:
        return pro
    if to == pro and not is_pro:
        return students
    return None


def notice(msg: Incoming, number: str) -> str:
    link = f"https://wa.me/{number.lstrip('+')}"
    if number == _bare(msg.services.settings.twilio_whatsapp_from_pro):
        fr = f"Ce numéro est celui du tuteur des élèves. L'assistant pro répond au {number} : {link}"
        return msg.t(fr, f"This number is the students' tutor. Your pro assistant answers on {number}: "
                         f"{link}")
    return msg.t(f"Ce numéro est réservé aux comptes pro. Le tuteur des élèves répond au {number} : {link}",
                 f"This number is for pro accounts only. The students' tutor answers on {number}: {link}")


async def handle(msg: Incoming) -> bool:
    number = right_number(msg)
    if number is None:
        return False
    # Committed first: the send records its row in its own session (SQLite has one writer).
    await msg.db.commit()
    await msg.reply(notice(msg, number))
    return True
