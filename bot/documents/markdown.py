"""Markdown and HTML documents from structured content, and HTML sanitising."""

from __future__ import annotations

import html as html_lib
import re

import nh3
from markupsafe import Markup

from bot.documents.content import Block, Document, inline_runs
from bot.render import render

# --- Markdown -----------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|])")


def md_escape(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_inline(text: str) -> str:
    out = []
    for run, bold, italic in inline_runs(text):
        piece = md_escape(run)
        out.append(f"**{piece}**" if bold else f"*{piece}*" if italic else piece)
    return "".join(out)


def _md_cell(text: str) -> str:
    return md_inline(text).replace("\n", "<br>") or " "


def _md_items(block: Block) -> list[str]:
    """List items, nested ones indented under their parent (4 spaces: CommonMark and others)."""
    lines, numbers = [], [0] * 4
    for item, level in zip(block.items, block.item_levels(), strict=True):
        numbers[level] += 1
        numbers[level + 1 :] = [0] * (3 - level)
        marker = f"{numbers[level]}." if block.ordered else "-"
        text = md_inline(item).replace("\n", "\n" + "    " * (level + 1))
        lines.append(f"{'    ' * level}{marker} {text}")
    return lines


def build_md(doc: Document) -> str:
    lines = [f"# {md_inline(doc.title)}", ""]
    if doc.subtitle:
        lines += [f"*{md_escape(doc.subtitle)}*", ""]
    for block in doc.blocks:
        if block.type == "heading":
            lines += [f"{'#' * (block.level + 1)} {md_inline(block.text)}", ""]
        elif block.type == "paragraph":
            text = md_inline(block.text).replace("\n", "  \n")
            lines += ["> " + text.replace("\n", "\n> ") if block.quote else text, ""]
        elif block.type == "bullets":
            lines += [*_md_items(block), ""]
        elif block.type == "table":
            header = block.columns or tuple("" for _ in block.rows[0])
            lines.append("| " + " | ".join(_md_cell(c) for c in header) + " |")
            lines.append("|" + "|".join(" --- " for _ in header) + "|")
            for row in block.rows:
                lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
            lines.append("")
        elif block.type == "page_break":
            lines += ["---", ""]
    return "\n".join(lines).rstrip() + "\n"


# --- HTML ---------------------------------------------------------------------------------------

# What model-written HTML may keep: structure and emphasis. No script, style, iframe, form, img,
# object or svg (anything that runs or loads); no event handlers or style attributes (CSS url()).
ALLOWED_TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "caption",
    "code",
    "dd",
    "del",
    "div",
    "dl",
    "dt",
    "em",
    "figcaption",
    "figure",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "ins",
    "kbd",
    "li",
    "mark",
    "ol",
    "p",
    "pre",
    "q",
    "s",
    "section",
    "small",
    "span",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "u",
    "ul",
    "article",
    "header",
    "footer",
    "aside",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"},
    "ol": {"start"},
    "abbr": {"title"},
    "*": {"class"},
}


def sanitize_html(fragment: str) -> str:
    """HTML the model wrote, with everything that could run or load something removed."""
    return nh3.clean(
        fragment,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto", "tel"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def html_inline(text: str) -> str:
    out = []
    for run, bold, italic in inline_runs(text):
        piece = html_lib.escape(run).replace("\n", "<br>")
        out.append(f"<strong>{piece}</strong>" if bold else f"<em>{piece}</em>" if italic else piece)
    return "".join(out)


def _html_block(block: Block) -> str:
    if block.type == "heading":
        level = block.level + 1
        return f"<h{level}>{html_inline(block.text)}</h{level}>"
    if block.type == "paragraph":
        paragraphs = "\n".join(f"<p>{html_inline(p)}</p>" for p in block.text.split("\n\n") if p.strip())
        return f"<blockquote>{paragraphs}</blockquote>" if block.quote else paragraphs
    if block.type == "bullets":
        return _html_list(block)
    if block.type == "table":
        head = ""
        if block.columns:
            head = (
                "<thead><tr>" + "".join(f"<th>{html_inline(c)}</th>" for c in block.columns) + "</tr></thead>"
            )
        body = "".join(
            "<tr>" + "".join(f"<td>{html_inline(c)}</td>" for c in r) + "</tr>" for r in block.rows
        )
        return f'<div class="table"><table>{head}<tbody>{body}</tbody></table></div>'
    if block.type == "page_break":
        return '<hr class="break">'
    return ""


def _html_list(block: Block) -> str:
    """Nested <ul>/<ol>: an item one level deeper opens a list inside the item before it."""
    tag = "ol" if block.ordered else "ul"
    out, depth = [f"<{tag}>"], 0
    for n, (item, level) in enumerate(zip(block.items, block.item_levels(), strict=True)):
        if n:
            if level > depth:
                out.append(f"<{tag}>" * (level - depth))
            else:
                out.append("</li>" + f"</{tag}></li>" * (depth - level))
        depth = level
        out.append(f"<li>{html_inline(item)}")
    out.append("</li>" + f"</{tag}></li>" * depth + f"</{tag}>")
    return "".join(out)


def build_html(doc: Document, raw_html: str = "", lang: str = "fr") -> str:
    """The document as one HTML page (bot/templates/documents/document.html), its blocks made here."""
    parts = [_html_block(b) for b in doc.blocks]
    if raw_html:
        parts.append(sanitize_html(raw_html))
    body = "\n".join(p for p in parts if p)
    page = render("documents/document.html", lang=lang if lang in ("fr", "en") else "fr", title=doc.title,
                  heading=Markup(html_inline(doc.title)), subtitle=doc.subtitle, body=Markup(body))
    return page + "\n"
