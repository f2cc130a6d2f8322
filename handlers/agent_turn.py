"""The last handler: whatever no other handler took goes to the agent loop.

It checks the user can be served (credits, or the guests' daily allowance; the notice saying
why not goes out at most once per NOTICE_INTERVAL_S; past USER_DAILY_TOKEN_LIMIT tokens today,
told once that day), saves the user's
message, builds the prompt and history, runs the loop with the tools of the user's mode, and turns
the loop's events into what the user sees on WhatsApp/SMS: text written before tool calls goes out
at once, one short progress note when a tool runs long, then the answer. On WhatsApp the person
first sees « typing… » (sent in the background, never waited for), and the answer goes out
paragraph by paragraph while the model writes it (bot.channel.streaming); SMS and spoken answers
(VOCAL) go whole. Everything the loop does
is saved as it happens; each model call is charged as it returns, the turn's record is written
at the end.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot import metrics
from bot.agent import history, vision
from bot.agent.effects import for_turn
from bot.agent.llm import prompt_cache_key
from bot.agent.loop import PROMOTED, new_state, run_turn
from bot.agent.prompts import build_system_prompt
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.capabilities import credits, menus, speech
from bot.capabilities.quiz import redact_tool_arguments
from bot.channel.context import Incoming
from bot.channel.streaming import StreamedReply
from bot.storage.models import Memory, TurnRecord, UserFile
from handlers import background

log = logging.getLogger(__name__)

# Share of the context budget given to past conversation; the rest is left for this turn's work.
HISTORY_SHARE = 0.6
# Below this many tokens left of the user's day a turn is not started: a prompt and a short answer
# take about that much, and a turn that could not make its first call would only say it stops.
DAILY_MIN_TURN_TOKENS = 4000


def _tools_for(msg: Incoming) -> tuple[list[Tool], frozenset[str]]:
    import tools

    offered = tools.offered(msg.services, msg.user.mode or "guest")
    return offered, tools.known_names(offered)


def _day(now: datetime) -> str:
    return now.strftime("%Y-%m-%d")


async def _files_note(msg: Incoming) -> str:
    """What the model is told about files sent with this message."""
    raw = msg.extra.get("files") or []
    if not raw:
        return ""
    lines = []
    for item in raw:
        f: Any = item
        if isinstance(item, int):
            f = await msg.db.get(UserFile, item)
        elif isinstance(item, dict) and "id" in item and "name" not in item:
            f = await msg.db.get(UserFile, int(item["id"]))
        if f is None:
            continue
        get = (lambda k, f=f: f.get(k)) if isinstance(f, dict) else (lambda k, f=f: getattr(f, k, None))
        lines.append(f"- {get('name')} (file id {get('id')}, {get('mime')})")
    if not lines:
        return ""
    head = msg.t(
        "[La personne a envoyé ces fichiers avec ce message ; lis-les avec read_user_file si besoin :]",
        "[The person sent these files with this message; read them with read_user_file if needed:]",
    )
    return head + "\n" + "\n".join(lines)


def _photos(msg: Incoming) -> list[UserFile]:
    """The photos sent with this message, in order."""
    return [f for f in msg.extra.get("files") or [] if isinstance(f, UserFile) and vision.is_image(f.mime)]


def _speaks(msg: Incoming) -> bool:
    """VOCAL is on and the answer can go as a WhatsApp voice note (not offered on SMS)."""
    return bool(getattr(msg.user, "voice_replies", False)) and msg.channel == "whatsapp"


def _on_whatsapp(msg: Incoming) -> bool:
    """The person reads us on WhatsApp through Twilio (not SMS, not the operator's console)."""
    return msg.channel == "whatsapp" and msg.services.console is None


def _show_typing(msg: Incoming) -> None:
    """« typing… » on the person's phone while the answer is prepared (Twilio's beta): sent in the
    background, so neither its delay nor its failure touches the reply."""
    if _on_whatsapp(msg) and msg.inbound is not None and msg.services.twilio is not None:
        msg.services.twilio.show_typing_soon(msg.inbound.message_sid)


def _stream_for(msg: Incoming) -> StreamedReply | None:
    """WhatsApp answers go out paragraph by paragraph as they stream; SMS (one reply, parts of two
    segments) and spoken answers (one voice note) go whole."""
    if not _on_whatsapp(msg) or _speaks(msg):
        return None
    return StreamedReply(msg.services, msg.reply)


async def _charge_photos(msg: Incoming, seen: dict[str, Any]) -> None:
    """Charges the photos the model saw (IMAGE_INPUT_CREDITS each) and notes the media on the turn."""
    usage = msg.extra.setdefault("media_usage", {})
    count = 0 if seen["refused"] else seen["parts"]
    if seen["parts"]:
        usage["images"], usage["images_refused"] = count, seen["refused"]
    due = count * msg.services.settings.image_input_credits
    if due and (msg.user.mode or "guest") != "guest" and msg.inbound is not None:
        ref = f"image:{msg.inbound.id}:{msg.inbound.attempts}"
        taken = await credits.apply(msg.db, msg.user.id, -due, "image_input", ref)
        usage["image_credits"] = due if taken is not None else 0


async def _notice(msg: Incoming, kind: str, text: str) -> bool:
    """Sends a refusal notice at most once per NOTICE_INTERVAL_S per user and kind: someone who
    keeps writing is not sent (and the operator not billed for) the same text at every message.
    The messages themselves are kept as received either way. True when it was sent."""
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
    await msg.reply(text, kind="notice")
    if interval > 0:
        # The time is kept in the value, not left to the key's expiry: the service clock decides.
        await services.state.kv_set(key, now.isoformat(), interval)
    return True


def guest_limit_text(msg: Incoming) -> str:
    settings = msg.services.settings
    limit, gift = settings.guest_daily_messages, settings.signup_credits
    return msg.t(
        f"Tu as utilisé tes {limit} messages gratuits d'aujourd'hui. Pour continuer tout de suite, "
        "crée ton profil : réponds **1** (Élève), **2** (Parent) ou **3** (Pro)"
        + (f" et reçois {gift} crédits." if gift > 0 else ".") + " Sinon, à demain !",
        f"You have used your {limit} free messages for today. To go on right away, create your "
        "profile: reply **1** (Student), **2** (Parent) or **3** (Pro)"
        + (f" and get {gift} credits." if gift > 0 else ".") + " Otherwise, see you tomorrow!",
    )


async def _can_serve(msg: Incoming) -> bool:
    settings = msg.services.settings
    if (msg.user.mode or "guest") == "guest":
        allowed = await credits.guest_message_allowed(
            msg.services.state, msg.user.id, _day(msg.services.clock()), settings.guest_daily_messages
        )
        if not allowed:
            if await _notice(msg, "guest_limit", guest_limit_text(msg)):
                # The « 1 » the notice asks for must choose a profile, not answer an older menu.
                await menus.clear_menu(msg.services, msg.conversation.id, db=msg.db)
            return False
        return await _within_daily_tokens(msg)
    if await credits.balance(msg.db, msg.user.id) <= 0:
        await _notice(
            msg,
            "no_credits",
            msg.t(
                "Tu n'as plus de crédits, alors je ne peux pas répondre à ce message. "
                "Pour en obtenir, envoie **ACHETER** : tu verras les offres "
                "et tu pourras payer par Mobile Money.",
                "You have no credits left, so I can't answer this message. "
                "To get more, send **BUY**: you'll see the packs and can pay by Mobile Money.",
            ),
        )
        return False
    return await _within_daily_tokens(msg)


def _daily(msg: Incoming) -> credits.DailyTokens | None:
    services = msg.services
    return credits.daily_tokens(services.state, services.settings, msg.user, services.clock())


async def _within_daily_tokens(msg: Incoming) -> bool:
    """False once the user's turns used USER_DAILY_TOKEN_LIMIT tokens today (their day); the
    message is answered with one notice that day, later ones with nothing, as without credits."""
    daily = _daily(msg)
    if daily is None or await daily.left() >= min(DAILY_MIN_TURN_TOKENS, daily.limit):
        return True
    metrics.DAILY_TOKEN_LIMIT.labels("refused").inc()
    log.info("daily token limit reached", extra={"user_id": msg.user.id})
    if await msg.services.state.set_if_absent(f"notice:{daily.key}", "1", 36 * 3600):
        await msg.reply(msg.t(
            "Tu as atteint la limite d'utilisation d'aujourd'hui, alors je ne peux plus répondre à "
            "tes questions avant demain. À demain !",
            "You have reached today's usage limit, so I can't answer more questions until tomorrow. "
            "See you tomorrow!",
        ), kind="notice")
        metrics.DAILY_TOKEN_LIMIT.labels("notice").inc()
    return False


async def _save_user_message(msg: Incoming, photos: list[UserFile], inbound_id: int | None) -> bool:
    """Saves what the user sent, with the files' note and, without vision, the photos' text.

    False when nothing is left to answer: only photos came, and none could be read (the user was
    told so). A retried message was saved on the first attempt and is not saved again.
    """
    services, settings, db = msg.services, msg.services.settings, msg.db
    conversation_id = msg.conversation.id
    if inbound_id is not None and await history.user_message_saved(db, conversation_id, inbound_id):
        return True
    content = msg.text
    note = await _files_note(msg)
    if note:
        content = f"{content}\n\n{note}" if content else note
    if photos and not settings.llm_vision:  # the photos' text, read here, is what the model gets
        texts = [await vision.read_text(services, db, p) for p in photos]
        if not any(texts) and not msg.text and len(photos) == len(msg.extra.get("files") or []):
            await db.commit()
            await msg.reply(vision.unreadable_reply(msg.lang))
            return False
        notes = [vision.photo_text_note(p.name, t, msg.lang) for p, t in zip(photos, texts, strict=True)]
        content = "\n\n".join([content, *notes])
    await history.save(db, conversation_id, [{"role": "user", "content": content}], inbound_id)
    return True


async def _prompt(msg: Incoming, photos: list[UserFile], seen: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages the loop starts from: system prompt, past conversation, this turn's photos."""
    services, settings, user, db = msg.services, msg.services.settings, msg.user, msg.db
    memories = list(
        (await db.scalars(select(Memory.fact).where(Memory.user_id == user.id).order_by(Memory.id))).all()
    )
    system = build_system_prompt(
        user.mode or "guest",
        user=user,
        language=user.language or "fr",
        memories=memories,
        now=services.clock(),
        timezone=user.timezone or settings.default_timezone,
    )
    past = await history.load(db, msg.conversation.id, int(settings.llm_context_tokens * HISTORY_SHARE))
    messages = [{"role": "system", "content": system}, *past]
    # The photos go with this turn only: history keeps the file references, not the bytes.
    parts = await vision.photo_parts(services, photos) if photos and settings.llm_vision else []
    if parts:
        messages, seen["parts"] = vision.with_parts(messages, parts), len(parts)
    return messages


def _without_images(msg: Incoming, photos: list[UserFile], seen: dict[str, Any]) -> Any:
    """What the loop calls when the provider refuses the photos: their OCR text instead."""

    async def without_images(request: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen["refused"] = True
        notes = await vision.photo_notes(msg.services, msg.db, photos, msg.lang)
        await msg.db.commit()
        return vision.without_images(request, notes)

    return without_images


class _ToolReplies:
    """What tools send during a turn: their messages, and one short progress note at most."""

    def __init__(self, msg: Incoming, inbound_id: int | None) -> None:
        self.msg = msg
        self.inbound_id = inbound_id
        self.progress_sent = False

    async def deliver(self, text: str = "", media: Any = None) -> Any:
        return await self.msg.reply(text, kind="tool", media=media)

    async def progress(self, note: str) -> None:
        """One short note per turn at most, sent before whatever the tool sends next."""
        note = note.strip()
        if self.progress_sent or not note:
            return
        self.progress_sent = True
        await self.msg.reply(note if note.startswith("⏳") else f"⏳ {note}", kind="progress")

    def make_context(self, call: ToolCall) -> ToolContext:
        msg, user = self.msg, self.msg.user
        return ToolContext(
            services=msg.services,
            user_id=user.id,
            conversation_id=msg.conversation.id,
            channel=msg.channel,
            mode=user.mode or "guest",
            language=user.language or "fr",
            tool_call_id=call.id,
            deliver=self.deliver,
            progress=self.progress,
            extra={"inbound_id": self.inbound_id},
        )


async def _relay(msg: Incoming, events: AsyncIterator[dict[str, Any]], replies: _ToolReplies,
                 stream: StreamedReply | None = None) -> Any:
    """Turns the loop's events into what the user sees; returns the turn's outcome.

    Text written before tool calls goes out at once; with `stream`, the paragraphs it sent while
    the model wrote are not sent again, only the rest. With VOCAL on, the last text is the answer
    and goes out with its voice note once the turn ends.
    """
    outcome = None
    answer = ""
    try:
        async for event in events:
            kind = event["type"]
            if kind == "text" and _speaks(msg):
                if answer:
                    await msg.reply(answer)
                answer = event["text"]
            elif kind == "text":
                text = await stream.rest(event["text"]) if stream is not None else event["text"]
                if text:
                    await msg.reply(text)
            elif kind == "tool_progress":
                await replies.progress(event["note"])
            elif kind == "long_work":
                await background.tell_long_work(msg)
            elif kind == "final":
                outcome = event["outcome"]
    finally:
        if stream is not None:
            stream.cancel()
    assert outcome is not None
    if answer:
        await speech.reply_spoken(msg, answer)
    if outcome.exit_reason == PROMOTED and outcome.state is not None:
        await background.promote(msg, outcome.state)
    return outcome


async def _record_turn(msg: Incoming, outcome: Any, inbound_id: int | None) -> None:
    """Writes the turn's record (the tokens were charged as they were spent, by the budget)."""
    detail = outcome.detail()
    if msg.extra.get("media_usage"):
        detail["media"] = msg.extra["media_usage"]  # images, audio seconds, spoken characters
    msg.db.add(
        TurnRecord(
            conversation_id=msg.conversation.id,
            user_id=msg.user.id,
            inbound_id=inbound_id,
            exit_reason=outcome.exit_reason,
            iterations=len({i["n"] for i in outcome.iterations}),
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
            latency_ms=outcome.latency_ms,
            detail=detail,
        )
    )
    await msg.db.commit()
    metrics.AGENT_TURN_SECONDS.labels(outcome.exit_reason).observe(outcome.latency_ms / 1000)
    log.info(
        "turn ended: %s after %d call(s), %d tokens",
        outcome.exit_reason,
        len(outcome.iterations),
        outcome.total_tokens,
    )


def _start_state(msg: Incoming, messages: list[dict[str, Any]], offered: list[Tool],
                 taken_ids: set[str]) -> tuple[Any, float | None]:
    """The turn's state, and when it goes to the background (None: it never does).

    With a job queue, a turn with tools gets the whole background budget as its deadline and is
    promoted when AGENT_TURN_TIMEOUT_S passes (at once when a pro user asked for it)."""
    limits = msg.services.settings.limits
    if not (offered and background.can_promote(msg.services)):
        state = new_state(messages, timeout_s=limits.turn_timeout_s, taken_ids=taken_ids)
        promote_at = None
    else:
        state = new_state(messages, timeout_s=limits.background_timeout_s, taken_ids=taken_ids)
        promote_at = state.started + (0.0 if background.background_asked(msg) else limits.turn_timeout_s)
    state.tool_names = [t.name for t in offered]
    return state, promote_at


async def handle(msg: Incoming) -> bool:
    services, settings, user = msg.services, msg.services.settings, msg.user
    if not msg.text and not msg.extra.get("files"):
        return False
    # Commit what the message path wrote: tools and outbound use their own sessions, and SQLite
    # allows one writer at a time.
    await msg.db.commit()
    if not await _can_serve(msg):
        return True
    _show_typing(msg)
    db = msg.db
    conversation_id = msg.conversation.id
    inbound_id = msg.inbound.id if msg.inbound is not None else None
    photos = _photos(msg)
    if not await _save_user_message(msg, photos, inbound_id):
        return True
    await db.commit()

    seen: dict[str, Any] = {"parts": 0, "refused": False}
    messages = await _prompt(msg, photos, seen)
    offered, known = _tools_for(msg)
    taken_ids = await history.used_tool_call_ids(db, conversation_id)
    budget = await credits.turn_budget(db, user, msg.inbound, settings, _daily(msg))
    effects = await for_turn(db, services.sessions, user_id=user.id, conversation_id=conversation_id,
                             inbound_id=inbound_id, clock=services.clock)
    # End the read transaction: while tools run, sends from a tool and from this handler happen
    # concurrently, and the outbound path commits the turn's session when it has one open.
    await db.commit()

    async def on_messages(new: list[dict[str, Any]]) -> None:
        await history.save(db, conversation_id, new, inbound_id)
        await db.commit()

    replies, stream = _ToolReplies(msg, inbound_id), _stream_for(msg)
    state, promote_at = _start_state(msg, messages, offered, taken_ids)
    state.effects_from = effects.first_position if effects is not None else 0
    events = run_turn(
        services.llm,
        state=state,
        promote_at=promote_at,
        tools=offered,
        known_names=known,
        mode=user.mode or "guest",
        language=user.language or "fr",
        make_context=replies.make_context,
        limits=settings.limits,
        context_tokens=settings.llm_context_tokens,
        on_messages=on_messages,
        redact_arguments=redact_tool_arguments,
        budget=budget,
        effects=effects,
        without_images=_without_images(msg, photos, seen) if settings.llm_vision else None,
        on_text=stream.on_text if stream is not None else None,
        cache_key=prompt_cache_key(services.settings.secret_key, user.id),
    )
    outcome = await _relay(msg, events, replies, stream)
    await _charge_photos(msg, seen)
    await _record_turn(msg, outcome, inbound_id)
    return True
