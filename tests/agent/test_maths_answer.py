"""A model answer written with LaTeX arrives at Twilio as readable maths: Unicode on WhatsApp, in
each streamed part, and GSM-7 text on SMS."""

from __future__ import annotations

from typing import Any

from bot.channel import formatting

PHONE = "+2250700000471"

# Two paragraphs, each long enough (STREAM_MIN_CHARS) to leave as its own WhatsApp message.
P1 = ("Pour résoudre $x^2 - 5x + 6 = 0$, on calcule le discriminant : "
      "$$\\Delta = b^2 - 4ac = 25 - 24 = 1$$ "
      "Comme $\\Delta > 0$, l'équation a deux solutions, et on utilise la formule du cours "
      "que tu connais déjà bien pour les trouver une par une.")
P2 = ("Les solutions sont $x_1 = \\frac{5 - \\sqrt{\\Delta}}{2} = 2$ et "
      "\\(x_2 = \\frac{5 + \\sqrt{\\Delta}}{2} = 3\\). Vérifie : $2^2 - 5 \\times 2 + 6 = 0$, "
      "et pour finir, $3 \\geq 2$. Le prix du livre reste 5$ ou 10$.")
ANSWER = f"{P1}\n\n{P2}"


async def test_a_latex_answer_reaches_whatsapp_readable_in_each_part(make_harness: Any) -> None:
    h = await make_harness(WHATSAPP_STREAM="paragraphs")  # each paragraph its own message
    await h.make_user(PHONE)
    h.llm.push_text(ANSWER, chunk_delay_s=0.01)
    await h.inbound(PHONE, "Résous x² - 5x + 6 = 0")
    await h.settle()
    bodies = await h.texts_to(PHONE)
    assert bodies == [
        "Pour résoudre x² - 5x + 6 = 0, on calcule le discriminant : Δ = b² - 4ac = 25 - 24 = 1 "
        "Comme Δ > 0, l'équation a deux solutions, et on utilise la formule du cours "
        "que tu connais déjà bien pour les trouver une par une.",
        "Les solutions sont x₁ = (5 - √Δ)/2 = 2 et x₂ = (5 + √Δ)/2 = 3. Vérifie : 2² - 5 × 2 + 6 = 0, "
        "et pour finir, 3 ≥ 2. Le prix du livre reste 5$ ou 10$.",
    ]
    assert not any("\\" in b for b in bodies)


async def test_a_latex_answer_reaches_sms_in_gsm7(harness: Any) -> None:
    h = harness
    await h.make_user(PHONE, last_channel="sms")
    h.llm.push_text(ANSWER)
    await h.inbound(PHONE, "Resous x^2 - 5x + 6 = 0", channel="sms")
    await h.settle()
    bodies = await h.texts_to(PHONE)
    text = "\n\n".join(bodies)
    assert "x^2 - 5x + 6 = 0" in text and "Δ = b^2 - 4ac = 25 - 24 = 1" in text
    assert "x_1 = (5 - sqrt(Δ))/2 = 2" in text and "x_2 = (5 + sqrt(Δ))/2 = 3" in text
    assert "2^2 - 5 x 2 + 6 = 0" in text and "3 >= 2" in text and "5$ ou 10$" in text
    assert all(formatting.is_gsm7(b) for b in bodies)
    assert "\\" not in text
