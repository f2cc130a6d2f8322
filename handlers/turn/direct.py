"""The last handler: whatever no other handler took goes to the agent loop.

It checks the user can be served (handlers/turn/gate.py), saves the user's message and builds the
prompt and history (handlers/turn/prompt.py), runs the loop with the tools of the user's mode
(handlers/turn/drive.py), and turns the loop's events into what the user sees on WhatsApp/SMS:
text written before tool calls goes out at once, one short progress note when a tool runs long,
then the answer. On WhatsApp the person first sees « typing… » (sent in the background, never
waited for), and the answer goes out while the model writes it as WHATSAPP_STREAM says: merged into
as few messages as fit (bot.channel.streaming); SMS and spoken answers (VOCAL) go whole. The model's
text waits for the next event (handlers/turn/held.py): a quiz's menu and the line after it, or the
answer and a line that rides with it (the review offer), leave as one message. The messages an
answer took are counted (deblo_messages_per_answer).
Everything the loop does is saved as it happens; each model call is charged as it returns, the
turn's record is written at the end. A turn still working when AGENT_TURN_TIMEOUT_S passes goes on
in the background (handlers/turn/promote.py).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot import metrics, school
from bot.agent import history, vision
from bot.agent.effects import EffectStore, for_turn
from bot.agent.events import LongWork, LoopEvent, Text, ToolProgress, ToolStarted, TurnOutcome
from bot.agent.loop import PROMOTED, Budget, TurnState, new_state
from bot.agent.sse import ToolCall
from bot.agent.toolspec import Tool, ToolContext
from bot.billing import credits, pool
from bot.channel.buttons import Menu
from bot.channel.context import Incoming
from bot.channel.outbound import turn_ending
from bot.channel.streaming import StreamedReply, message_count
from bot.media import speech
from bot.services import Services
from bot.storage.db import commit_writes
from bot.storage.models import TurnRecord, User, UserFile
from handlers.safety import DISTRESS, QUIZ_TOOLS
from handlers.turn import drive, gate, promote, prompt
from handlers.turn.held import Held, trailer

__all__ = ["handle"]

log = logging.getLogger(__name__)


def _speaks(msg: Incoming) -> bool:
    """VOCAL is on and the answer can go as a WhatsApp voice note (not offered on SMS)."""
    return bool(getattr(msg.user, "voice_replies", False)) and msg.channel == "whatsapp"


def _on_whatsapp(msg: Incoming) -> bool:
    """The person reads us on WhatsApp through Twilio (not SMS, not the operator's console)."""
    return msg.channel == "whatsapp" and msg.services.console is None


def _show_typing(msg: Incoming) -> None:
    """« typing… » on the person's phone while the answer is prepared (Twilio's beta): sent in the
    background, so neither its delay nor its failure touches the reply."""
    if _on_whatsapp(msg) and msg.inbound is not None:
        msg.services.twilio.show_typing_soon(msg.inbound.message_sid)


def _stream_mode(msg: Incoming) -> str:
    """WhatsApp answers stream as WHATSAPP_STREAM says; SMS (one reply, parts of two segments) and
    spoken answers (one voice note) go whole."""
    if not _on_whatsapp(msg) or _speaks(msg):
        return "whole"
    return msg.services.settings.whatsapp_stream


def _stream_for(msg: Incoming) -> StreamedReply | None:
    mode = _stream_mode(msg)
    return None if mode == "whole" else StreamedReply(msg.services, msg.reply, mode=mode)


def _count_messages(msg: Incoming, side: _DirectTurn) -> None:
    """The messages the answer's text took (streamed pieces and what followed them)."""
    total = side.messages + (side.stream.messages if side.stream is not None else 0)
    if total:
        metrics.MESSAGES_PER_ANSWER.labels(msg.channel, _stream_mode(msg)).observe(total)


async def _charge_photos(msg: Incoming, seen: dict[str, Any]) -> None:
    """Charges the photos the model saw (IMAGE_INPUT_CREDITS each, down to the turn's floor, counted
    into the user's day) and notes the media on the turn."""
    usage = msg.extra.setdefault("media_usage", {})
    count = 0 if seen["refused"] else seen["parts"]
    if seen["parts"]:
        usage["images"], usage["images_refused"] = count, seen["refused"]
    due = count * msg.services.settings.image_input_credits
    if due and msg.inbound is not None:
        ref = f"image:{msg.inbound.id}:{msg.inbound.attempts}"
        taken = await credits.charge_media(msg.db, msg.user, msg.services.settings, "image_input", due, ref,
                                           gate.daily(msg), msg.services.clock)
        if (msg.user.mode or "guest") != "guest":
            usage["image_credits"] = taken


class _DirectTurn:
    """The message's side of the turn (a `drive.TurnSide`): what tools send goes out as replies to
    the message, one short progress note at most; the model's text is streamed on WhatsApp; the
    events become replies; with VOCAL on, the last text is the answer and goes out with its voice
    note once the turn ends."""

    def __init__(self, msg: Incoming, photos: list[UserFile], seen: dict[str, Any],
                 stream: StreamedReply | None) -> None:
        self.msg, self.photos, self.seen, self.stream = msg, photos, seen, stream
        self.services: Services = msg.services
        self.user: User = msg.user
        self.conversation_id, self.channel = msg.conversation.id, msg.channel
        self.inbound_id = msg.inbound.id if msg.inbound is not None else None
        self.context_extra: dict[str, Any] = {"inbound_id": self.inbound_id}
        self.budget: Budget | None = None
        self.effects: EffectStore | None = None
        self.promote_at: float | None = None
        # A tool step's messages are saved with the next write (no state is saved between steps).
        self.holds_tool_messages = True
        # Tools that only read run in the turn's session: one transaction with its next write.
        self.lent_session: AsyncSession | None = msg.db
        self.progress_sent = False
        self.answer = ""  # with VOCAL on: the last text, spoken once the turn ends
        self.messages = 0  # the messages the model's text took, but those streamed
        self.held = Held(msg)  # the model's text and a quiz's menu, to go as one message

    @property
    def streams(self) -> bool:
        return self.stream is not None

    async def deliver(self, text: str = "", media: UserFile | None = None, menu: Menu | None = None) -> Any:
        if menu is not None and media is None:
            return await self.held.menu(text, menu)  # it waits for the model's next text
        await self.held.flush()
        return await self.msg.reply(text, kind="tool", media=media, menu=menu)

    async def progress(self, note: str) -> None:
        """One short note per turn at most, sent before whatever the tool sends next."""
        note = note.strip()
        if self.progress_sent or not note:
            return
        self.progress_sent = True
        await self.held.flush()
        await self.msg.reply(note if note.startswith("⏳") else f"⏳ {note}", kind="progress")

    def make_context(self, call: ToolCall) -> ToolContext:
        return drive.tool_context(self, call, progress=self.progress)

    def on_text(self, chunk: str) -> bool:
        return self.stream.on_text(chunk) if self.stream is not None else False

    async def on_messages(self, new: list[dict[str, Any]]) -> None:
        """Saved in the turn's session, committed with what it commits next: the charge settled
        before tools or the next call, or the answer's row (one transaction with its send's)."""
        await history.save(self.msg.db, self.conversation_id, new, self.inbound_id)

    async def without_images(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The provider refused the photos: their OCR text instead (when the model had them)."""
        msg = self.msg
        if not msg.services.settings.llm_vision:
            return None
        self.seen["refused"] = True
        notes = await vision.photo_notes(msg.services, msg.db, self.photos, msg.lang)
        await msg.db.commit()
        return vision.without_images(messages, notes)

    async def save(self, state: TurnState) -> None:
        return None  # a message's turn is saved when it is promoted (promote.promote)

    async def should_stop(self) -> bool:
        return False  # STOP is read at each send; ANNULER stops background jobs

    async def on_event(self, event: LoopEvent) -> None:
        """Text written before tool calls goes out at once; with a stream, the paragraphs it sent
        while the model wrote are not sent again, only the rest."""
        msg = self.msg
        if isinstance(event, Text) and _speaks(msg):
            await self.held.flush()
            if self.answer:
                await msg.reply(self.answer)
                self.messages += message_count(msg.channel, self.answer)
            self.answer = event.text
        elif isinstance(event, Text):
            if self.stream is not None and self.stream.sending:
                # The stream's sends write in sessions of their own and the turn waits for them
                # (`rest`): what the turn holds goes first (SQLite has one writer, and on
                # PostgreSQL the call's debit holds the user's row).
                await commit_writes(msg.db)
            # Held until the next event: a quiz's menu or the turn's end may take it along.
            self.held.text(await self.stream.rest(event.text) if self.stream is not None else event.text)
        elif isinstance(event, ToolStarted):
            if event.name not in QUIZ_TOOLS:  # a quiz is sent at once: the text waits for its menu
                await self.held.flush()
        elif isinstance(event, ToolProgress):
            await self.progress(event.note)
        elif isinstance(event, LongWork):
            await self.held.flush()
            await promote.tell_long_work(msg)


async def _record_turn(msg: Incoming, outcome: TurnOutcome, inbound_id: int | None) -> None:
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
    # Committed with the message's end (bot.pipeline.messages), in the same transaction.
    metrics.AGENT_TURN_SECONDS.labels(outcome.exit_reason).observe(outcome.latency_ms / 1000)
    log.info(
        "turn ended: %s after %d call(s), %d tokens",
        outcome.exit_reason,
        len(outcome.iterations),
        outcome.total_tokens,
    )


def _start_state(msg: Incoming, messages: list[dict[str, Any]], offered: list[Tool],
                 taken_ids: set[str]) -> tuple[TurnState, float | None]:
    """The turn's state, and when it goes to the background (None: it never does).

    A turn with tools gets the whole background budget as its deadline and is promoted to a job
    when AGENT_TURN_TIMEOUT_S passes (at once when a pro user asked for it)."""
    limits = msg.services.settings.limits
    if not offered:
        state = new_state(messages, timeout_s=limits.turn_timeout_s, taken_ids=taken_ids)
        promote_at = None
    else:
        state = new_state(messages, timeout_s=limits.background_timeout_s, taken_ids=taken_ids)
        promote_at = state.started + (0.0 if promote.background_asked(msg) else limits.turn_timeout_s)
    state.tool_names = [t.name for t in offered]
    return state, promote_at


async def _open(msg: Incoming, side: _DirectTurn) -> None:
    """The turn's budget and side-effect keys, read before the turn starts. A student's classes
    are read once, with their pools, and given to the tools (`list_user_files`)."""
    db, user, settings, clock = msg.db, msg.user, msg.services.settings, msg.services.clock
    place = None
    if (user.mode or "guest") != "guest":  # a guest's turn is not charged: no pool is read
        place = await pool.standing(db, user.id, pool.daily_cap(settings, user, clock))
        side.context_extra[school.TURN_CLASSES] = place.classes
    side.budget = await credits.turn_budget(db, user, msg.inbound, settings, gate.daily(msg), clock,
                                            balance=msg.extra.get("credit_balance"), place=place)
    side.effects = await for_turn(db, msg.services.sessions, user_id=user.id,
                                  conversation_id=side.conversation_id, inbound_id=side.inbound_id,
                                  clock=msg.services.clock, rerun=prompt.rerun(msg))


async def _run(msg: Incoming, side: _DirectTurn, messages: list[dict[str, Any]]) -> TurnOutcome:
    """Runs the turn and what follows it: the spoken answer, the promotion to the background."""
    offered, known = drive.tools_for(msg.services, msg.user)
    if DISTRESS in msg.extra:  # a gentle turn: no quiz (handlers/safety.py)
        offered = [t for t in offered if t.name not in QUIZ_TOOLS]
    taken_ids = await history.used_tool_call_ids(msg.db, side.conversation_id, side.seen)
    await _open(msg, side)
    # End the read transaction: while tools run, sends from a tool and from this handler happen
    # concurrently, and the outbound path commits the turn's session when it has one open.
    await msg.db.commit()
    state, side.promote_at = _start_state(msg, messages, offered, taken_ids)
    state.effects_from = side.effects.first_position if side.effects is not None else 0
    try:
        outcome = await drive.drive(side, state, offered, known)
    except Exception:
        await side.held.flush()  # what the person was already promised (a quiz) still goes
        raise
    finally:
        if side.stream is not None:
            side.stream.cancel()
    if side.answer:
        await speech.reply_spoken(msg, side.answer)
        side.messages += message_count(msg.channel, side.answer)
    if msg.extra.get("files"):
        await side.held.flush(trailer(msg))  # their reading may keep the message's end waiting
    else:
        with turn_ending():  # the message's end follows: the SIDs are committed with it
            await side.held.flush(trailer(msg))
    side.messages += side.held.messages
    _count_messages(msg, side)
    if outcome.exit_reason == PROMOTED and outcome.state is not None:
        await commit_writes(msg.db)  # the job's row is written in a session of its own
        await promote.promote(msg, outcome.state)
    else:
        await promote.drop_reserved(msg)
    return outcome


async def handle(msg: Incoming) -> bool:
    if not msg.text and not msg.extra.get("files"):
        return False
    # Commit what the message path wrote: tools and outbound use their own sessions, and SQLite
    # allows one writer at a time. Reads only: their transaction goes on, to the model call.
    await commit_writes(msg.db)
    if not await gate.can_serve(msg):
        return True
    _show_typing(msg)
    inbound_id = msg.inbound.id if msg.inbound is not None else None
    photos = prompt.photos_of(msg)
    if not await prompt.save_user_message(msg, photos, inbound_id):
        return True
    # Committed with the prompt's reads, before the model call (`_run`).
    seen: dict[str, Any] = {"parts": 0, "refused": False}
    messages = await prompt.prompt(msg, photos, seen)
    side = _DirectTurn(msg, photos, seen, _stream_for(msg))
    outcome = await _run(msg, side, messages)
    await _charge_photos(msg, seen)
    await _record_turn(msg, outcome, inbound_id)
    return True
