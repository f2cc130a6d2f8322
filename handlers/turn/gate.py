"""May this message be served by the model: credits, the guests' allowance, the day's tokens.

The guests' allowance is told at most once per NOTICE_INTERVAL_S per user, and once a day past
USER_DAILY_TOKEN_LIMIT: someone who keeps writing is not sent (and the operator not billed for) the
same text at every message. No credits left (their own, and what their class's pool gives them
today: bot.billing.pool) is answered at every message with the same short text saying what they
can do: silence there read as a broken bot. The messages themselves are kept as received either way.

A child who said distress (bot.safety.gentle: a flag open or raised within a day) is answered
without credits and past the guests' allowance, and told nothing about either: a caring answer
matters more than a credit. The day's token limit still holds (the operator's cost cap), silently.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta

from bot import metrics, safety
from bot.billing import credits, payments, pool
from bot.channel.context import Incoming
from handlers.profile_menu import profile_menu

__all__ = ["DAILY_MIN_TURN_TOKENS", "can_serve", "daily", "guest_limit_text"]

log = logging.getLogger(__name__)

# Below this many tokens left of the user's day a turn is not started: a prompt and a short answer
# take about that much, and a turn that could not make its first call would only say it stops.
DAILY_MIN_TURN_TOKENS = 4000


def _day(now: datetime) -> str:
    return now.strftime("%Y-%m-%d")


async def _notice(msg: Incoming, kind: str, text: str, *, with_profiles: bool = False) -> bool:
    """Sends a refusal notice at most once per NOTICE_INTERVAL_S per user and kind: someone who
    keeps writing is not sent (and the operator not billed for) the same text at every message.
    The messages themselves are kept as received either way. True when it was sent. `with_profiles`:
    the profile choice goes with it as buttons, and becomes the pending menu (the « 1 » the notice
    asks for must choose a profile, not answer an older menu)."""
    services = msg.services
    interval = services.settings.notice_interval_s
    key = f"notice:{kind}:{msg.user.id}"
    now = services.clock()
    if interval > 0:
        last = await services.state.kv_get(key)
        try:
            last_at = datetime.fromisoformat(last) if last else None
        except ValueError:
            last_at = None
        if last_at is not None and timedelta(0) <= now - last_at < timedelta(seconds=interval):
            log.info("notice not repeated", extra={"user_id": msg.user.id, "notice": kind})
            return False
    if with_profiles:
        await msg.reply(kind="notice", menu=replace(await profile_menu(msg), body=text))
    else:
        await msg.reply(text, kind="notice")
    if interval > 0:
        # The time is kept in the value, not left to the key's expiry: the service clock decides.
        await services.state.kv_set(key, now.isoformat(), interval)
    return True


def guest_limit_text(msg: Incoming) -> str:
    """What a guest past the day's free messages is told."""
    settings = msg.services.settings
    limit, gift = settings.guest_daily_messages, settings.signup_credits
    return msg.t(
        f"Les {limit} messages gratuits d'aujourd'hui sont utilisés. Pour continuer tout de suite, "
        "un profil suffit : **1** (Élève), **2** (Parent) ou **3** (Pro)"
        + (f", avec {gift} crédits offerts." if gift > 0 else ".") + " Sinon, à demain !",
        f"You have used your {limit} free messages for today. To go on right away, create your "
        "profile: reply **1** (Student), **2** (Parent) or **3** (Pro)"
        + (f" and get {gift} credits." if gift > 0 else ".") + " Otherwise, see you tomorrow!",
    )


async def can_serve(msg: Incoming) -> bool:
    """True when the model may answer this message; otherwise the user was told why (or, told
    recently, not again)."""
    settings = msg.services.settings
    if safety.concerned(msg.user) and await safety.gentle(msg.db, msg.user.id, msg.services.clock(),
                                                            msg.extra.get(safety.GENTLE)):
        return await _tokens_left(daily(msg))
    if (msg.user.mode or "guest") == "guest":
        allowed = await credits.guest_message_allowed(
            msg.services.state, msg.user.id, _day(msg.services.clock()), settings.guest_daily_messages
        )
        if not allowed:
            await _notice(msg, "guest_limit", guest_limit_text(msg), with_profiles=True)
            return False
        return await _within_daily_tokens(msg)
    # As the message's claim read it, moments ago; the turn's budget starts from it too
    # (handlers/turn/direct.py), and each debit reads it again, held (bot.billing.credits).
    msg.extra["credit_balance"] = balance = msg.user.credit_balance or 0
    if balance <= 0:
        cap = pool.daily_cap(settings, msg.user, msg.services.clock)
        place = await pool.standing(msg.db, msg.user.id, cap)
        if place.left <= 0:
            # Every message gets this short answer, never silence: a child who writes again and
            # hears nothing thinks the bot broke (NOTICE_INTERVAL_S spaces the guests' notice only).
            can_buy = payments.unavailable_reason(settings) is None
            await msg.reply(pool.no_credits_text(place, can_buy, msg.lang), kind="notice")
            return False
    return await _within_daily_tokens(msg)


def daily(msg: Incoming) -> credits.DailyTokens | None:
    """The user's tokens of the day (None: no USER_DAILY_TOKEN_LIMIT)."""
    services = msg.services
    return credits.daily_tokens(services.state, services.settings, msg.user, services.clock())


async def _tokens_left(today: credits.DailyTokens | None) -> bool:
    """Whether enough of the user's day is left to start a turn (no limit: always)."""
    return today is None or await today.left() >= min(DAILY_MIN_TURN_TOKENS, today.limit)


async def _within_daily_tokens(msg: Incoming) -> bool:
    """False once the user's turns used USER_DAILY_TOKEN_LIMIT tokens today (their day); the
    message is answered with one notice that day, later ones with nothing, as without credits."""
    today = daily(msg)
    if today is None or await _tokens_left(today):
        return True
    metrics.DAILY_TOKEN_LIMIT.labels("refused").inc()
    log.info("daily token limit reached", extra={"user_id": msg.user.id})
    if await msg.services.state.set_if_absent(f"notice:{today.key}", "1", 36 * 3600):
        await msg.reply(msg.t(
            "La limite d'utilisation d'aujourd'hui est atteinte, alors je ne peux plus répondre "
            "avant demain. À demain !",
            "You have reached today's usage limit, so I can't answer more questions until tomorrow. "
            "See you tomorrow!",
        ), kind="notice")
        metrics.DAILY_TOKEN_LIMIT.labels("notice").inc()
    return False
