"""The last handler: whatever no other handler took goes to the agent loop.

It checks the user can be served (credits, or the guests' daily allowance), saves the user's
message, builds the prompt and history, runs the loop with the tools of the user's mode, and turns
the loop's events into what the user sees on WhatsApp/SMS: text written before tool calls goes out
at once, one short progress note when a tool runs long, then the answer. Everything the loop does
is saved as it happens; the turn's record and its credit charge are written at the end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import select

from bot import credits, history
from bot.agent import run_turn
from bot.context import Incoming
from bot.models import Memory, TurnRecord, UserFile
from bot.prompts import build_system_prompt
from bot.quiz import redact_tool_arguments
from bot.sse import ToolCall
from bot.toolspec import Tool, ToolContext

log = logging.getLogger(__name__)

# Share of the context budget given to past conversation; the rest is left for this turn's work.
HISTORY_SHARE = 0.6


def _tools_for(msg: Incoming) -> tuple[list[Tool], frozenset[str]]:
    import tools
    from tools.modes import ALL_TOOL_NAMES

    provider: Callable[[str, Any], list[Tool]] = msg.services.extra.get("tools_for_mode") or tools.for_mode
    mode = msg.user.mode or "guest"
    offered = [] if mode == "guest" else list(provider(mode, msg.services.settings))
    return offered, frozenset(ALL_TOOL_NAMES) | {t.name for t in offered}


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


async def _can_serve(msg: Incoming) -> bool:
    settings = msg.services.settings
    if (msg.user.mode or "guest") == "guest":
        allowed = await credits.guest_message_allowed(
            msg.services.state, msg.user.id, _day(msg.services.clock()), settings.guest_daily_messages
        )
        if not allowed:
            await msg.reply(
                msg.t(
                    f"Tu as utilisé tes {settings.guest_daily_messages} messages gratuits d'aujourd'hui. "
                    "Reviens demain, ou crée ton compte pour continuer : envoie **MENU**.",
                    f"You have used your {settings.guest_daily_messages} free messages for today. "
                    "Come back tomorrow, or create your account to continue: send **MENU**.",
                ),
                kind="notice",
            )
            return False
        return True
    if await credits.balance(msg.db, msg.user.id) <= 0:
        await msg.reply(
            msg.t(
                "Tu n'as plus de crédits, alors je ne peux pas répondre à ce message. "
                "Pour en obtenir, envoie **ACHETER** : tu verras les offres "
                "et tu pourras payer par Mobile Money.",
                "You have no credits left, so I can't answer this message. "
                "To get more, send **BUY**: you'll see the packs and can pay by Mobile Money.",
            ),
            kind="notice",
        )
        return False
    return True


async def handle(msg: Incoming) -> bool:
    services, settings, user = msg.services, msg.services.settings, msg.user
    if not msg.text and not msg.extra.get("files"):
        return False
    # Commit what the message path wrote: tools and outbound use their own sessions, and SQLite
    # allows one writer at a time.
    await msg.db.commit()
    if not await _can_serve(msg):
        return True
    db = msg.db
    conversation_id = msg.conversation.id
    inbound_id = msg.inbound.id if msg.inbound is not None else None
    retry = inbound_id is not None and await history.user_message_saved(db, conversation_id, inbound_id)
    if not retry:
        content = msg.text
        note = await _files_note(msg)
        if note:
            content = f"{content}\n\n{note}" if content else note
        await history.save(db, conversation_id, [{"role": "user", "content": content}], inbound_id)
    await db.commit()

    memories = list(
        (await db.scalars(select(Memory.fact).where(Memory.user_id == user.id).order_by(Memory.id))).all()
    )
    system = build_system_prompt(
        user.mode or "guest",
        user=user,
        language=user.language or "fr",
        memories=memories,
        today=_day(services.clock()),
    )
    past = await history.load(db, conversation_id, int(settings.llm_context_tokens * HISTORY_SHARE))
    messages = [{"role": "system", "content": system}, *past]
    offered, known = _tools_for(msg)
    taken_ids = await history.used_tool_call_ids(db, conversation_id)
    # End the read transaction: while tools run, sends from a tool and from this handler happen
    # concurrently, and the outbound path commits the turn's session when it has one open.
    await db.commit()

    async def deliver(text: str = "", media: Any = None) -> None:
        await msg.reply(text, kind="tool", media=media)

    progress_sent = False

    async def progress(note: str) -> None:
        """One short note per turn at most, sent before whatever the tool sends next."""
        nonlocal progress_sent
        note = note.strip()
        if progress_sent or not note:
            return
        progress_sent = True
        await msg.reply(note if note.startswith("⏳") else f"⏳ {note}", kind="progress")

    def make_context(call: ToolCall) -> ToolContext:
        return ToolContext(
            services=services,
            user_id=user.id,
            conversation_id=conversation_id,
            channel=msg.channel,
            mode=user.mode or "guest",
            language=user.language or "fr",
            tool_call_id=call.id,
            deliver=deliver,
            progress=progress,
            extra={"inbound_id": inbound_id},
        )

    async def on_messages(new: list[dict[str, Any]]) -> None:
        await history.save(db, conversation_id, new, inbound_id)
        await db.commit()

    outcome = None
    async for event in run_turn(
        services.llm,
        messages,
        tools=offered,
        known_names=known,
        mode=user.mode or "guest",
        language=user.language or "fr",
        make_context=make_context,
        limits=settings.limits,
        context_tokens=settings.llm_context_tokens,
        on_messages=on_messages,
        taken_ids=taken_ids,
        redact_arguments=redact_tool_arguments,
    ):
        kind = event["type"]
        if kind == "text":
            await msg.reply(event["text"])
        elif kind == "tool_progress":
            await progress(event["note"])
        elif kind == "final":
            outcome = event["outcome"]
    assert outcome is not None
    db.add(
        TurnRecord(
            conversation_id=conversation_id,
            user_id=user.id,
            inbound_id=inbound_id,
            exit_reason=outcome.exit_reason,
            iterations=len({i["n"] for i in outcome.iterations}),
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
            latency_ms=outcome.latency_ms,
            detail=outcome.detail(),
        )
    )
    if (user.mode or "guest") != "guest" and outcome.total_tokens > 0:
        await credits.charge_turn(
            db,
            user.id,
            outcome.total_tokens,
            settings.tokens_per_credit,
            ref=f"turn:{inbound_id}" if inbound_id is not None else None,
        )
    await db.commit()
    log.info(
        "turn ended: %s after %d call(s), %d tokens",
        outcome.exit_reason,
        len(outcome.iterations),
        outcome.total_tokens,
    )
    return True
