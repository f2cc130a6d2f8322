"""(being written)"""

from __future__ import annotations

from bot.context import Incoming


async def handle(msg: Incoming) -> bool:
    return False
