"""Shared state: a key-value store with TTL, a queue of users with work, and per-user locks.

Two implementations of one interface: `MemoryState` for single-process mode (no REDIS_URL) and
`RedisState` when several processes share the work. The database stays the source of truth for
messages; the queue only says "this user has pending work", so losing a queue entry delays work
(the sweeper finds it again) but never loses it. `RedisState`'s subscriptions share one connection
of their own per process (bot.storage.pubsub), never one of the pool the rest uses.
`MemoryState`'s locks (`acquire`) are lock files of DATA_DIR/locks too (bot.storage.file_locks):
the operator's console is a process of its own, and a user's lock must keep it off the turn
`serve` is running for them.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol, cast

import redis.asyncio as aioredis
import redis.exceptions

from bot.storage.file_locks import FileLocks
from bot.storage.pubsub import ChannelHub

KEY_PREFIX = "deblo:"

# Raised by RedisState while Redis does not answer: the work is retried later, not failed.
UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)


def is_unavailable(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) says the shared state is unreachable right now."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, UNAVAILABLE_ERRORS):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
QUEUE_KEY = KEY_PREFIX + "queue:users"


def lock_key(user_id: int) -> str:
    """The lease of a user's lock: held by the worker running their messages, or by the console."""
    return f"lock:user:{user_id}"


class State(Protocol):
    async def kv_get(self, key: str) -> str | None: ...
    async def kv_set(self, key: str, value: str, ttl_s: float | None = None) -> None: ...
    async def kv_delete(self, key: str) -> None: ...
    async def set_if_absent(self, key: str, value: str, ttl_s: float) -> bool: ...
    async def incr(self, key: str, ttl_s: float, amount: int = 1) -> int: ...
    async def reserve(self, key: str, now_us: int, step_us: int, latest_us: int) -> int | None: ...
    async def push_user(self, user_id: int) -> None: ...
    async def pop_user(self, timeout_s: float) -> int | None: ...
    async def acquire(self, key: str, ttl_s: float) -> str | None: ...
    async def renew(self, key: str, token: str, ttl_s: float) -> bool: ...
    async def release(self, key: str, token: str) -> None: ...
    async def ping(self) -> bool: ...
    async def close(self) -> None: ...
    async def publish(self, channel: str, message: str) -> None: ...
    def subscribe(self, channel: str) -> Subscription: ...


log = logging.getLogger(__name__)


class Subscription:
    """The messages published on one channel while it is open: `async with state.subscribe(ch) as
    sub:`; inside the block every later `publish` reaches it (it has subscribed by then), read with
    `async for message in sub` or `await sub.get(timeout_s)`. Messages are a live feed, not stored:
    what was published before, or while the source was away, is not replayed (the database is the
    record). `closed` turns true when it is closed or its source went away; iteration then ends."""

    def __init__(self, start: Callable[[Subscription], Awaitable[None]],
                 stop: Callable[[], Awaitable[None]]) -> None:
        self._start, self._stop = start, stop
        # Unbounded: a channel carries a few events a second at most, and a reader that falls
        # behind should still see every one of them.
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.closed = False
        self._started = False

    def deliver(self, message: str) -> None:
        if not self.closed:
            self._queue.put_nowait(message)

    def end(self) -> None:
        """No more messages will come (closed, or the source is gone)."""
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)

    async def __aenter__(self) -> Subscription:
        await self._start(self)
        self._started = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self.end()
        if self._started:
            self._started = False
            await self._stop()

    async def get(self, timeout_s: float | None = None) -> str | None:
        """The next message; None after `timeout_s` without one, or once closed."""
        try:
            message = await asyncio.wait_for(self._queue.get(), timeout_s)
        except TimeoutError:
            return None
        if message is None:
            self._queue.put_nowait(None)  # every later get sees the end too
        return message

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> str:
        message = await self.get()
        if message is None:
            raise StopAsyncIteration
        return message


