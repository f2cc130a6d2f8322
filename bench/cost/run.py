"""Fixed prompt per model call, per mode and language: before (bench/cost/baseline.json, the
prompt and full schemas as they were) and after (the code as it is); then whole turns, the time to
the first WhatsApp message, the WhatsApp messages per answer (bench/cost/messages.py) and per file
(bench/cost/files.py).
Run: `.venv/bin/python -m bench.cost`. With `--week`: a reference learner's week through the whole
bot instead, its WhatsApp messages per learner message and their cost (bench/cost/week.py).

Bytes are those of the request body as bot.agent.llm serializes it; tokens are about bytes / 4. Every
call of a turn carries this prefix, so a turn of n calls carries it n times.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.compare import Figure, add_arguments, compare, report  # noqa: E402
from bench.cost import files, messages, turns, week  # noqa: E402
from bench.cost.measure import (  # noqa: E402
    LANGUAGES,
    MODES,
    baseline_prompt,
    current_prompt,
    learner_blocks,
    sizes,
    tool_names,
)
from bench.cost.turns import TOKENS_PER_CREDIT  # noqa: E402

COLUMNS = ("mode", "lang", "tools", "system B", "schemas B", "total B", "~tokens", "ratio")


def rows() -> list[tuple[str, ...]]:
    out = []
    for mode in MODES:
        for lang in LANGUAGES:
            before, after = baseline_prompt(mode, lang), current_prompt(mode, lang)
            b, a = sizes(before), sizes(after)
            for label, s, prompt in (("before", b, before), ("after", a, after)):
                ratio = f"{a['total'] / b['total']:.3f}" if label == "after" else ""
                out.append((
                    f"{mode} {label}", lang, str(len(tool_names(prompt))), str(s["system"]),
                    str(s["tools"]), str(s["total"]), str(s["tokens"]), ratio,
                ))
    return out


def table(lines: list[tuple[str, ...]]) -> str:
    widths = [max(len(c), *(len(r[i]) for r in lines)) for i, c in enumerate(COLUMNS)]
    fmt = "  ".join(f"{{:<{w}}}" if i < 2 else f"{{:>{w}}}" for i, w in enumerate(widths))
    head = [fmt.format(*COLUMNS), fmt.format(*("-" * w for w in widths))]
    return "\n".join(head + [fmt.format(*r) for r in lines])


def learner_line() -> str:
    """A student's call: the fixed prompt plus their learner block (after the cached prefix)."""
    fixed = sizes(current_prompt("child", "fr"))["total"]
    parts = []
    for name, block in learner_blocks().items():
        total = sizes(current_prompt("child", "fr", learner=block))["total"]
        parts.append(f"{name} block {len(block.encode())} B UTF-8: {total} B per call")
    return (f"Child mode, French, with a student's learner block (after the cached prefix; fixed part "
            f"alone {fixed} B): " + "; ".join(parts))


def per_turn() -> list[str]:
    """The fixed prompt over a whole turn: every model call of the turn carries it again."""
    lines = []
    for mode in ("child", "pro"):
        before = sizes(baseline_prompt(mode, "fr"))["tokens"]
        after = sizes(current_prompt(mode, "fr"))["tokens"]
        for calls in (1, 2, 10):
            lines.append(
                f"{mode:<6} {calls:>2} calls: ~{before * calls:>6} tokens before, ~{after * calls:>6} after"
            )
    return lines


FIGURES = {
    **{f"prompt_{m}_{lang}": Figure(f"{m}/{lang} prompt B", False, 0) for m in MODES for lang in LANGUAGES},
    **{f"turn_{m}_{name}": Figure(f"{m} {name} tokens", False, 0) for m in ("child", "pro")
       for name in turns.SCENARIOS},
    "first_message": Figure("first message s", False), "messages": Figure("messages/answer", False),
    "messages_per_file": Figure("messages/file", False),
}


