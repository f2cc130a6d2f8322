"""Voice notes heard and replies spoken, through OpenAI-compatible audio APIs, with ffmpeg between.

Hearing: `POST {TRANSCRIBE_BASE_URL}/audio/transcriptions` (multipart `file`, `model`, `language`)
answers `{"text": ...}`. Formats the API does not take (AMR, 3GP, AAC from older phones) are
converted to OGG/Opus first. The transcript becomes the message's text for every handler, and the
first reply starts with what was heard. Speaking: `POST {TTS_BASE_URL}/audio/speech` (JSON `model`,
`input`, `voice`) returns audio that ffmpeg turns into OGG/Opus, which WhatsApp plays as a voice note.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bot import credentials, library
from bot.agent import vision
from bot.billing import credits
from bot.channel.context import Incoming
from bot.media.errors import MediaError
from bot.storage.models import UserFile
from bot.texts import fr_en

log = logging.getLogger(__name__)

# What OpenAI's transcription API takes as it is; anything else goes through ffmpeg first.
API_AUDIO = {
    "audio/ogg": "ogg", "audio/opus": "ogg", "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/mp4": "m4a",
    "audio/x-m4a": "m4a", "audio/m4a": "m4a", "video/mp4": "mp4", "audio/wav": "wav", "audio/x-wav": "wav",
    "audio/wave": "wav", "audio/webm": "webm", "audio/flac": "flac",
}
FFMPEG_TIMEOUT_S = 60.0
HEARD_MAX_CHARS = 60
SPOKEN_MAX_CHARS = 4096  # the speech API's limit on `input`
_SPOKEN_NUMBERS = {
    "UN": "1", "UNE": "1", "DEUX": "2", "TROIS": "3", "QUATRE": "4", "CINQ": "5", "SIX": "6",
    "SEPT": "7", "HUIT": "8", "NEUF": "9", "DIX": "10", "ONE": "1", "TWO": "2", "THREE": "3",
    "FOUR": "4", "FIVE": "5", "SEVEN": "7", "EIGHT": "8", "NINE": "9", "TEN": "10",
}
_NUMBER_LEAD = re.compile(r"^(?:LA |LE |NUMERO |NUMBER |REPONSE |ANSWER )")


class SpeechError(MediaError):
    """`kind`: too_long | unreadable | failed | unavailable."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


@dataclass
class Transcript:
    text: str
    seconds: float


def is_audio(mime: str | None) -> bool:
    return (mime or "").split(";")[0].strip().lower().startswith("audio/")


def ffmpeg_missing() -> str | None:
    """Why audio cannot be converted or measured here (None when it can)."""
    missing = [tool for tool in ("ffmpeg", "ffprobe") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not installed (apt-get install ffmpeg)" if missing else None


def log_availability(settings: Any) -> list[str]:
    """Called at start-up: says what is missing for photos and voice notes, and what is then not offered."""
    problems: list[str] = []
    reason = vision.ocr_available()
    if reason:
        problems.append(reason)
        log.warning("photos are not read as text: %s; with LLM_VISION=off or a model that refuses "
                    "images, a photo reaches the model as its file name only", reason)
    elif "fra" not in vision.ocr_languages():
        problems.append("tesseract-ocr-fra missing")
        log.warning("French OCR data is missing (apt-get install tesseract-ocr-fra): photos are read as "
                    "English text only")
    reason = ffmpeg_missing()
    if reason:
        problems.append(reason)
        log.warning("voice notes are not transcribed and VOCAL spoken replies are not offered: %s", reason)
    if not settings.llm_vision:
        log.info("LLM_VISION=off: photos reach the model as the text OCR reads on them")
    return problems


async def _run(args: list[str], timeout_s: float = FFMPEG_TIMEOUT_S) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        *args, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise SpeechError("failed", f"{args[0]} took too long") from None
    if proc.returncode != 0:
        raise SpeechError("unreadable", f"{args[0]}: {err.decode('utf-8', 'replace')[-300:]}")
    return out


async def duration_seconds(data: bytes) -> float:
    """How long the audio lasts, by ffprobe; SpeechError("unreadable") when it is not audio."""
    with tempfile.TemporaryDirectory(prefix="deblo-audio-") as tmp:
        path = Path(tmp) / "in"
        path.write_bytes(data)
        out = await _run(["ffprobe", "-v", "error", "-show_entries", "format=duration",
                          "-of", "default=noprint_wrappers=1:nokey=1", str(path)])
    try:
        return float(out.decode().strip())
    except ValueError:
        raise SpeechError("unreadable", "no duration") from None


async def to_ogg_opus(data: bytes) -> bytes:
    """Any audio ffmpeg reads, as mono OGG/Opus (WhatsApp's voice-note format)."""
    with tempfile.TemporaryDirectory(prefix="deblo-audio-") as tmp:
        src, dst = Path(tmp) / "in", Path(tmp) / "out.ogg"
        src.write_bytes(data)
        await _run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(src), "-vn", "-ac", "1",
                    "-c:a", "libopus", "-b:a", "32k", "-f", "ogg", str(dst)])
        return dst.read_bytes()


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


