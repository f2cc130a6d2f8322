"""VOCAL / VOICE: answers also come as a voice note, for those who read with difficulty (WhatsApp only).

The word alone toggles; VOCAL OUI / VOICE ON and VOCAL NON / VOICE OFF set it either way.
"""

from __future__ import annotations

from bot.channel.context import Incoming
from bot.channel.keywords import keyword
from bot.media import speech

WORDS = frozenset({"VOCAL", "VOICE"})
ON = frozenset({"ON", "OUI", "YES"})
OFF = frozenset({"OFF", "NON", "NO"})


def _wanted(msg: Incoming) -> bool | None:
    """True/False for the state asked for, None when the message is not this command."""
    parts = keyword(msg.text).split(" ")
    if not parts or parts[0] not in WORDS or len(parts) > 2:
        return None
    if len(parts) == 1:
        return not msg.user.voice_replies
    if parts[1] in ON:
        return True
    if parts[1] in OFF:
        return False
    return None


async def handle(msg: Incoming) -> bool:
    wanted = _wanted(msg)
    if wanted is None:
        return False
    if wanted and msg.channel != "whatsapp":
        await msg.reply(msg.t(
            "Les réponses vocales ne sont proposées que sur WhatsApp. VOCAL sur WhatsApp pour les activer.",
            "Spoken replies are only offered on WhatsApp. Send me VOICE on WhatsApp.",
        ))
        return True
    missing = speech.ffmpeg_missing()
    if wanted and missing:
        await msg.reply(msg.t(
            "Les réponses vocales ne sont pas disponibles pour le moment.",
            "Spoken replies are not available at the moment.",
        ))
        return True
    msg.user.voice_replies = wanted
    await msg.db.commit()
    if wanted:
        await msg.reply(msg.t(
            "🔊 C'est noté : mes réponses arriveront aussi en note vocale. VOCAL pour arrêter.",
            "🔊 Done: my answers will also come as a voice note. Send VOICE to stop.",
        ))
    else:
        await msg.reply(msg.t(
            "C'est noté : mes réponses arriveront seulement en texte. VOCAL pour les réentendre.",
            "Done: my answers will come as text only. Send VOICE to hear them again.",
        ))
    return True
