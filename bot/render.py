"""One Jinja2 environment for everything the bot writes as a page or an e-mail: the web pages
(bot.web.render serves them), the e-mails' bodies, the generated HTML documents' frame. Templates
live under `bot/templates/`; `.html`, `.svg` and `.xml` ones are autoescaped (a name or a model's
text is text, never markup), `.txt` ones (plain-text e-mail bodies) are not.
"""

from __future__ import annotations

from typing import Any

import jinja2

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


def render(template: str, **context: Any) -> str:
    """The named template filled with `context` (in an autoescaped one, every value escaped unless
    marked safe)."""
    return _ENV.get_template(template).render(**context)