class MemoryState:
    """Everything in this process, but the locks when `lock_dir` is given: those are lock files too,
    held beside the lease. `clock` is monotonic seconds, replaceable in tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, lock_dir: Path | None = None) -> None:
        self._clock = clock
        self._files = FileLocks(lock_dir) if lock_dir is not None else None
        self._kv: dict[str, tuple[str, float | None]] = {}
        self._queue: asyncio.Queue[int] = asyncio.Queue()
        self._subscribers: dict[str, set[Subscription]] = {}

    def _alive(self, key: str) -> str | None:
        item = self._kv.get(key)
        if item is None:
            return None
        value, expires = item
        if expires is not None and expires <= self._clock():
            del self._kv[key]
            return None
        return value

    async def kv_get(self, key: str) -> str | None:
        return self._alive(key)

    async def kv_set(self, key: str, value: str, ttl_s: float | None = None) -> None:
        self._kv[key] = (value, None if ttl_s is None else self._clock() + ttl_s)

    async def kv_delete(self, key: str) -> None:
        self._kv.pop(key, None)

    async def set_if_absent(self, key: str, value: str, ttl_s: float) -> bool:
        if self._alive(key) is not None:
            return False
        await self.kv_set(key, value, ttl_s)
        return True

    async def incr(self, key: str, ttl_s: float, amount: int = 1) -> int:
        current = self._alive(key)
        if current is None:
            await self.kv_set(key, str(amount), ttl_s)
            return amount
        value = int(current) + amount
        self._kv[key] = (str(value), self._kv[key][1])
        return value

    async def reserve(self, key: str, now_us: int, step_us: int, latest_us: int) -> int | None:
        """The next free moment of a schedule (`_RESERVE`'s rule), taken; one event loop, so atomic."""
        free = int(self._alive(key) or 0)
        at = max(now_us, free)
        if at > latest_us:
            return None
        await self.kv_set(key, str(at + step_us), (at + step_us - now_us) / 1e6 + _RESERVE_IDLE_S)
        return at

    async def push_user(self, user_id: int) -> None:
        self._queue.put_nowait(user_id)

    async def pop_user(self, timeout_s: float) -> int | None:
        try:
            return await asyncio.wait_for(self._queue.get(), timeout_s)
        except TimeoutError:
            return None

    async def acquire(self, key: str, ttl_s: float) -> str | None:
        if self._alive(key) is not None:
            return None
        if self._files is not None:
            self._files.let_go(key)  # a lease of this process that lapsed: its file went with it
            if not self._files.try_take(key):
                return None  # another process holds it
        token = secrets.token_hex(8)
        await self.kv_set(key, token, ttl_s)
        return token

    async def renew(self, key: str, token: str, ttl_s: float) -> bool:
        if self._alive(key) != token or (self._files is not None and not self._files.holds(key)):
            return False
        await self.kv_set(key, token, ttl_s)
        return True

    async def release(self, key: str, token: str) -> None:
        current = self._alive(key)
        if current == token:
            del self._kv[key]
        if current in (token, None) and self._files is not None:
            self._files.let_go(key)  # not while a newer holder of this process has it

    async def ping(self) -> bool:
        return True

    async def close(self) -> None:
        if self._files is not None:
            self._files.close()
        # Readers still open learn that nothing more will come (a live page ends its stream).
        for subs in self._subscribers.values():
            for sub in subs:
                sub.end()

    async def publish(self, channel: str, message: str) -> None:
        for sub in list(self._subscribers.get(channel, ())):
            sub.deliver(message)

    def subscribe(self, channel: str) -> Subscription:
        subscribers = self._subscribers

        async def start(sub: Subscription) -> None:
            subscribers.setdefault(channel, set()).add(sub)

        async def stop() -> None:
            listening = subscribers.get(channel, set())
            listening.discard(sub)
            if not listening:
                subscribers.pop(channel, None)

        sub = Subscription(start, stop)
        return sub


# Compare-and-delete / compare-and-extend: a lock is only touched by the worker that holds it.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
)

# A schedule of moments `step` apart (bot.channel.pacing): the key holds the next free moment, in
# microseconds; a caller takes max(now, free) unless that is past `latest`, and moves free one step
# on. In Lua so that every process reserves from one schedule, atomically. Numbers are doubles in
# Lua: exact for whole microseconds of this century (< 2^53). It lives on for a minute past its
# last moment, so an idle sender leaves nothing behind.
_RESERVE_IDLE_S = 60.0
_RESERVE = (
    "local now = tonumber(ARGV[1]) local step = tonumber(ARGV[2]) local latest = tonumber(ARGV[3]) "
    "local at = math.max(now, tonumber(redis.call('get', KEYS[1]) or '0')) "
    "if at > latest then return -1 end "
    "redis.call('set', KEYS[1], string.format('%.0f', at + step), 'px', "
    "string.format('%.0f', (at + step - now) / 1000 + ARGV[4])) "
    "return at"
)


