"""The fixed part of every model call: the system prompt and the tool schemas, as sent on the wire.

"Fixed" means what does not depend on the person or the turn: the prompt is built with no profile,
no memories and no clock, and the tools are every tool of the mode (every provider configured), so
the figures are the most a call carries before the conversation itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BASELINE_PATH = Path(__file__).with_name("baseline.json")
MODES = ("guest", "child", "pro")
LANGUAGES = ("fr", "en")


def wire_bytes(value: Any) -> int:
    """Bytes of `value` in the request body, serialized the way bot.agent.llm sends it (json.dumps)."""
    return len(json.dumps(value).encode())


def approx_tokens(n_bytes: int) -> int:
    """About 4 bytes per token: no tokenizer is bundled, and the ratio before/after is what counts."""
    return round(n_bytes / 4)


def current_prompt(mode: str, language: str, learner: str = "") -> dict[str, Any]:
    """Today's system prompt and tool schemas for `mode` and `language`, read from the code;
    `learner` adds a student's learner block (bot.learning.learner_block)."""
    import tools
    from bot.agent.prompts import build_system_prompt

    system = build_system_prompt(mode, language=language, learner=learner)
    offered = [t for t in tools.all_tools() if mode in t.modes]
    return {"system": system, "tools": [t.openai_schema() for t in offered]}


def learner_blocks() -> dict[str, str]:
    """Two learner blocks: a usual one (a class, a few skills, items due) and the largest one a
    student can have (the longest class, many skills whose labels are all accented letters, which
    json.dumps sends as six bytes each, a huge count of items due)."""
    from bot.learning import LearnerView, SkillView, learner_block

    def skill(label: str, p: float, status: str) -> SkillView:
        return SkillView(subject="Mathématiques", skill=label, label=label, p_known=p, answers=10, correct=5,
                         status=status)

    usual = (skill("les fractions", 0.97, "mastered"), skill("multiplication", 0.7, "learning"),
             skill("géométrie", 0.2, "review"), skill("accords du participe", 0.3, "review"))
    worst = tuple(skill("é" * 200 + str(n), n / 100, "mastered" if n > 95 else "review") for n in range(100))
    return {"usual": learner_block(LearnerView(level="4e", skills=usual, due=2)),
            "worst": learner_block(LearnerView(level="Ü" * 64, skills=worst, due=10**9))}


def parent_prompt(language: str, family: str = "") -> dict[str, Any]:
    """A parent's fixed prompt: the parents' prompt and the tools that name "parent" (every provider
    configured); `family` adds a parent's children block."""
    from bot.agent.prompts import PARENT

    return current_prompt(PARENT, language, learner=family)


def family_blocks() -> dict[str, str]:
    """Two children blocks of a parent (bot.learning.family_text): a usual one (one child, a class,
    two skills to work on, a week's answers, a task) and the largest one (more children than are
    shown, every field at its longest, in accented letters that json.dumps sends as six bytes)."""
    from bot.learning import ChildFacts, family_text

    usual = ChildFacts("Awa", "4e", ("fractions", "géométrie"), ("Maths 3/4", "Français 2/2"), 1, 2,
                       "Devoirs : fractions pas commencé.")
    long = "é" * 200
    worst = ChildFacts(long, "Ü" * 64, (long,) * 3, (long,) * 4, 10**9, 10**9, long)
    return {"usual": family_text([usual]), "worst": family_text([worst] * 6)}


def baseline_prompt(mode: str, language: str) -> dict[str, Any]:
    """The frozen copy of the prompt before it was made lean (bench/cost/baseline.json)."""
    data = json.loads(BASELINE_PATH.read_text(encoding="utf-8"))
    return {"system": data["system"][f"{mode}/{language}"], "tools": data["tools"][mode]}


def sizes(prompt: dict[str, Any]) -> dict[str, int]:
    """Bytes of the system message and of the `tools` list, their total and its approximate tokens."""
    system = wire_bytes({"role": "system", "content": prompt["system"]})
    schemas = wire_bytes(prompt["tools"]) if prompt["tools"] else 0
    total = system + schemas
    return {"system": system, "tools": schemas, "total": total, "tokens": approx_tokens(total)}


def tool_names(prompt: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in prompt["tools"]}


def freeze_baseline() -> None:
    """Writes today's prompts as the baseline. Run once, before changing prompts or schemas."""
    data = {
        "about": "The fixed prompt before it was made lean: system prompt per mode/language (no "
        "profile, memories or clock) and every tool schema of each mode, as sent to the model.",
        "system": {f"{m}/{lang}": current_prompt(m, lang)["system"] for m in MODES for lang in LANGUAGES},
        "tools": {m: current_prompt(m, "fr")["tools"] for m in MODES},
    }
    BASELINE_PATH.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
