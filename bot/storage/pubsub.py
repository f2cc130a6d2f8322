"""One Redis pub/sub connection per process, shared by every subscription of that process.

`RedisState.subscribe` hands its subscriptions to a `ChannelHub`: the hub holds a single connection
of its own (its own one-connection client, outside the shared pool that webhooks, workers and the
state use), subscribes to a channel when its first subscription opens and unsubscribes when the
last one closes, and copies what Redis pushes on a channel into each of that channel's
subscriptions. So however many live pages are open, they hold one Redis connection, and they can
never make a webhook wait for a connection of the shared pool.

When the connection is lost every open subscription ends (its reader sees `closed` and may
subscribe again: the next one opens a new connection); nothing published meanwhile is replayed,
as with any subscription (the database is the record).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

import redis.asyncio as aioredis
import redis.exceptions

log = logging.getLogger(__name__)

SUBSCRIBE_CONFIRM_S = 5.0


class Subscription(Protocol):
    """What the hub needs of a subscription (bot.storage.state.Subscription)."""

    def deliver(self, message: str) -> None: ...
    def end(self) -> None: ...


class ChannelHub:
    """The subscriptions of one process to channels under `prefix`, over one connection."""

    def __init__(self, url: str, prefix: str) -> None:
        self.prefix = prefix
        # Its own client with at most one connection: the pub/sub connection is never the shared
        # pool's, and a second one can never be opened by mistake.
        self._client: aioredis.Redis = aioredis.Redis.from_url(
            url, decode_responses=True, socket_connect_timeout=5, health_check_interval=30,
            max_connections=1,
        )
        self._pubsub: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._channels: dict[str, set[Subscription]] = {}
        self._confirmed: dict[str, asyncio.Future[None]] = {}
        self._lock = asyncio.Lock()  # subscribes and unsubscribes go out one at a time, in order

    def listeners(self, channel: str) -> int:
        """Subscriptions of this process open on `channel` (however many, Redis sees one)."""
        return len(self._channels.get(channel, ()))

    async def add(self, channel: str, sub: Subscription) -> None:
        """Opens `sub` on `channel`; once this returns, every later publish on it reaches `sub`."""
        async with self._lock:
            if channel in self._channels:
                self._channels[channel].add(sub)
                return
            if self._pubsub is None:
                self._pubsub = self._client.pubsub()
            confirmed = asyncio.get_running_loop().create_future()
            self._confirmed[self.prefix + channel] = confirmed
            try:
                await self._pubsub.subscribe(self.prefix + channel)
                if self._reader is None or self._reader.done():
                    self._reader = asyncio.create_task(self._read(), name="pubsub-hub")
                # A publish from another connection is only sure to reach this one once Redis
                # has confirmed the SUBSCRIBE (before, it may not have read our command yet).
                await asyncio.wait_for(asyncio.shield(confirmed), SUBSCRIBE_CONFIRM_S)
            except TimeoutError:
                await self._reset()
                raise redis.exceptions.TimeoutError(
                    f"no SUBSCRIBE confirmation within {SUBSCRIBE_CONFIRM_S}s") from None
            except BaseException:
                await self._reset()
                raise
            finally:
                self._confirmed.pop(self.prefix + channel, None)
            self._channels[channel] = {sub}

    async def remove(self, channel: str, sub: Subscription) -> None:
        async with self._lock:
            listening = self._channels.get(channel)
            if listening is None:
                return
            listening.discard(sub)
            if listening:
                return
            del self._channels[channel]
            if self._pubsub is not None:
                try:
                    await self._pubsub.unsubscribe(self.prefix + channel)
                except Exception as exc:  # the connection is gone: its subscriptions went with it
                    log.warning("unsubscribe failed: %r", exc)
                    await self._reset()

    async def _read(self) -> None:
        """Moves what Redis pushes into the subscriptions of its channel, until the connection fails."""
        try:
            while self._pubsub is not None:
                if not self._pubsub.subscribed:
                    # Between the last unsubscribe and the next subscribe there is nothing to read.
                    await asyncio.sleep(0.05)
                    continue
                message = await self._pubsub.get_message(timeout=1.0)
                if message is not None:
                    self._route(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the readers see the end and may subscribe again
            log.warning("pub/sub connection lost: %r", exc)
            for future in self._confirmed.values():
                if not future.done():
                    future.set_exception(redis.exceptions.ConnectionError(str(exc)))
            self._end_all()
            self._reader = None
            with contextlib.suppress(Exception):
                await self._close_pubsub()

    def _route(self, message: dict[str, Any]) -> None:
        channel = str(message.get("channel") or "")
        if message.get("type") == "subscribe":
            future = self._confirmed.get(channel)
            if future is not None and not future.done():
                future.set_result(None)
        elif message.get("type") == "message":
            for sub in list(self._channels.get(channel.removeprefix(self.prefix), ())):
                sub.deliver(message["data"])

    def _end_all(self) -> None:
        channels, self._channels = self._channels, {}
        for subs in channels.values():
            for sub in subs:
                sub.end()

    async def _close_pubsub(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            await pubsub.aclose()

    async def _reset(self) -> None:
        """Drops the connection (and so every subscription on it): the next `add` opens another."""
        reader, self._reader = self._reader, None
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        self._end_all()
        with contextlib.suppress(Exception):
            await self._close_pubsub()

    async def close(self) -> None:
        async with self._lock:
            await self._reset()
        await self._client.aclose()
