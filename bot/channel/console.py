"""`python -m bot chat`: the bot's messages printed in the terminal instead of sent through Twilio.

What goes to the console is formatted as for WhatsApp; a file is shown as its local path, or its
link when the file store has no local copy. The send path (bot.channel.outbound) calls `show` for
`Services.console` and the `cli` channel and counts it accepted.
"""

from __future__ import annotations

import sys
from typing import TextIO

from bot.channel import formatting
from bot.channel.links import file_url
from bot.services import Services
from bot.storage.models import UserFile


class ConsoleSink:
    """`python -m bot chat`: replies printed in the terminal, files shown as local paths."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.lines: list[str] = []

    def show(self, to: str, text: str, media_path: str | None = None) -> None:
        if text:
            self.lines.append(text)
            print(f"\nDeblo > {text}", file=self.out)
        if media_path:
            self.lines.append(f"[file] {media_path}")
            print(f"Deblo > [fichier] {media_path}", file=self.out)
        self.out.flush()


def show(services: Services, to: str, text: str, media: UserFile | None) -> None:
    """Shows one message on the running console, or on stdout when there is none (the `cli` channel)."""
    sink = services.console or ConsoleSink()
    path = None
    if media is not None:
        local = services.files.local_path(media.storage_key)
        path = str(local) if local is not None else file_url(services.settings, media, read_later=True)
    sink.show(to, formatting.to_whatsapp(text) if text else "", path)
