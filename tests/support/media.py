"""Media for the tests: images made for them (a large photo, a page of known French text), and the
key the media harness gives the speech stand-ins (tests/media/conftest.py)."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont

SPEECH_KEY = "test-speech-key"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
FRENCH_LINES = ("Exercice 3 : calcule la somme", "des fractions suivantes", "Question deux")


def large_photo(width: int = 4000, height: int = 3000) -> bytes:
    """A noisy JPEG of several megabytes, like a phone camera's."""
    bands = [Image.effect_noise((width, height), 90) for _ in range(3)]
    image = Image.merge("RGB", bands)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=95)
    return out.getvalue()


def small_png(width: int = 300, height: int = 200) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def french_page(lines: tuple[str, ...] = FRENCH_LINES) -> bytes:
    """Black French text on white, as a JPEG photo of a page."""
    font = ImageFont.truetype(FONT, 56)
    image = Image.new("RGB", (1400, 120 + 100 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((60, 60 + 100 * i), line, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90)
    return out.getvalue()


def blank_photo() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (800, 600), (235, 235, 230)).save(out, "JPEG")
    return out.getvalue()


def decode(data_url: str) -> Image.Image:
    import base64

    head, _, payload = data_url.partition(",")
    assert head == "data:image/jpeg;base64", head
    return Image.open(io.BytesIO(base64.b64decode(payload)))
