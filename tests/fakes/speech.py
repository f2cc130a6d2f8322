"""Local OpenAI-compatible audio servers: `POST /audio/transcriptions` and `POST /audio/speech`.

They speak the real wire formats: the transcription endpoint reads a multipart form (`file`,
`model`, `language`, `response_format`), refuses file types OpenAI refuses (HTTP 400, "Invalid
file format"), and answers `{"text": …}`; the speech endpoint reads JSON (`model`, `input`,
`voice`, `response_format`) and answers real MP3 audio (made with ffmpeg). Tests script the
transcripts or failures and read what was received.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, web

# The extensions OpenAI's transcription endpoint accepts.
ACCEPTED = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")


@dataclass
class Transcription:
    fields: dict[str, str]
    filename: str
    content_type: str
    data: bytes
    headers: dict[str, str] = field(default_factory=dict)


async def sine_audio(seconds: float, fmt: str = "mp3", frequency: int = 440) -> bytes:
    """Real audio of a tone, in `fmt` (mp3, ogg with Opus, wav, adts for AAC), made by ffmpeg."""
    codec = {"mp3": ["-c:a", "libmp3lame"], "ogg": ["-c:a", "libopus"], "wav": [],
             "adts": ["-c:a", "aac"]}.get(fmt, [])
    tone = f"sine=frequency={frequency}:duration={seconds}"
    proc = await asyncio.create_subprocess_exec(
        "ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", tone,
        "-ac", "1", *codec, "-f", fmt, "pipe:1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"ffmpeg could not make {fmt} audio: {err.decode()[-300:]}")
    return out


class FakeSpeech:
    def __init__(self) -> None:
        self.transcripts: deque[str | tuple[int, str]] = deque()  # text, or (status, body)
        self.transcriptions: list[Transcription] = []
        self.speech_requests: list[dict[str, Any]] = []
        self.speech_headers: list[dict[str, str]] = []
        self.speech_failures: deque[int] = deque()
        self.default_text = "Bonjour"
        self._runner: web.AppRunner | None = None
        self.url = ""

    # --- scripting ---------------------------------------------------------------------------
    def push_transcript(self, text: str) -> None:
        self.transcripts.append(text)

    def push_transcription_error(self, status: int, message: str = "server error") -> None:
        self.transcripts.append((status, json.dumps({"error": {"message": message, "type": "server_error"}})))

    # --- server ------------------------------------------------------------------------------
    async def _transcriptions(self, request: web.Request) -> web.Response:
        if not request.content_type.startswith("multipart/form-data"):
            return _error(400, "Could not parse multipart form")
        fields: dict[str, str] = {}
        upload: tuple[str, str, bytes] | None = None
        async for part in await request.multipart():
            assert isinstance(part, BodyPartReader), "a flat form: no nested multipart"
            if part.name == "file":
                upload = (part.filename or "", part.headers.get("Content-Type", ""), await part.read())
            elif part.name:
                fields[part.name] = await part.text()
        if upload is None:
            return _error(400, "you must provide a 'file' field")
        if "model" not in fields:
            return _error(400, "you must provide a model parameter")
        name, content_type, data = upload
        self.transcriptions.append(Transcription(fields, name, content_type, data, dict(request.headers)))
        if name.rsplit(".", 1)[-1].lower() not in ACCEPTED:
            return _error(400, f"Invalid file format. Supported formats: {list(ACCEPTED)}")
        scripted = self.transcripts.popleft() if self.transcripts else self.default_text
        if isinstance(scripted, tuple):
            status, body = scripted
            return web.Response(status=status, text=body, content_type="application/json")
        if fields.get("response_format") == "text":
            return web.Response(text=scripted + "\n", content_type="text/plain")
        return web.json_response({"text": scripted})

    async def _speech(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "We could not parse the JSON body of your request.")
        self.speech_requests.append(body)
        self.speech_headers.append(dict(request.headers))
        for name in ("model", "input", "voice"):
            if not body.get(name):
                return _error(400, f"Missing required parameter: '{name}'.")
        if self.speech_failures:
            return _error(self.speech_failures.popleft(), "speech failed")
        fmt = body.get("response_format") or "mp3"
        if fmt not in ("mp3", "opus", "wav"):
            return _error(400, f"unsupported response_format {fmt!r} in this stand-in")
        seconds = min(5.0, 0.5 + len(body["input"]) / 60)
        audio = await sine_audio(seconds, "ogg" if fmt == "opus" else fmt)
        mime = {"mp3": "audio/mpeg", "opus": "audio/ogg", "wav": "audio/wav"}[fmt]
        return web.Response(body=audio, content_type=mime)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        app = web.Application(client_max_size=30 * 1024 * 1024)
        for prefix in ("", "/v1"):
            app.router.add_post(f"{prefix}/audio/transcriptions", self._transcriptions)
            app.router.add_post(f"{prefix}/audio/speech", self._speech)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        sockets = site._server.sockets  # type: ignore[union-attr]
        self.url = f"http://{host}:{sockets[0].getsockname()[1]}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    return web.json_response(body, status=status)