async def transcribe(services: Any, data: bytes, mime: str, language: str) -> Transcript:
    """The words of a voice note; SpeechError when too long, unreadable, or the API fails."""
    settings = services.settings
    reason = ffmpeg_missing()
    if reason:
        raise SpeechError("unavailable", reason)
    seconds = await duration_seconds(data)
    if seconds > settings.transcribe_max_seconds:
        raise SpeechError("too_long", f"{seconds:.0f} s")
    mime = (mime or "").split(";")[0].strip().lower()
    ext = API_AUDIO.get(mime)
    if ext is None:
        data, mime, ext = await to_ogg_opus(data), "audio/ogg", "ogg"
    url = settings.transcribe_base_url.rstrip("/") + "/audio/transcriptions"
    fields = {"model": settings.transcribe_model, "language": fr_en(language, "fr", "en"),
              "response_format": "json"}
    try:
        resp = await services.http.post(
            url, data=fields, files={"file": (f"voice.{ext}", data, mime)},
            headers=_auth(settings.transcribe_api_key), timeout=settings.speech_timeout_s,
        )
    except httpx.HTTPError as exc:
        raise SpeechError("failed", f"transcription request: {exc!r}") from exc
    if resp.status_code in (401, 403):
        credentials.refused("transcription", "TRANSCRIBE_API_KEY", f"HTTP {resp.status_code}")
    if resp.status_code != 200:
        raise SpeechError("failed", f"transcription HTTP {resp.status_code}: {resp.text[:200]}")
    try:
        text = str(resp.json().get("text") or "").strip()
    except (ValueError, AttributeError):
        raise SpeechError("failed", "transcription answer is not JSON with a text") from None
    if not text:
        raise SpeechError("unreadable", "nothing heard")
    return Transcript(text, seconds)


async def synthesize(services: Any, text: str) -> bytes:
    """`text` spoken, as OGG/Opus bytes; SpeechError when the API or ffmpeg fails."""
    settings = services.settings
    reason = ffmpeg_missing()
    if reason:
        raise SpeechError("unavailable", reason)
    url = settings.tts_base_url.rstrip("/") + "/audio/speech"
    body = {"model": settings.tts_model, "input": text[:SPOKEN_MAX_CHARS], "voice": settings.tts_voice,
            "response_format": "mp3"}
    try:
        resp = await services.http.post(url, json=body, headers=_auth(settings.tts_api_key),
                                        timeout=settings.speech_timeout_s)
    except httpx.HTTPError as exc:
        raise SpeechError("failed", f"speech request: {exc!r}") from exc
    if resp.status_code in (401, 403):
        credentials.refused("speech", "TTS_API_KEY", f"HTTP {resp.status_code}")
    if resp.status_code != 200 or not resp.content:
        raise SpeechError("failed", f"speech HTTP {resp.status_code}: {resp.text[:200]}")
    # Whatever the provider returned (mp3, or opus in another container), WhatsApp wants OGG/Opus.
    return await to_ogg_opus(resp.content)


def heard_prefix(text: str) -> str:
    """« 🎤 « aide-moi avec les fractions… » »: what was heard, shortened, to open the reply."""
    flat = " ".join(text.split())
    if len(flat) > HEARD_MAX_CHARS:
        cut = flat[:HEARD_MAX_CHARS].rsplit(" ", 1)[0] or flat[:HEARD_MAX_CHARS]
        flat = cut.rstrip(" ,;:.") + "…"
    return f"🎤 « {flat} »"


def as_message_text(transcript: str) -> str:
    """The transcript as handlers read it: a lone spoken number (« deux ») becomes the digit, so
    that it answers a pending quiz or menu as a typed « 2 » would."""
    plain = "".join(ch for ch in unicodedata.normalize("NFKD", transcript) if not unicodedata.combining(ch))
    word = _NUMBER_LEAD.sub("", " ".join(re.sub(r"[.!?,;:…«»\"]+", " ", plain).split()).upper())
    return _SPOKEN_NUMBERS.get(word, transcript)