def figures(turn_rows: list[dict], first_after: float) -> dict[str, float]:
    """The current code's side only ("after"): what a regression would move."""
    found = messages.answers()
    return {
        **{f"prompt_{m}_{lang}": float(sizes(current_prompt(m, lang))["total"]) for m in MODES
           for lang in LANGUAGES},
        **{f"turn_{r['mode']}_{r['scenario']}": float(r["tokens/turn"]) for r in turn_rows
           if r["version"] == "after"},
        "first_message": first_after,
        "messages": sum(messages.messages(a, "auto") for a in found.values()) / len(found),
        "messages_per_file": files.per_file(),
    }


WEEK_FIGURES = {
    "week_messages": Figure("week's WhatsApp messages", False, 0),
    "week_per_message": Figure("sent per learner message", False),
    "week_month_usd": Figure("month's messages USD", False),
}


def week_report(args: argparse.Namespace) -> None:
    found = week.run()
    values = {"week_messages": float(found.outbound), "week_per_message": found.per_message,
              "week_month_usd": found.month_usd()}
    if args.json:
        report("bench.cost", WEEK_FIGURES, values)
        return
    print(f"A reference learner's week through the whole bot: {week.SESSIONS} sessions of "
          f"{week.TURNS_PER_SESSION} messages (bench/cost/week.py); cost: {week.PRICES}")
    print(week.table(None, found))
    print("\nWhatsApp messages each learner message brought:")
    print(week.turns_table(found))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cost", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--week", action="store_true",
                        help="a reference learner's week through the whole bot: messages and their cost")
    args = parser.parse_args()
    if compare(args, "bench.cost", WEEK_FIGURES if args.week else FIGURES):
        return
    if args.week:
        week_report(args)
        return
    prompts = {"before": {m: baseline_prompt(m, "fr") for m in ("child", "pro")},
               "after": {m: current_prompt(m, "fr") for m in ("child", "pro")}}
    if args.json:
        first = asyncio.run(turns.first_message())["after"]
        report("bench.cost", FIGURES, figures(turns.run(prompts), first))
        return
    print("Fixed prompt per model call (system prompt + tool schemas), bytes as sent")
    print(table(rows()))
    print("\n" + learner_line())
    print("\nFixed prompt per turn, French (plain answer: 1 call; quiz or document: 2; long turn: 10)")
    print("\n".join(per_turn()))
    print("\nWhole turns through the loop, French; cached share as the provider's prefix cache gives it;")
    print(f"credits at {TOKENS_PER_CREDIT} tokens each, cached tokens in full before and at 0.25 after")
    print(turn_table(turns.run(prompts)))
    times = asyncio.run(turns.first_message())
    print(f"\nFirst WhatsApp message after the model's first token, {int(times['chars'])}-character answer "
          f"at {turns.TOKENS_PER_S} tokens/s: {times['before']:.2f} s whole (before), "
          f"{times['after']:.2f} s paragraph by paragraph (WHATSAPP_STREAM=paragraphs; auto, the default, "
          f"sends an answer that fits one message at its end)")
    print("\nWhatsApp messages per answer (each one billed), by WHATSAPP_STREAM: paragraphs (before),")
    print("auto (after: paragraphs merged up to 1,600 characters, each message sent once full), whole")
    print(messages.table())
    print("\nWhatsApp messages per file (each one billed): before, a caption then the file with an empty")
    print("body; after, the caption as the file's body when it fits 1,024 characters (bench/cost/files.py)")
    print(files.table())
    print("\nA reference learner's week, its messages and their cost: python -m bench.cost --week")


def turn_table(rows: list[dict]) -> str:
    cols = list(rows[0])
    lines = [[str(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(line[i]) for line in lines)) for i, c in enumerate(cols)]
    fmt = "  ".join(f"{{:<{w}}}" if i < 3 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return "\n".join([fmt.format(*cols), fmt.format(*("-" * w for w in widths)),
                      *(fmt.format(*line) for line in lines)])


if __name__ == "__main__":
    main()
