"""FUSEAU / TIMEZONE shows the user's time zone; « FUSEAU Douala », « TIMEZONE Africa/Lagos » sets it.

The zone decides when reminders, digests and the daily limits fall (bot.clock.zone). A city is
matched on the last part of the IANA names and on the gazetteer's 5,600 cities (every African
country's and the French-speaking countries' above 15,000 people), accents, case and hyphens ignored
(bot.channel.locale.find_zone); a name that matches none changes nothing and says so, with the
nearest city's name when one is close (« FUSEAU Garuoa »: did you mean Garoua?), unless the message
reads as a question, which goes on to the tutor.
"""

from __future__ import annotations

import asyncio
import re

from bot import clock
from bot.channel.context import Incoming
from bot.channel.locale import find_zone, near_city
from handlers.help import to_audience

_COMMAND = re.compile(r"^\s*(fuseau(?:\s+horaire)?|timezone|time\s+zone)\b\s*[:=]?\s*(.*?)[\s.!?]*$",
                      re.IGNORECASE | re.DOTALL)


def _now_in(msg: Incoming, name: str) -> str:
    local = msg.services.clock().astimezone(clock.zone(name, msg.services.settings.default_timezone))
    return local.strftime("%H:%M")


async def handle(msg: Incoming) -> bool:
    match = _COMMAND.match(msg.text)
    if match is None:
        return False
    wanted = match.group(2).strip()
    current = msg.user.timezone or msg.services.settings.default_timezone
    if not wanted:
        await msg.reply(to_audience(
            msg,
            f"Ton fuseau horaire : {current} (il est {_now_in(msg, current)}). Pour le changer, envoie "
            "FUSEAU suivi de ta ville, par exemple FUSEAU Douala.",
            f"Votre fuseau horaire : {current} (il est {_now_in(msg, current)}). Pour le changer, envoyez "
            "FUSEAU suivi de votre ville, par exemple FUSEAU Douala.",
            f"Your time zone: {current} (it is {_now_in(msg, current)}). To change it, send TIMEZONE and "
            "your city, for example TIMEZONE Lagos.",
        ))
        return True
    zone = await asyncio.to_thread(find_zone, wanted)  # the gazetteer is read at the first use
    if zone is None and ("?" in msg.text or len(wanted.split()) > 3):
        return False  # a question about time zones (« fuseau horaire de Tokyo ? ») is for the tutor
    near = await asyncio.to_thread(near_city, wanted) if zone is None else None  # some 0.15 s
    if near is not None:
        await msg.reply(to_audience(
            msg,
            f"Je ne connais pas « {wanted} ». Tu voulais dire {near.name} ({near.zone}) ? Envoie "
            f"FUSEAU {near.name}. Ton fuseau reste {current}.",
            f"Je ne connais pas « {wanted} ». Vouliez-vous dire {near.name} ({near.zone}) ? Envoyez "
            f"FUSEAU {near.name}. Votre fuseau reste {current}.",
            f"I don't know \"{wanted}\". Did you mean {near.name} ({near.zone})? Send TIMEZONE "
            f"{near.name}. Your time zone stays {current}.",
        ))
        return True
    if zone is None:
        await msg.reply(to_audience(
            msg,
            f"Je ne connais pas le fuseau « {wanted} ». Envoie le nom d'une grande ville proche "
            f"(FUSEAU Dakar, FUSEAU Kinshasa) ou un nom comme Africa/Douala. Ton fuseau reste {current}.",
            f"Je ne connais pas le fuseau « {wanted} ». Envoyez le nom d'une grande ville proche "
            f"(FUSEAU Dakar, FUSEAU Kinshasa) ou un nom comme Africa/Douala. Votre fuseau reste {current}.",
            f"I don't know the time zone \"{wanted}\". Send a nearby big city (TIMEZONE Accra, "
            f"TIMEZONE Nairobi) or a name like Africa/Lagos. Your time zone stays {current}.",
        ))
        return True
    msg.user.timezone = zone
    await msg.db.flush()
    await msg.reply(to_audience(
        msg,
        f"C'est noté : ton fuseau horaire est {zone} (il est {_now_in(msg, zone)}). Tes rappels suivent "
        "cette heure.",
        f"C'est noté : votre fuseau horaire est {zone} (il est {_now_in(msg, zone)}). Vos rappels suivent "
        "cette heure.",
        f"Done: your time zone is {zone} (it is {_now_in(msg, zone)}). Your reminders follow this time.",
    ))
    return True
