"""What a tool is, and what it gets when it runs. The tools themselves live in `tools/`.

The core only knows this shape; it never imports a tool. Each module of `tools/` builds one `Tool`
with its name, description, JSON schema, modes, step text and function, so one file tells all about a
tool.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from bot.agent.untrusted import TurnSources
    from bot.config import Settings
    from bot.services import Services
    from bot.storage.models import UserFile

ToolResult = dict[str, Any]


@dataclass
class ToolContext:
    """The current user and turn, as a tool sees them. Tools open their own DB sessions, but
    for reads a tool marked `reads_only` asks `reading()`: in a message's turn that is the turn's
    own session (`session`), so its reads share the turn's transaction."""

    services: Services
    user_id: int
    conversation_id: int
    channel: str  # whatsapp | sms | cli
    mode: str  # guest | child | pro
    language: str  # fr | en
    tool_call_id: str = ""
    # The call's side-effect key (bot.agent.effects), for tools that store it with their effect.
    effect_key: str = ""
    # Sends text and/or a file to the current user right now, through the outbound path; returns
    # its result (bot.channel.outbound.SendResult), so that a tool never reports a send that did not happen.
    deliver: Callable[..., Awaitable[Any]] | None = None
    # Sends one short progress note ("⏳ …") at most; the loop decides whether it is needed.
    progress: Callable[[str], Awaitable[None]] | None = None
    # This turn's record of where URLs may come from and of third-party text read (bot.agent.untrusted);
    # the agent loop sets it. None outside a turn (a tool called directly): nothing to check against.
    turn: TurnSources | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The turn's session, lent to a `reads_only` tool while the turn waits for it (bot.agent.tool_batch).
    session: AsyncSession | None = None

    def reading(self) -> AbstractAsyncContextManager[AsyncSession]:
        """The session a tool reads in: the turn's when lent (`session`, left open for the turn),
        else one of its own."""
        if self.session is None:
            return self.services.sessions()
        return _lent(self.session)

    async def send(self, text: str = "", media: UserFile | None = None, menu: Any = None) -> Any:
        """The outbound result (`ok`, `reason`, `for_model()`), or None when there is no channel.
        `menu` (a bot.channel.buttons.Menu, its body the text) may go as buttons on WhatsApp."""
        if self.deliver is None:
            return None
        if menu is not None:
            return await self.deliver(text=text, media=media, menu=menu)
        return await self.deliver(text=text, media=media)


@asynccontextmanager
async def _lent(session: AsyncSession) -> AsyncIterator[AsyncSession]:
    yield session  # the turn's: neither committed nor closed here


def always_available(_settings: Settings) -> str | None:
    return None


@dataclass(frozen=True)
class StepText:
    """What a running tool is doing, as a background job's timeline and STATUT show it:
    the emoji, then the words in French and in English (« 📊 Génération du tableur Excel… »)."""

    emoji: str
    fr: str
    en: str


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    modes: frozenset[str]
    run: Callable[[ToolContext, dict[str, Any]], Awaitable[ToolResult]]
    # A send, a file, a credit: asked again with the same arguments in one turn, it is not rerun.
    side_effects: bool = False
    # Touches state shared with other calls of the same response: run alone, not concurrently.
    exclusive: bool = False
    # The effect is only in the database and the tool marks `ctx.effect_key` done in the same
    # transaction (bot.agent.effects.mark_done): a run cut short left nothing behind and may run again.
    effect_in_transaction: bool = False
    # Only reads the database (through `ToolContext.reading`) and sends nothing: in a message's
    # turn, a step whose calls are all such tools runs them in the turn's session, one after the
    # other, and the turn's writes (a call's charge, the step's messages) wait for its next commit.
    reads_only: bool = False
    # The result carries third-party text, named here ("web page", "file"): the executor wraps it
    # as data, not instructions, and marks the turn as having read such text (bot.agent.untrusted).
    untrusted_source: str = ""
    # Shown once to the user when the tool runs long, e.g. {"fr": "Je prépare ton fichier PDF…"}.
    progress_note: dict[str, str] | None = None
    # The step's text in a background job (bot.jobs.step_label); None: the generic « Traitement en cours ».
    step: StepText | None = None
    # Returns why the tool cannot be offered with these settings (None when it can).
    unavailable: Callable[[Settings], str | None] = always_available

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def tool_error(message: str, **extra: Any) -> ToolResult:
    """A structured error result the model can read and explain to the user."""
    return {"success": False, "error": message, **extra}
