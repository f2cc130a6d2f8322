"""WhatsApp messages per file: each message is billed, so a file should cost one.

Before: a file went as two messages, its caption (in parts of 1,600 characters) and then the media
with an empty body. After: the messages bot.channel.outbound builds (`whatsapp_messages`, the
send path's own rule): the caption rides as the media's body when it fits WhatsApp's 1,024
characters, else the text goes first and the file follows, captioned with its name. Each file
of a turn is published with its own caption (bot.library.publish_generated), so a reply with
n files is n such sends plus the answer's own text.
"""

from __future__ import annotations

from bot.channel.formatting import to_whatsapp, whatsapp_parts
from bot.channel.outbound import whatsapp_messages

URL = "https://example.test/files/1/fiche.pdf"
ANSWER = "Voici tes fiches : relis-les avant le contrôle de demain, puis fais les exercices 3 et 4."
SHORT = "📄 Fiche de révision — les fractions.pdf"  # the default caption: the file's name
LONG = " ".join(["Le résumé reprend la leçon : définitions, exemples et exercices corrigés."] * 20)


def before(caption: str) -> int:
    """The old rule: the caption's parts, then the media alone."""
    return (len(whatsapp_parts(to_whatsapp(caption))) if caption.strip() else 0) + 1


def after(caption: str) -> int:
    return len(whatsapp_messages(caption, URL, "fiche.pdf"))


def reply(files: int, caption: str, rule: str) -> int:
    """The messages of an answer that sends `files` files, each with `caption`, then its text."""
    count = before if rule == "before" else after
    return files * count(caption) + len(whatsapp_messages(ANSWER))


def table() -> str:
    head = f"{'reply':<44} {'before':>7} {'after':>6}"
    lines = [head, "-" * len(head)]
    for label, caption in (("short caption", SHORT), (f"{len(LONG)}-character caption", LONG)):
        lines.append(f"{'one file, ' + label:<44} {before(caption):>7} {after(caption):>6}")
        for files in (1, 3):
            name = f"answer + {files} file{'s' * (files > 1)}, {label}"
            old, new = reply(files, caption, "before"), reply(files, caption, "after")
            lines.append(f"{name:<44} {old:>7} {new:>6}")
    return "\n".join(lines)


def per_file() -> float:
    """Messages per file, short caption, after (the figure a regression would move)."""
    return float(after(SHORT))
