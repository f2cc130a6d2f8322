"""The small pieces: scaling, refusals, what was heard and how a spoken number is read."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from bot.agent import vision
from bot.media import speech


def _image(fmt: str, size: tuple[int, int], mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, 128 if mode == "L" else (10, 120, 200)).save(out, fmt)
    return out.getvalue()


@pytest.mark.parametrize(("fmt", "mode"), [("WEBP", "RGB"), ("PNG", "RGBA"), ("JPEG", "L")])
def test_every_photo_format_becomes_a_bounded_jpeg(fmt: str, mode: str) -> None:
    jpeg = vision.scale_to_jpeg(_image(fmt, (3000, 1000), mode))
    image = Image.open(io.BytesIO(jpeg))
    assert image.format == "JPEG" and image.size == (1568, 523) and len(jpeg) <= vision.MAX_BYTES


def test_a_file_that_is_not_an_image_is_refused_clearly() -> None:
    with pytest.raises(vision.ImageError, match="not a readable image"):
        vision.scale_to_jpeg(b"%PDF-1.7 not a photo")


def test_a_refusal_names_images() -> None:
    refusal = '{"error": {"message": "image_url is only supported by certain models"}}'
    assert vision.refuses_images(400, refusal)
    assert not vision.refuses_images(400, '{"error": {"message": "context length exceeded"}}')
    assert not vision.refuses_images(500, "image service down")


def test_without_images_keeps_the_text_and_the_order() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "Aide"}, vision.image_part(b"a"),
                                             vision.image_part(b"b")]}]
    assert vision.without_images(messages, ["[photo 1]", "[photo 2]"]) == [
        {"role": "user", "content": "Aide\n\n[photo 1]\n\n[photo 2]"}
    ]


def test_what_was_heard_is_shortened() -> None:
    assert speech.heard_prefix("Deux.") == "🎤 « Deux. »"
    long = "aide-moi avec les fractions, je ne comprends vraiment pas du tout comment on les additionne"
    assert speech.heard_prefix(long) == "🎤 « aide-moi avec les fractions, je ne comprends vraiment pas… »"


@pytest.mark.parametrize(("heard", "text"), [
    ("Deux.", "2"), ("deux", "2"), ("La trois !", "3"), ("Réponse quatre.", "4"), ("Two.", "2"),
    ("Deux fois trois ?", "Deux fois trois ?"), ("Stop.", "Stop."),
])
def test_a_lone_spoken_number_is_read_as_the_digit(heard: str, text: str) -> None:
    assert speech.as_message_text(heard) == text
