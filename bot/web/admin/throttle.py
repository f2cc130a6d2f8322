"""The dashboard's login throttle: it slows down whoever guesses, and never locks the owner out;
and the count of files an operator sends (`take_upload`, at the end).

Failed logins are counted per (e-mail, client) and per client (bot.web.clients: behind
TRUSTED_PROXIES, the browser's own address), never per e-mail alone. A stranger's guesses slow down
that stranger, and the right password from any other client logs in at once, however many guesses
came before it. Each count lets its first attempts through (`free`), then one attempt per delay,
the delay doubling from FIRST_DELAY_S up to MAX_DELAY_S. An attempt that comes early is refused
(429 and how long to wait) without its password being checked, and is not counted.

An attempt is counted before its password is checked, so that parallel guesses cannot all slip in
under a count, and given back when the password was right; the right password also clears its
(e-mail, client) count. The counts live in the shared state (Redis or memory), so they hold across
processes, and expire WINDOW_S after the first attempt they hold. The same work is done whether the
e-mail is an operator's or not: the throttle tells nobody which e-mails exist.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from bot.storage.state import State

PAIR_FREE = 5  # one person mistyping their own password
CLIENT_FREE = 20  # a school behind one address, several people mistyping: a guesser trying e-mails
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 15 * 60.0
WINDOW_S = 60 * 60.0


@dataclass(frozen=True)
class Count:
    """One count of login attempts: its key in the shared state and its free attempts."""

    key: str
    free: int

    @property
    def gate(self) -> str:
        """The key held while the next attempt must wait; its value is when the wait ends."""
        return self.key + ":gate"


def counts(email: str, client: str) -> tuple[Count, Count]:
    """The (e-mail, client) count and the client's. No e-mail is written in the shared state."""
    pair = hashlib.sha256(f"{email}\n{client}".encode()).hexdigest()[:32]
    return Count(f"admin:login:pair:{pair}", PAIR_FREE), Count(f"admin:login:client:{client}", CLIENT_FREE)


def delay_after(attempts: int, free: int) -> float:
    """How long the next attempt waits after `attempts` were counted: nothing within the free ones,
    then FIRST_DELAY_S, doubling with each attempt, at most MAX_DELAY_S."""
    if attempts < free:
        return 0.0
    return min(MAX_DELAY_S, FIRST_DELAY_S * 2.0 ** min(attempts - free, 30))


async def _wait_for(state: State, count: Count, attempts: int) -> float:
    """0 when this attempt may go on (and, past the free ones, the next one's wait begins); else the
    seconds left of the wait it came in."""
    delay = delay_after(attempts, count.free)
    if not delay or await state.set_if_absent(count.gate, str(time.time() + delay), delay):
        return 0.0
    held = await state.kv_get(count.gate)
    return max(1.0, float(held) - time.time()) if held else 1.0


async def take_attempt(state: State, email: str, client: str) -> float:
    """Counts a login attempt; 0 when its password may be checked, else the seconds to wait (and the
    attempt is given back). The (e-mail, client) count is asked first: when the client's refuses
    after it let the attempt through, its wait has begun all the same, which only a client already
    past its free attempts can notice."""
    taken = [(count, await state.incr(count.key, WINDOW_S)) for count in counts(email, client)]
    for count, attempts in taken:
        wait = await _wait_for(state, count, attempts)
        if wait:
            for given_back, _attempts in taken:
                await state.incr(given_back.key, WINDOW_S, amount=-1)
            return wait
    return 0.0


async def logged_in(state: State, email: str, client: str) -> None:
    """The right password: the attempt was no guess. The (e-mail, client) count starts again; the
    client's keeps the other e-mails' failures."""
    pair, client_count = counts(email, client)
    for key in (pair.key, pair.gate):
        await state.kv_delete(key)
    await state.incr(client_count.key, WINDOW_S, amount=-1)


# --- what an operator does: at most so many of one action per window ----------------------------

ACTION_WINDOW_S = 10 * 60.0
ACTION_LIMITS = {
    "fund": 10,  # a class's pool funded: a few per class list, never a loop of clicks
    # A class's items files: each is read and checked whole, so a script sending them in a loop
    # would hold a worker; a person correcting a file sends a few.
    "items": 20,
    "assign": 10,  # homework set to a class texts every student: a stuck button must not do it all day
    # A class's library: each file is read (a scan by OCR) and embedded as it is added.
    "files": 20,
}


async def take_action(state: State, what: str, operator_id: int) -> float:
    """Counts one `what` by an operator; 0 when it may go on, else the seconds to wait (at most the
    window: the count expires ACTION_WINDOW_S after the first action it holds). A refused action is
    given back, so that waiting is enough."""
    key = f"admin:action:{what}:{operator_id}"
    if await state.incr(key, ACTION_WINDOW_S) <= ACTION_LIMITS[what]:
        return 0.0
    await state.incr(key, ACTION_WINDOW_S, amount=-1)
    return ACTION_WINDOW_S
