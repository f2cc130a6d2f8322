"""Pages as a phone photographs them, made here with Pillow: a document's text printed on a page,
then the camera's faults: a slight skew, low contrast and a grey cast, uneven light, sensor noise,
a little blur, JPEG at a phone's quality. Deterministic for a given seed."""

from __future__ import annotations

import io
import random
import textwrap

from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
WIDTH, MARGIN = 1400, 70
MAX_LINES = 34  # one page: the rest of a long document is left out, as a photo of its first page


def _printed(title: str, text: str, size: int) -> Image.Image:
    font, heading = ImageFont.truetype(FONT, size), ImageFont.truetype(BOLD, size + 8)
    lines = [line for paragraph in text.split("\n") for line in (textwrap.wrap(paragraph, 52) or [""])]
    lines = lines[:MAX_LINES]
    step = int(size * 1.45)
    page = Image.new("L", (WIDTH, 2 * MARGIN + step * (len(lines) + 2)), 255)
    draw = ImageDraw.Draw(page)
    draw.text((MARGIN, MARGIN), title, fill=0, font=heading)
    for i, line in enumerate(lines, start=2):
        draw.text((MARGIN, MARGIN + step * i), line, fill=0, font=font)
    return page


def photograph(title: str, text: str, seed: int = 0) -> bytes:
    """A JPEG of the page as a phone takes it (the title is its first line)."""
    rng = random.Random(seed)
    page = _printed(title, text, rng.choice((30, 32, 34)))
    # Low contrast: ink never black, paper never white (a faded copy, a dim room).
    low, high = rng.randint(50, 90), rng.randint(165, 200)
    page = page.point(lambda v: low + (high - low) * v // 255)
    page = page.rotate(rng.uniform(-3.0, 3.0), resample=Image.Resampling.BICUBIC, expand=True, fillcolor=high)
    # Uneven light: darker towards one side.
    shade = Image.linear_gradient("L").resize(page.size).rotate(rng.choice((0, 90, 180, 270)))
    page = Image.composite(page, page.point(lambda v: int(v * 0.8)), shade)
    noise = Image.effect_noise(page.size, rng.uniform(12, 22))
    page = Image.blend(page, noise, 0.12).filter(ImageFilter.GaussianBlur(rng.uniform(0.4, 0.9)))
    tint = Image.merge("RGB", (page, page, page.point(lambda v: int(v * 0.92))))  # a warm lamp
    out = io.BytesIO()
    tint.save(out, "JPEG", quality=rng.randint(70, 85))
    return out.getvalue()
