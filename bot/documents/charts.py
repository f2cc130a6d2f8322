"""Charts, drawn once by matplotlib for both targets: a PNG for WhatsApp (an image a phone shows
without a browser) and an SVG inlined in a page (sharp at any width, no outside resource). One
style for every chart of the bot; the charts themselves live with what they show (the progress
chart, the dashboard's).

matplotlib runs headless (the Agg backend) and is not thread-safe through pyplot, so figures are
made with `Figure` directly (no global state) and drawn off the event loop by the callers
(`asyncio.to_thread`)."""

from __future__ import annotations

import io
import re
from typing import Literal

import matplotlib

matplotlib.use("Agg")  # before any other matplotlib import: no display here

from matplotlib.figure import Figure

__all__ = ["ACCENT", "BAD", "GOOD", "MUTED", "WARN", "Format", "figure_bytes", "new_figure", "svg_text"]

Format = Literal["png", "svg"]

# Colours readable by people with the common colour blindnesses (Okabe-Ito), with a grey for context.
GOOD = "#009E73"
WARN = "#E69F00"
BAD = "#D55E00"
ACCENT = "#0072B2"
MUTED = "#8A8A8A"

matplotlib.rcParams.update({
    "font.family": "DejaVu Sans",  # installed with the bot (fonts-dejavu-core): accents, no download
    "font.size": 12,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titleweight": "bold",
    "axes.titlesize": 14,
    "svg.fonttype": "none",  # text stays text in the SVG: searchable, selectable, small
    "svg.hashsalt": "deblo",  # stable ids, so one chart's SVG is the same bytes twice
})


def new_figure(width_in: float, height_in: float) -> Figure:
    """A figure of that size in inches (PNG pixels = inches × dpi given to `figure_bytes`)."""
    return Figure(figsize=(width_in, height_in), layout="constrained")


def figure_bytes(fig: Figure, fmt: Format, *, dpi: int = 100) -> bytes:
    """The figure as PNG or SVG bytes. An SVG has no metadata date, so equal charts are equal bytes."""
    out = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else None
    fig.savefig(out, format=fmt, dpi=dpi, metadata=metadata)
    return out.getvalue()


_XML_HEAD = re.compile(r"^\s*<\?xml[^>]*>\s*(<!DOCTYPE[^>]*>\s*)?", re.S)


def svg_text(fig: Figure, *, title: str) -> str:
    """The figure as an `<svg>` element to inline in a page: no XML prolog, `role="img"` with an
    accessible name (the page also shows the numbers in a table beside it)."""
    body = _XML_HEAD.sub("", figure_bytes(fig, "svg").decode())
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return body.replace("<svg ", f'<svg role="img" aria-label="{safe_title}" ', 1)
