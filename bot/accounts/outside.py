"""What an erasure does outside the person's rows: their stored files' bytes, their keys in the
shared state, their webhooks left in the spool's files (DATA_DIR/spool: waiting for the database,
or set aside in dead.jsonl), and the record that their number was erased (bot.storage.erasures),
without which `spool retry` would store a set-aside webhook of theirs again: a user, a row, and
the bot writing to them. And the report of it all, which `users forget` prints."""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from bot.channel import menus, spool
from bot.services import Services
from bot.storage.erasures import record_erasure

__all__ = ["ForgetReport", "clear_spool", "clear_state", "delete_bytes", "deletion_request_key",
           "remember_erasure"]

log = logging.getLogger("bot.accounts")


@dataclass
class ForgetReport:
    user_id: int | None
    deleted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    redacted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    kept: dict[str, int] = field(default_factory=dict)  # rows moved to the placeholder
    placeholder_id: int | None = None
    written_off: int = 0
    files_deleted: int = 0
    files_left: list[str] = field(default_factory=list)
    spooled: int = 0  # webhooks taken out of the spool's files
    spool_error: str | None = None  # why the spool's files could not be cleaned

    @property
    def anything(self) -> bool:
        return bool(self.user_id is not None or any(self.deleted.values()) or any(self.redacted.values())
                    or self.spooled)


def deletion_request_key(user_id: int) -> str:
    """Shared-state key of a pending SUPPRIMER/DELETE (cleared by the erasure)."""
    return f"account-delete:{user_id}"


async def remember_erasure(db: AsyncSession, services: Services, phone: str | None,
                           external_id: str | None) -> None:
    """In the erasure's transaction: the number and WhatsApp id, as HMACs, and when."""
    await record_erasure(db, services.settings.secret_key, (phone, external_id), services.clock())


async def clear_spool(services: Services, phone: str | None, external_id: str | None, mask: str,
                      report: ForgetReport) -> None:
    """The person's webhooks out of every spool file of this host's DATA_DIR, their number masked in
    other people's. Another host's spool is not reached: its `spool retry` drops them (the record)."""
    directory = services.settings.data_dir / "spool"
    try:
        report.spooled = await asyncio.to_thread(spool.forget, directory, (phone, external_id), mask)
    except OSError as exc:
        log.exception("spool files not cleaned at erasure")
        report.spool_error = f"{type(exc).__name__}: {exc}"


async def delete_bytes(services: Services, user_id: int | None, keys: list[str],
                       report: ForgetReport) -> None:
    for key in keys:
        try:
            await services.files.delete(key)
            report.files_deleted += 1
        except Exception:
            log.exception("file not deleted at erasure", extra={"storage_key": key})
            report.files_left.append(key)
    local_path = getattr(services.files, "local_path", None)
    if user_id is None or local_path is None:
        return
    # Bytes stored under the user's own prefixes whose row was never written (a crash in between).
    for prefix in (f"u{int(user_id)}", f"users/{int(user_id)}"):
        try:
            folder = local_path(prefix)
        except ValueError:
            continue
        if folder is not None and folder.is_dir():
            report.files_deleted += sum(1 for p in folder.rglob("*") if p.is_file())
            await asyncio.to_thread(shutil.rmtree, folder, True)


async def clear_state(services: Services, user_id: int | None, conversations: list[int]) -> None:
    """Pending menus (a quiz's questions and answers) and the deletion request; the rest expires."""
    if user_id is None:
        return
    try:
        for conversation_id in conversations:
            await menus.clear_menu(services, conversation_id)
        await services.state.kv_delete(deletion_request_key(user_id))
    except Exception:
        log.warning("shared state not cleared at erasure; its keys expire by themselves",
                    extra={"user_id": user_id})
