"""Shared state: a key-value store with TTL, a queue of users with work, and per-user locks.

Two implementations of one interface: `MemoryState` for single-process mode (no REDIS_URL) and
`RedisState` when several processes share the work. The database stays the source of truth for
messages; the queue only says "this user has pending work", so losing a queue entry delays work
(the sweeper finds it again) but never loses it.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from typing import Protocol

import redis.asyncio as aioredis
import redis.exceptions

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
    async def incr(self, key: str, ttl_s: float) -> int: ...
    async def push_user(self, user_id: int) -> None: ...
    async def pop_user(self, timeout_s: float) -> int | None: ...
    async def acquire(self, key: str, ttl_s: float) -> str | None: ...
    async def renew(self, key: str, token: str, ttl_s: float) -> bool: ...
    async def release(self, key: str, token: str) -> None: ...
    async def ping(self) -> bool: ...
    async def close(self) -> None: ...


class MemoryState:
    """Everything in this process. `clock` is monotonic seconds, replaceable in tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._kv: dict[str, tuple[str, float | None]] = {}
        self._queue: asyncio.Queue[int] = asyncio.Queue()

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

    async def incr(self, key: str, ttl_s: float) -> int:
        current = self._alive(key)
        if current is None:
            await self.kv_set(key, "1", ttl_s)
            return 1
        value = int(current) + 1
        self._kv[key] = (str(value), self._kv[key][1])
        return value

    async def push_user(self, user_id: int) -> None:
        self._queue.put_nowait(user_id)

    async def pop_user(self, timeout_s: float) -> int | None:
        try:
            return await asyncio.wait_for(self._queue.get(), timeout_s)
        except TimeoutError:
            return None

    async def acquire(self, key: str, ttl_s: float) -> str | None:
        token = secrets.token_hex(8)
        return token if await self.set_if_absent(key, token, ttl_s) else None

    async def renew(self, key: str, token: str, ttl_s: float) -> bool:
        if self._alive(key) != token:
            return False
        await self.kv_set(key, token, ttl_s)
        return True

    async def release(self, key: str, token: str) -> None:
        if self._alive(key) == token:
            del self._kv[key]

    async def ping(self) -> bool:
        return True

    async def close(self) -> None:
        return None


# Compare-and-delete / compare-and-extend: a lock is only touched by the worker that holds it.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
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

    async def kv_get(self, key: str) -> str | None:
        return await self.redis.get(self.prefix + key)

    async def kv_set(self, key: str, value: str, ttl_s: float | None = None) -> None:
        px = None if ttl_s is None else max(1, int(ttl_s * 1000))
        await self.redis.set(self.prefix + key, value, px=px)

    async def kv_delete(self, key: str) -> None:
        await self.redis.delete(self.prefix + key)

    async def set_if_absent(self, key: str, value: str, ttl_s: float) -> bool:
        return bool(await self.redis.set(self.prefix + key, value, nx=True, px=max(1, int(ttl_s * 1000))))

    async def incr(self, key: str, ttl_s: float) -> int:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incr(self.prefix + key)
            pipe.pexpire(self.prefix + key, max(1, int(ttl_s * 1000)), nx=True)
            value, _ = await pipe.execute()
        return int(value)

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
        await self.redis.aclose()


def make_state(redis_url: str | None, prefix: str = KEY_PREFIX) -> State:
    return RedisState(redis_url, prefix) if redis_url else MemoryState()
