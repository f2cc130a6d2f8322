"""What the loop starts from: the user's message as saved, the system prompt, the history, photos.

The message is saved with a note of the files sent with it and, without vision, the photos' text
(read here). With vision the photos go with this turn only, as image parts: history keeps the file
references, never the bytes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from bot import library, safety
from bot.agent import history, vision
from bot.agent.prompts import PARENT, build_system_prompt, prompt_name
from bot.channel.context import Incoming
from bot.learning import family_block, learner_block, learner_view, prompt_reteach, reteach_block
from bot.storage.models import Memory, QuizItem, UserFile
from handlers.safety import DISTRESS

__all__ = ["HISTORY_SHARE", "RETEACH", "photos_of", "prompt", "rerun", "save_user_message"]

# Share of the context budget given to past conversation; the rest is left for this turn's work.
HISTORY_SHARE = 0.6
# msg.extra: the item a REVISION round hands to the model, to teach again now (handlers/review.py).
RETEACH = "learning.reteach"


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

        def get(key: str, f: Any = f) -> Any:
            return f.get(key) if isinstance(f, dict) else getattr(f, key, None)

        lines.append(f"- {get('name')} (file id {get('id')}, {get('mime')})")
    if not lines:
        return ""
    head = msg.t(
        "[La personne a envoyé ces fichiers avec ce message ; lis-les avec read_user_file si besoin :]",
        "[The person sent these files with this message; read them with read_user_file if needed:]",
    )
    return head + "\n" + "\n".join(lines)


def photos_of(msg: Incoming) -> list[UserFile]:
    """The photos sent with this message, in order."""
    return [f for f in msg.extra.get("files") or [] if isinstance(f, UserFile) and vision.is_image(f.mime)]


def rerun(msg: Incoming) -> bool:
    """Whether the message may have been run before (claimed again after a crash or a postponement):
    only then can an earlier run have saved its user message and its tool calls."""
    return msg.inbound is None or (msg.inbound.attempts or 0) != 1


async def save_user_message(msg: Incoming, photos: list[UserFile], inbound_id: int | None) -> bool:
    """Saves what the user sent, with the files' note and, without vision, the photos' text.

    False when nothing is left to answer: only photos came, and none could be read (the user was
    told so). A retried message was saved on the first attempt and is not saved again.
    """
    services, settings, db = msg.services, msg.services.settings, msg.db
    conversation_id = msg.conversation.id
    if inbound_id is not None and rerun(msg) and await history.user_message_saved(db, conversation_id,
                                                                                   inbound_id):
        return True
    content = msg.text
    note = await _files_note(msg)
    if note:
        content = f"{content}\n\n{note}" if content else note
    if photos and not settings.llm_vision:  # the photos' text, read here, is what the model gets
        texts = [await vision.read_text(services, db, p) for p in photos]
        for photo in photos:  # the library's search finds the photo by the words read on it
            await library.index_file(services, db, photo, only_if_changed=True)
        if not any(texts) and not msg.text and len(photos) == len(msg.extra.get("files") or []):
            await db.commit()
            await msg.reply(vision.unreadable_reply(msg.lang))
            return False
        notes = [vision.photo_text_note(p.name, t, msg.lang) for p, t in zip(photos, texts, strict=True)]
        content = "\n\n".join([content, *notes])
    await history.save(db, conversation_id, [{"role": "user", "content": content}], inbound_id)
    return True


def distress_note(msg: Incoming) -> str:
    """What the model is told on the turn of a message that signalled distress (handlers/safety.py
    answered it first): what was done already, and how to answer."""
    return msg.t(
        "[Note de sécurité : ce message de l'enfant semble dire une détresse. Le numéro d'aide lui a "
        "déjà été envoyé et ses mots ont été transmis à un adulte de l'école. Réponds en tuteur "
        "bienveillant : accueille ce qu'il dit avec douceur, en quelques phrases simples, sans "
        "redonner le numéro ni poser de diagnostic ; ne propose ni quiz, ni révision, ni crédits. "
        "S'il a aussi demandé de l'aide pour l'école, aide-le : ne refuse jamais d'enseigner.]",
        "[Safety note: this message from the child seems to express distress. The helpline number was "
        "already sent to them and their words were passed to an adult of the school. Answer as a caring "
        "tutor: receive what they say gently, in a few simple sentences, without giving the number "
        "again or making a diagnosis; offer no quiz, no review, no credits. If they also asked for "
        "help with school, help them: never refuse to teach.]",
    )


async def reteach_note(msg: Incoming, now: datetime, items: list[QuizItem]) -> str:
    """The items waiting to be taught again (bot.learning.reteach: `items`, as the prompt read
    them), for a student's turn; none on a gentle day, when no quiz is asked."""
    if DISTRESS in msg.extra:
        return ""
    handed = msg.extra.get(RETEACH)
    block = await reteach_block(msg.db, msg.user.id, now, handed=handed if isinstance(handed, int) else None,
                                items=items)
    if block and await safety.gentle(msg.db, msg.user.id, now, msg.extra.get(safety.GENTLE)):
        return ""
    return block


async def prompt(msg: Incoming, photos: list[UserFile], seen: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages the loop starts from: system prompt, past conversation, this turn's photos."""
    services, settings, user, db = msg.services, msg.services.settings, msg.user, msg.db
    memories = list(
        (await db.scalars(select(Memory.fact).where(Memory.user_id == user.id).order_by(Memory.id))).all()
    )
    learner, name = "", prompt_name(user.mode, user.role)
    if name == PARENT:  # their children's figures, never their own (a parent is not the learner)
        learner = await family_block(db, settings.learning, user.id, services.clock())
    elif name == "child":  # the learner block is for students only
        now = services.clock()
        items, due = await prompt_reteach(db, user.id, now)  # with the due count: one statement
        view = await learner_view(db, user.id, user.school_level, settings.learning, now, due=due)
        blocks = (learner_block(view), await reteach_note(msg, now, items))
        learner = "\n\n".join(block for block in blocks if block)
    system = build_system_prompt(
        name,
        user=user,
        language=user.language or "fr",
        memories=memories,
        now=services.clock(),
        timezone=user.timezone or settings.default_timezone,
        learner=learner,
    )
    if DISTRESS in msg.extra:
        system = f"{system}\n\n{distress_note(msg)}"
    past = await history.load(db, msg.conversation.id, int(settings.llm_context_tokens * HISTORY_SHARE), seen)
    messages = [{"role": "system", "content": system}, *past]
    # The photos go with this turn only: history keeps the file references, not the bytes.
    parts = await vision.photo_parts(services, photos) if photos and settings.llm_vision else []
    if parts:
        messages, seen["parts"] = vision.with_parts(messages, parts), len(parts)
    return messages
