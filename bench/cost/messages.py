"""WhatsApp messages per answer, by WHATSAPP_STREAM: each message is billed, so fewer is cheaper.

A few long answers of the kind the bot writes (a lesson, a correction, a pro explanation, an essay
plan: bench/cost/long_answers.txt) are streamed four characters at a time through
bot.channel.streaming's splitter, as a turn streams them: what the splitter hands out while the
model writes leaves as its own send, what is left at the end as one more, each cut into parts of
1,600 characters by the send path. "paragraphs" is
the behaviour before (one message per paragraph), "auto" the default after (paragraphs merged up to
1,600 characters, none sent early on its own), "whole" one send.
"""

from __future__ import annotations

from pathlib import Path

from bot.channel.formatting import WHATSAPP_MAX
from bot.channel.streaming import MODES, STREAM_MIN_CHARS, ParagraphSplitter, message_count

ANSWERS_PATH = Path(__file__).with_name("long_answers.txt")


def answers() -> dict[str, str]:
    """The long answers of long_answers.txt: each after a `=== name` line."""
    found: dict[str, str] = {}
    for block in ANSWERS_PATH.read_text(encoding="utf-8").split("=== ")[1:]:
        name, _, text = block.partition("\n")
        found[name.strip()] = text.strip()
    return found


def messages(answer: str, mode: str, token_chars: int = 4) -> int:
    """The WhatsApp messages `answer` leaves in when streamed `token_chars` at a time in `mode`."""
    if mode == "whole":
        return message_count("whatsapp", answer)
    splitter = ParagraphSplitter(STREAM_MIN_CHARS, WHATSAPP_MAX if mode == "auto" else None, early=False)
    sent = 0
    for i in range(0, len(answer), token_chars):
        sent += sum(message_count("whatsapp", piece) for piece in splitter.feed(answer[i : i + token_chars]))
    rest = splitter.rest(answer)
    return sent + (message_count("whatsapp", rest) if rest else 0)


def table() -> str:
    modes = ("paragraphs", "auto", "whole")
    assert set(modes) == set(MODES)
    head = f"{'answer':<24} {'chars':>6} {'paras':>5}  " + "  ".join(f"{m:>10}" for m in modes)
    lines = [head, "-" * len(head)]
    totals = dict.fromkeys(modes, 0)
    found = answers()
    for name, answer in found.items():
        counts = {m: messages(answer, m) for m in modes}
        for m in modes:
            totals[m] += counts[m]
        blocks = len([p for p in answer.split("\n\n") if p.strip()])
        cells = "  ".join(f"{counts[m]:>10}" for m in modes)
        lines.append(f"{name:<24} {len(answer):>6} {blocks:>5}  {cells}")
    n = len(found)
    lines.append(f"{'per answer (mean)':<24} {'':>6} {'':>5}  "
                 + "  ".join(f"{totals[m] / n:>10.2f}" for m in modes))
    return "\n".join(lines)