class RedisState:
    def __init__(self, url: str, prefix: str = KEY_PREFIX) -> None:
        # A prefix per deployment (or per test) keeps several of them apart on one Redis.
        self.prefix = prefix
        self.queue_key = prefix + "queue:users"
        # A blocking pool: under a burst (webhooks pushing, workers waiting in BLPOP) a caller waits
        # for a free connection instead of failing with "Too many connections".
        pool = aioredis.BlockingConnectionPool.from_url(
            url, decode_responses=True, socket_connect_timeout=5, health_check_interval=30,
            max_connections=512, timeout=10,
        )
        self.redis: aioredis.Redis = aioredis.Redis.from_pool(pool)
        self.hub = ChannelHub(url, prefix)  # subscriptions: one connection of their own

    async def kv_get(self, key: str) -> str | None:
        # decode_responses=True: the client answers text, which redis-py's types cannot tell.
        return cast(str | None, await self.redis.get(self.prefix + key))

    async def kv_set(self, key: str, value: str, ttl_s: float | None = None) -> None:
        px = None if ttl_s is None else max(1, int(ttl_s * 1000))
        await self.redis.set(self.prefix + key, value, px=px)

    async def kv_delete(self, key: str) -> None:
        await self.redis.delete(self.prefix + key)

    async def set_if_absent(self, key: str, value: str, ttl_s: float) -> bool:
        return bool(await self.redis.set(self.prefix + key, value, nx=True, px=max(1, int(ttl_s * 1000))))

    async def incr(self, key: str, ttl_s: float, amount: int = 1) -> int:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incrby(self.prefix + key, amount)
            pipe.pexpire(self.prefix + key, max(1, int(ttl_s * 1000)), nx=True)
            value, _ = await pipe.execute()
        return int(value)

    async def reserve(self, key: str, now_us: int, step_us: int, latest_us: int) -> int | None:
        at = int(await self.redis.eval(_RESERVE, 1, self.prefix + key, str(now_us), str(step_us),
                                       str(latest_us), str(int(_RESERVE_IDLE_S * 1000))))
        return None if at < 0 else at

    async def push_user(self, user_id: int) -> None:
        await self.redis.rpush(self.queue_key, str(user_id))

    async def pop_user(self, timeout_s: float) -> int | None:
        item = await self.redis.blpop([self.queue_key], timeout=max(timeout_s, 0.01))
        return None if item is None else int(item[1])

    async def acquire(self, key: str, ttl_s: float) -> str | None:
        token = secrets.token_hex(8)
        return token if await self.set_if_absent(key, token, ttl_s) else None

    async def renew(self, key: str, token: str, ttl_s: float) -> bool:
        return bool(await self.redis.eval(_RENEW, 1, self.prefix + key, token, int(ttl_s * 1000)))

    async def release(self, key: str, token: str) -> None:
        await self.redis.eval(_RELEASE, 1, self.prefix + key, token)

    async def ping(self) -> bool:
        try:
            return bool(await self.redis.ping())
        except Exception:
            return False

    async def close(self) -> None:
        await self.hub.close()
        await self.redis.aclose()

    async def publish(self, channel: str, message: str) -> None:
        await self.redis.publish(self.prefix + channel, message)

    def subscribe(self, channel: str) -> Subscription:
        # Every subscription of this process shares the hub's one connection (bot.storage.pubsub).
        hub = self.hub

        async def start(sub: Subscription) -> None:
            await hub.add(channel, sub)

        async def stop() -> None:
            await hub.remove(channel, sub)

        sub = Subscription(start, stop)
        return sub


def make_state(redis_url: str | None, prefix: str = KEY_PREFIX, lock_dir: Path | None = None) -> State:
    """Redis when there is one; else this process's memory, its locks held in `lock_dir` as files."""
    return RedisState(redis_url, prefix) if redis_url else MemoryState(lock_dir=lock_dir)
