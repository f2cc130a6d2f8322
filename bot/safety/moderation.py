"""Distress judged by an OpenAI-compatible moderation endpoint (MODERATION_BASE_URL), when one is
configured: `POST {base}/moderations` with `{"model", "input"}`, read as OpenAI answers it
(`results[0].flagged`, `categories`, `category_scores`).

The categories that say a child may be in danger map to ours: `self-harm` and its `/intent` and
`/instructions` to self_harm, `sexual/minors` to sexual_abuse, `harassment/threatening` to threats,
`violence` to abuse_home. The others (hate, illicit, plain sexual or harassment) are not distress and raise no
flag. A model cannot tell a victim from an author, so the phrase list stays the first judge and
this endpoint catches what it misses (other words, other languages).

Any failure (no answer within MODERATION_TIMEOUT_S, an HTTP error, a malformed body) is logged and
is « not flagged »: the phrase list has spoken already, and the child's answer does not wait.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from bot.config import Settings
from bot.services import Services

log = logging.getLogger(__name__)

__all__ = ["MODERATION_CATEGORIES", "moderate", "read_result"]

# The endpoint's category → ours, most serious first (the first flagged one wins).
MODERATION_CATEGORIES = (
    ("self-harm/intent", "self_harm"), ("self-harm", "self_harm"), ("self-harm/instructions", "self_harm"),
    ("sexual/minors", "sexual_abuse"), ("harassment/threatening", "threats"), ("violence", "abuse_home"),
)


def read_result(body: Any) -> str | None:
    """Our category from a moderation response, None when it flags nothing we act on."""
    if not isinstance(body, dict) or not isinstance(body.get("results"), list) or not body["results"]:
        raise ValueError("no results in the moderation response")
    result = body["results"][0]
    if not isinstance(result, dict) or not isinstance(result.get("categories"), dict):
        raise ValueError("no categories in the moderation response")
    if not result.get("flagged"):
        return None
    categories = result["categories"]
    return next((ours for theirs, ours in MODERATION_CATEGORIES if categories.get(theirs) is True), None)


def _key(settings: Settings) -> str:
    return settings.safety.moderation_api_key or settings.llm_api_key


async def moderate(services: Services, text: str) -> str | None:
    """Our category for `text` by the moderation endpoint; None when not configured, not flagged,
    or the endpoint failed (logged)."""
    safety = services.settings.safety
    if not safety.moderation_base_url or not text.strip():
        return None
    key = _key(services.settings)
    try:
        response = await services.http.post(
            f"{safety.moderation_base_url}/moderations",
            json={"model": safety.moderation_model, "input": text},
            headers={"Authorization": f"Bearer {key}"} if key else {},
            timeout=httpx.Timeout(safety.moderation_timeout_s),
        )
        response.raise_for_status()
        return read_result(response.json())
    except (httpx.HTTPError, ValueError) as exc:
        log.warning("moderation endpoint failed; the phrase list alone decides",
                    extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
        return None
