"""One Jinja2 environment for everything the bot writes as a page or an e-mail: the web pages
(bot.web.render serves them), the e-mails' bodies, the generated HTML documents' frame. Templates
live under `bot/templates/`; `.html`, `.svg` and `.xml` ones are autoescaped (a name or a model's
text is text, never markup), `.txt` ones (plain-text e-mail bodies) are not.

Dates and amounts go through bot.formats as filters that read the template's `lang` and `zone`:
`{{ at | when }}` (« mar. 10 mars 2026, 09:00 »), `{{ at | day }}`, `{{ n | number }}`,
`{{ amount | money(currency) }}` (« 12 500 FCFA »); without a `zone`, DEFAULT_TIMEZONE's default.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import jinja2

from bot import formats

__all__ = ["render"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("bot", "templates"),
    autoescape=jinja2.select_autoescape(("html", "svg", "xml"), disabled_extensions=("txt",), default=True),
    undefined=jinja2.StrictUndefined,  # a missing value is a bug, not an empty cell
    trim_blocks=True,
    lstrip_blocks=True,
)
# `tojson` (a page's settings for its script) keeps accented letters as they are; it escapes `<`, `>`,
# `&` and `'` wherever it is used.
_ENV.policies["json.dumps_kwargs"] = {"ensure_ascii": False}


def _lang_zone(context: jinja2.runtime.Context) -> tuple[str | None, str | None]:
    return context.get("lang"), context.get("zone")


@jinja2.pass_context
def _when(context: jinja2.runtime.Context, at: datetime) -> str:
    return formats.when(at, *_lang_zone(context))


@jinja2.pass_context
def _day(context: jinja2.runtime.Context, at: date | datetime | str, year: bool = True) -> str:
    """A date, a moment's day in the zone, or an ISO date's text (« 2026-03-09 »)."""
    return formats.day(date.fromisoformat(at) if isinstance(at, str) else at, *_lang_zone(context), year=year)


@jinja2.pass_context
def _number(context: jinja2.runtime.Context, value: float, decimals: int = 0) -> str:
    return formats.number(value, context.get("lang"), decimals)


@jinja2.pass_context
def _money(context: jinja2.runtime.Context, amount: float, currency: str) -> str:
    return formats.money(amount, currency, context.get("lang"))


_ENV.filters.update(when=_when, day=_day, number=_number, money=_money)


def render(template: str, **context: Any) -> str:
    """The named template filled with `context` (in an autoescaped one, every value escaped unless
    marked safe)."""
    return _ENV.get_template(template).render(**context)
