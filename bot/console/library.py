"""`python -m bot library reindex [PHONE]`: the operator rebuilds the search index."""

from __future__ import annotations

import argparse
import sys

from bot.config import Settings
from bot.library.index import reindex

__all__ = ["library_command"]


async def library_command(settings: Settings, args: argparse.Namespace) -> int:
    """Exit 2 for a number that is not one, 1 for a number nobody has; prints the files indexed."""
    from bot.accounts import find_user
    from bot.channel.inbound import normalise_phone
    from bot.services import build_services

    number = None
    if args.phone is not None:
        number = normalise_phone(args.phone)
        if number is None:
            print(f"error: {args.phone!r} is not a phone number with its country code (e.g. +2250700000001)",
                  file=sys.stderr)
            return 2
    services = await build_services(settings)
    try:
        user_id = None
        if number is not None:
            async with services.sessions() as db:
                user = await find_user(db, number)
            if user is None:
                print(f"error: no user with the number {number}", file=sys.stderr)
                return 1
            user_id = user.id
        done = await reindex(services, user_id=user_id)
    finally:
        await services.close()
    print(f"{done} file(s) indexed")
    return 0
