"""System prompts per mode, from the editable files in bot/prompts/.

The prompt is a stable prefix (the mode's file, then common.md) followed by what is specific to
the user (profile, language, saved memories). Only the end changes between users and turns, so
providers' prompt caching applies to the prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROMPTS_DIR = Path(__file__).with_name("prompts")
MODES = ("child", "pro", "guest")
MAX_MEMORIES = 30
MAX_MEMORY_CHARS = 300


def read_prompt(name: str) -> str:
    path = PROMPTS_DIR / f"{name}.md"
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""


def stable_prefix(mode: str) -> str:
    mode = mode if mode in MODES else "guest"
    return read_prompt(mode) + "\n\n" + read_prompt("common")


def _profile_lines(user: Any) -> list[str]:
    lines = []
    name = getattr(user, "display_name", None)
    if name:
        lines.append(f"- Prénom / nom : {name}")
    level = getattr(user, "school_level", None)
    if level:
        lines.append(f"- Classe / niveau : {level}")
    role = getattr(user, "role", None)
    if role:
        lines.append(f"- Rôle : {role}")
    tz = getattr(user, "timezone", None)
    if tz:
        lines.append(f"- Fuseau horaire : {tz}")
    return lines


def build_system_prompt(
    mode: str,
    *,
    user: Any = None,
    language: str = "fr",
    memories: Sequence[str] = (),
    today: str | None = None,
) -> str:
    parts = [stable_prefix(mode), "", "# Cette personne"]
    profile = _profile_lines(user) if user is not None else []
    parts.extend(profile or ["- (profil non renseigné)"])
    if language == "en":
        parts.append("- Language: this person chose English. Answer in English.")
    else:
        parts.append("- Langue préférée : français (passe à l'anglais si la personne écrit en anglais).")
    if memories:
        parts.append("")
        parts.append("# Ce que tu as retenu sur cette personne (save_memory)")
        for fact in list(memories)[-MAX_MEMORIES:]:
            parts.append(f"- {fact.strip()[:MAX_MEMORY_CHARS]}")
    if today:
        parts.append("")
        parts.append(f"Date du jour : {today}")
    return "\n".join(parts)