def _failure_text(msg: Incoming, kind: str) -> str:
    limit = msg.services.settings.transcribe_max_seconds
    if kind == "too_long":
        return msg.t(
            f"Cette note vocale est trop longue pour moi (plus de {limit} secondes). Merci d'écrire la "
            "question, ou d'envoyer une note plus courte. Je la garde dans les fichiers.",
            f"Your voice note is too long for me (over {limit} seconds). Could you type your question, "
            "or send a shorter note? I keep it in your files.",
        )
    if kind == "unreadable":
        return msg.t(
            "Je n'ai pas réussi à comprendre cette note vocale. Merci d'écrire la question, ou de la "
            "renvoyer en parlant plus près du téléphone. Je la garde dans les fichiers.",
            "I could not make out your voice note. Could you type your question, or send it again "
            "speaking closer to the phone? I keep it in your files.",
        )
    return msg.t(
        "Je n'ai pas pu écouter cette note vocale pour le moment. Merci d'écrire la question, ou de la "
        "renvoyer dans un instant. Je la garde dans les fichiers.",
        "I could not listen to your voice note right now. Could you type your question, or send it "
        "again in a moment? I keep it in your files.",
    )


async def _charge(msg: Incoming, reason: str, due: int, ref: str) -> int:
    """Charges a non-guest `due` credits once per `ref`, down to the turn's floor, and counts them
    into the user's day (bot.billing.credits.charge_media); what was taken."""
    services = msg.services
    daily = credits.daily_tokens(services.state, services.settings, msg.user, services.clock())
    return await credits.charge_media(msg.db, msg.user, services.settings, reason, due, ref, daily,
                                      services.clock)


async def hear(msg: Incoming) -> None:
    """Transcribes the voice notes of the message: their words become `msg.text` for every handler.

    A note that cannot be heard is said so to the user; the file stays in their library either way.
    """
    files: list[UserFile] = list(msg.extra.get("files") or [])
    notes = [f for f in files if is_audio(f.mime)]
    if not notes:
        return
    settings = msg.services.settings
    if (msg.user.mode or "guest") != "guest" and await credits.balance(msg.db, msg.user.id) <= 0:
        return  # the agent turn tells the user why nothing more happens
    msg.extra["files"] = [f for f in files if not is_audio(f.mime)]
    heard: list[Transcript] = []
    for index, row in enumerate(notes):
        try:
            data = await msg.services.files.get(row.storage_key)
            result = await transcribe(msg.services, data, row.mime, msg.lang)
        except SpeechError as exc:
            log.warning("voice note not heard", extra={"file_id": row.id, "error": str(exc)})
            msg.extra["voice_failed"] = True
            if not msg.user.opted_out:  # after STOP nothing is sent, not even this
                await msg.reply(_failure_text(msg, exc.kind), kind="system")
            continue
        row.text = result.text  # the library's search finds the note by its words
        await library.index_file(msg.services, msg.db, row)
        heard.append(result)
        due = -(-int(result.seconds + 0.999) // settings.audio_seconds_per_credit)
        # Keyed on the message: a retried delivery of it is not charged twice.
        key = f"{msg.inbound.id}:{index}" if msg.inbound is not None else f"file:{row.id}"
        charged = await _charge(msg, "audio_input", due, f"audio:{key}")
        usage = msg.extra.setdefault("media_usage", {})
        usage["audio_seconds"] = round(usage.get("audio_seconds", 0) + result.seconds, 1)
        usage["audio_credits"] = usage.get("audio_credits", 0) + charged
    if not heard:
        return
    await msg.db.commit()
    transcript = " ".join(h.text for h in heard)
    spoken = as_message_text(transcript)
    msg.text = f"{msg.text}\n{spoken}" if msg.text else spoken
    msg.extra["heard"] = transcript
    msg.extra["reply_prefix"] = heard_prefix(transcript)


async def reply_spoken(msg: Incoming, text: str) -> int:
    """Sends `text` with a voice note of it (WhatsApp); the text alone when speech fails.

    Returns the characters spoken (0 when no voice note went out with the text)."""
    from bot.media import received as media

    try:
        audio = await synthesize(msg.services, text)
    except SpeechError as exc:
        log.warning("reply not spoken", extra={"error": str(exc)})
        await msg.reply(text)
        return 0
    stamp = msg.services.clock().strftime("%Y%m%d-%H%M%S")
    row = await media.store(msg.services, msg.db, msg.user.id, f"vocal-{stamp}.ogg", "audio/ogg", audio,
                            origin="generated")
    await msg.db.commit()
    await msg.reply(text, media=row)
    chars = len(text[:SPOKEN_MAX_CHARS])
    due = -(-chars // msg.services.settings.speech_chars_per_credit)
    charged = await _charge(msg, "speech_output", due, f"speech:{row.id}")
    await msg.db.commit()
    usage = msg.extra.setdefault("media_usage", {})
    usage["speech_chars"] = usage.get("speech_chars", 0) + chars
    usage["speech_credits"] = usage.get("speech_credits", 0) + charged
    return chars
