"""Twilio's Messages API through the twilio library's async client.

Retries are ours, not the library's: its `max_retries` resends a POST after a 5xx, and a 5xx on
`messages.create` may mean the message was sent anyway (the API has no idempotency key). So:
429 / 20429 and refused connections are retried with backoff (nothing was sent); an ambiguous
failure (5xx, connection dropped after the request left, timeout) is resolved by looking the
message up before sending again.

Each attempt first waits for its sender's next moment (bot.channel.pacing, TWILIO_SENDER_MPS), and
for no longer than the caller allows (`max_wait_s`: what is left of SEND_MAX_AGE_S); past that the
message is dropped unsent (`SendExpired`). The backoff after a 20429 sleeps on the pacer's seam.
What is still left of that time goes with the message as its `ValidityPeriod` (whole seconds,
1 to 36,000): Twilio keeps a message in its own queue up to 10 h otherwise, and a reminder for 08:00
held there must fail (status `failed`, error 30036) rather than arrive at noon.

The typing indicator (WhatsApp, Twilio's public beta) is best effort: sent in the background, any
failure logged at info and ignored; the reply never waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
from twilio.base.exceptions import TwilioRestException
from twilio.http.async_http_client import AsyncTwilioHttpClient
from twilio.rest import Client

from bot import credentials, metrics
from bot.channel.formatting import sms_segments
from bot.channel.pacing import Pacer, SenderRates, channel_of
from bot.config import TWILIO_DEFAULT_API, Settings
from bot.storage.state import State

log = logging.getLogger("bot.twilio")

VALIDITY_MAX_S = 36_000  # Twilio's bounds for ValidityPeriod: 1 s to 10 h (errors 21624, 90007)


def _validity(left_s: float) -> dict[str, int]:
    """The `validity_period` argument for a message that may wait `left_s` more seconds (none when
    it may wait for ever: Twilio's own default then holds)."""
    if math.isinf(left_s):
        return {}
    return {"validity_period": max(1, min(VALIDITY_MAX_S, int(left_s)))}

# The indicator shows for 25 s at most: one that takes longer than this to be accepted is of no use.
TYPING_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class SentMessage:
    sid: str
    status: str


class TwilioSendError(Exception):
    """A send that failed for good. `ambiguous` means Twilio may still have sent it."""

    def __init__(self, message: str, *, status: int | None = None, code: int | None = None,
                 ambiguous: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.ambiguous = ambiguous


class TwilioNotConfigured(TwilioSendError):
    pass


class SendExpired(TwilioSendError):
    """Not handed to Twilio: its sender's next moment comes after the message's SEND_MAX_AGE_S."""


def _is_rate_limited(exc: TwilioRestException) -> bool:
    status: int = exc.status
    code: int | None = exc.code
    return status == 429 or code == 20429


class TwilioClient:
    def __init__(self, settings: Settings, *, state: State | None = None, pacer: Pacer | None = None) -> None:
        self.settings = settings
        # Shared with every process through `state` (Redis), else this process's own schedule.
        self.pacer = pacer or Pacer(state, SenderRates(settings.twilio_sender_mps))
        self._client: Client | None = None
        self._http: AsyncTwilioHttpClient | None = None
        self._typing: set[asyncio.Task[bool]] = set()  # indicators under way (kept from the GC)

    @property
    def configured(self) -> bool:
        return bool(self.settings.twilio_account_sid and self.settings.twilio_auth_token)

    def _get(self) -> Client:
        # Built lazily: the aiohttp session inside must be created within the running event loop.
        if self._client is None:
            if not self.configured:
                raise TwilioNotConfigured("TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN are not set")
            self._http = AsyncTwilioHttpClient(timeout=self.settings.twilio_timeout_s)
            client = Client(
                self.settings.twilio_account_sid,
                self.settings.twilio_auth_token,
                http_client=self._http,
                environment={},  # TWILIO_EDGE / TWILIO_REGION would rewrite the host
            )
            base = self.settings.twilio_api_base_url
            if base and base != TWILIO_DEFAULT_API:
                client.api.base_url = base
                # The typing indicator's API lives on messaging.twilio.com; a test server serves both.
                client.messaging.base_url = base
            self._client = client
        return self._client

    def warm(self) -> None:
        """Builds the client and imports the REST modules a send and the typing indicator use, which
        the library imports at their first use (0.1 s of a worker's first reply). Sends nothing."""
        if not self.configured:
            return
        client = self._get()
        _ = client.messages, client.messaging.v2.typing_indicator

    async def create_message(self, fields: dict[str, Any], *, max_wait_s: float = math.inf) -> SentMessage:
        """Sends one message. `fields` uses the library's names (to, from_, body, media_url, …).
        Each attempt waits for the sender's moment, all of them together at most `max_wait_s`."""
        client = self._get()
        attempts = max(1, self.settings.twilio_send_attempts)
        started = datetime.now(UTC)
        sender = str(fields.get("from_") or "")
        # A long code's pace is in segments: a 3-segment SMS takes 3 moments.
        units = 1 if channel_of(sender) == "whatsapp" else sms_segments(str(fields.get("body") or ""))[1]
        waited_from = self.pacer.clock()
        last_error: TwilioSendError | None = None
        for attempt in range(attempts):
            if attempt:
                await self.pacer.sleep(self._backoff(attempt))
            left = max_wait_s - (self.pacer.clock() - waited_from)
            if not await self.pacer.wait(sender, left, units):
                raise SendExpired(f"expired: {sender} has no moment free within SEND_MAX_AGE_S "
                                  f"({max(0.0, left):.0f} s were left)")
            left = max_wait_s - (self.pacer.clock() - waited_from)
            try:
                msg = await client.messages.create_async(**fields, **_validity(left))
                return SentMessage(sid=str(msg.sid), status=str(msg.status or "queued"))
            except TwilioRestException as exc:
                if _is_rate_limited(exc):
                    metrics.TWILIO_RATE_LIMITED.labels(channel_of(sender)).inc()
                    log.warning("twilio rate limited", extra={"attempt": attempt + 1, "code": exc.code})
                    last_error = TwilioSendError(str(exc.msg), status=exc.status, code=exc.code)
                    continue
                if exc.status in (401, 403) or exc.code == 20003:
                    credentials.refused("Twilio", "TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN",
                                        f"HTTP {exc.status}, error {exc.code}: {exc.msg}")
                if exc.status >= 500:
                    last_error = TwilioSendError(
                        str(exc.msg), status=exc.status, code=exc.code, ambiguous=True
                    )
                else:
                    raise TwilioSendError(str(exc.msg), status=exc.status, code=exc.code) from exc
            except aiohttp.ClientConnectorError as exc:
                # Refused before anything was sent: safe to try again.
                log.warning("twilio connect failed", extra={"attempt": attempt + 1, "error": str(exc)})
                last_error = TwilioSendError(f"cannot connect to Twilio: {exc}")
                continue
            except (aiohttp.ClientError, TimeoutError) as exc:
                last_error = TwilioSendError(f"Twilio connection lost: {exc!r}", ambiguous=True)
            # Ambiguous: Twilio may have created the message. Look before sending again.
            log.warning("twilio send ambiguous, checking", extra={"attempt": attempt + 1})
            found = await self._find_sent(fields, started)
            if found is not None:
                return found
        assert last_error is not None
        raise last_error

    def _backoff(self, attempt: int) -> float:
        base = self.settings.twilio_backoff_s * (2.0 ** (attempt - 1))
        return base + random.uniform(0, base / 2)

    async def find_sent(self, fields: dict[str, Any], since: datetime) -> SentMessage | None:
        """The message with these fields sent since `since`, if Twilio has one (best effort)."""
        if not self.configured:
            return None
        return await self._find_sent(fields, since)

    async def _find_sent(self, fields: dict[str, Any], since: datetime) -> SentMessage | None:
        try:
            recent = await self._get().messages.list_async(
                to=fields.get("to"), from_=fields.get("from_"),
                date_sent_after=since - timedelta(days=1), limit=50,
            )
        except Exception as exc:  # the lookup is best effort; failing it means "not found"
            log.warning("twilio lookup failed", extra={"error": repr(exc)})
            return None
        body = fields.get("body") or ""
        for msg in recent:
            created = getattr(msg, "date_created", None)
            if created is not None and created < since - timedelta(seconds=5):
                continue
            if (msg.body or "") == body or (fields.get("content_sid") and not body):
                return SentMessage(sid=str(msg.sid), status=str(msg.status or "queued"))
        return None

    async def show_typing(self, message_sid: str) -> bool:
        """Shows « typing… » to the WhatsApp user who sent `message_sid` (SM… or MM…) and marks that
        message read, until our reply is delivered or 25 s pass. True when Twilio accepted it; any
        failure (a beta refusing, 4xx, 5xx, timeout) is logged at info and gives False."""
        try:
            async with asyncio.timeout(TYPING_TIMEOUT_S):
                result = await self._get().messaging.v2.typing_indicator.create_async(
                    channel="whatsapp", message_id=message_sid)
            return bool(result.success)
        except TwilioRestException as exc:
            log.info("typing indicator refused", extra={"http_status": exc.status, "code": exc.code})
        except Exception as exc:  # best effort: nothing about it may stop the reply
            log.info("typing indicator failed", extra={"error": repr(exc)[:300]})
        return False

    def show_typing_soon(self, message_sid: str) -> None:
        """`show_typing` in the background: returns at once, never raises."""
        if not self.configured or not message_sid:
            return
        task = asyncio.get_running_loop().create_task(self.show_typing(message_sid))
        self._typing.add(task)
        task.add_done_callback(self._typing.discard)

    async def close(self) -> None:
        for task in list(self._typing):
            task.cancel()
        await asyncio.gather(*self._typing, return_exceptions=True)
        if self._http is not None:
            await self._http.close()
        self._http = None
        self._client = None
