"""LaTeX in an answer reads as maths on a phone: Unicode on WhatsApp (3/4, x², √2, ≤), GSM-7
spellings on SMS (x^2, sqrt(2), <=) so a message stays in 160-character segments; prices, code
and plain text are left alone; PDF and Word documents get the same readable maths."""

from __future__ import annotations

import io

import pytest
from docx import Document as DocxDocument
from pypdf import PdfReader

from bot.channel import formatting
from bot.channel.maths import gsm7_maths, latex_to_text
from bot.documents.convert import parse_document
from bot.documents.docx import build_docx
from bot.documents.pdf import build_pdf

# (what the model wrote, what WhatsApp shows, what the SMS says): collège and lycée answers.
FORMULAS = [
    # fractions
    (r"$\frac{3}{4} + \frac{1}{4} = 1$", "3/4 + 1/4 = 1", "3/4 + 1/4 = 1"),
    (r"$\frac{x+1}{2}$", "(x+1)/2", "(x+1)/2"),
    (r"$\frac{2}{3} \times \frac{9}{4} = \frac{3}{2}$", "2/3 × 9/4 = 3/2", "2/3 x 9/4 = 3/2"),
    (r"$\frac{7}{2} \div \frac{1}{4} = 14$", "7/2 ÷ 1/4 = 14", "7/2 : 1/4 = 14"),
    (r"\(\frac{1}{2} + \frac{1}{3} = \frac{5}{6}\)", "1/2 + 1/3 = 5/6", "1/2 + 1/3 = 5/6"),
    (r"$\dfrac{\pi}{6}$", "π/6", "pi/6"),
    # equations
    (r"$2x + 3 = 7 \Rightarrow x = 2$", "2x + 3 = 7 ⇒ x = 2", "2x + 3 = 7 => x = 2"),
    (r"$x^2 - 5x + 6 = 0$", "x² - 5x + 6 = 0", "x^2 - 5x + 6 = 0"),
    (r"$\Delta = b^2 - 4ac$", "Δ = b² - 4ac", "Δ = b^2 - 4ac"),
    (r"$x_1 = \frac{-b - \sqrt{\Delta}}{2a}$", "x₁ = (-b - √Δ)/(2a)", "x_1 = (-b - sqrt(Δ))/(2a)"),
    (r"$f'(x) = 3x^2 - 2$", "f'(x) = 3x² - 2", "f'(x) = 3x^2 - 2"),
    # Pythagoras and roots
    (r"\[ BC^2 = AB^2 + AC^2 \]", "BC² = AB² + AC²", "BC^2 = AB^2 + AC^2"),
    (r"$BC = \sqrt{3^2 + 4^2} = \sqrt{25} = 5$", "BC = √(3² + 4²) = √25 = 5",
     "BC = sqrt(3^2 + 4^2) = sqrt(25) = 5"),
    (r"$\sqrt{2} \approx 1{,}414$", "√2 ≈ 1,414", "sqrt(2) ~ 1,414"),
    (r"$\sqrt{x+1} = 3$", "√(x+1) = 3", "sqrt(x+1) = 3"),
    (r"$\sqrt[3]{27} = 3$", "∛27 = 3", "27^(1/3) = 3"),
    (r"$x = \pm \sqrt{3}$", "x = ± √3", "x = +/- sqrt(3)"),
    # powers
    (r"$2^3 \times 2^4 = 2^{7}$", "2³ × 2⁴ = 2⁷", "2^3 x 2^4 = 2^7"),
    (r"$(a^m)^n = a^{mn}$", "(a^m)ⁿ = a^(mn)", "(a^m)^n = a^(mn)"),
    (r"$10^{-3} = 0{,}001$", "10⁻³ = 0,001", "10^(-3) = 0,001"),
    (r"$x^{n+1}$", "xⁿ⁺¹", "x^(n+1)"),
    (r"$e^{2x}$", "e^(2x)", "e^(2x)"),
    # inequalities
    (r"$3x - 5 \leq 2x + 1$", "3x - 5 ≤ 2x + 1", "3x - 5 <= 2x + 1"),
    (r"$x \geq -2$ et $x \neq 0$", "x ≥ -2 et x ≠ 0", "x >= -2 et x != 0"),
    (r"$-3 < x \le 5$", "-3 < x ≤ 5", "-3 < x <= 5"),
    # trigonometry, angles, circles
    (r"$\cos(60^\circ) = \frac{1}{2}$", "cos(60°) = 1/2", "cos(60 deg) = 1/2"),
    (r"$\sin^2 x + \cos^2 x = 1$", "sin² x + cos² x = 1", "sin^2 x + cos^2 x = 1"),
    (r"$\tan \alpha = \frac{\sin \alpha}{\cos \alpha}$", "tan α = (sin α)/(cos α)",
     "tan alpha = (sin alpha)/(cos alpha)"),
    (r"$\widehat{ABC} = 30^{\circ}$", "∠ABC = 30°", "angle ABC = 30 deg"),
    (r"$\mathcal{A} = \pi r^2$", "A = π r²", "A = pi r^2"),
    # limits, sums, integrals, sequences
    (r"$\lim_{x \to +\infty} \frac{1}{x} = 0$", "lim(x → +∞) 1/x = 0", "lim(x -> +inf) 1/x = 0"),
    (r"$\sum_{k=1}^{n} k = \frac{n(n+1)}{2}$", "Σₖ₌₁ⁿ k = n(n+1)/2", "Σ_(k=1)^n k = n(n+1)/2"),
    (r"$\int_0^1 x^2 \, dx = \frac{1}{3}$", "∫₀¹ x² dx = 1/3", "int_0^1 x^2 dx = 1/3"),
    (r"$u_{n+1} = 2u_n + 3$", "uₙ₊₁ = 2uₙ + 3", "u_(n+1) = 2u_n + 3"),
    # vectors, sets, probability
    (r"$\vec{u} \cdot \vec{v} = 0$", "u⃗ · v⃗ = 0", "vec(u)*vec(v) = 0"),
    (r"$\overrightarrow{AB} = \overrightarrow{AC} + \overrightarrow{CB}$", "AB⃗ = AC⃗ + CB⃗",
     "vec(AB) = vec(AC) + vec(CB)"),
    (r"$x \in \mathbb{R}$", "x ∈ ℝ", "x in R"),
    (r"$P(A \cap B) = P(A) \times P(B)$", "P(A ∩ B) = P(A) × P(B)", "P(A inter B) = P(A) x P(B)"),
    (r"$\left( \frac{a}{b} \right)^2 = \frac{a^2}{b^2}$", "(a/b)² = a²/b²", "(a/b)^2 = a^2/b^2"),
    (r"$\text{Aire} = \frac{\text{base} \times \text{hauteur}}{2}$", "Aire = (base × hauteur)/2",
     "Aire = (base x hauteur)/2"),
    # too complex for one line: one line per row
    (r"$$\begin{cases} 2x + y = 5 \\ x - y = 1 \end{cases}$$", "2x + y = 5\nx - y = 1",
     "2x + y = 5\nx - y = 1"),
    (r"$f(x) = \begin{cases} x^2 & \text{si } x \geq 0 \\ -x & \text{sinon} \end{cases}$",
     "f(x) =\nx² si x ≥ 0\n-x sinon", "f(x) =\nx^2 si x >= 0\n-x sinon"),
    (r"$$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$$", "(1, 2)\n(3, 4)", "(1, 2)\n(3, 4)"),
    (r"\[\begin{aligned} 2x + y &= 5 \\ x - y &= 1 \end{aligned}\]", "2x + y = 5\nx - y = 1",
     "2x + y = 5\nx - y = 1"),
    (r"Le carré $ABCD$ a pour côté $c$.", "Le carré ABCD a pour côté c.", "Le carré ABCD a pour coté c."),
    # no delimiters at all
    (r"La réponse est \frac{3}{4}.", "La réponse est 3/4.", "La réponse est 3/4."),
    ("On a x^2 = 9, donc x = 3 ou x = -3.", "On a x² = 9, donc x = 3 ou x = -3.",
     "On a x^2 = 9, donc x = 3 ou x = -3."),
]


def transliterated(markdown: str) -> str:
    """The GSM-7 form an SMS takes when its accents and symbols would cost more segments
    (formatting.to_sms picks it or the text as written)."""
    return formatting.to_gsm7(formatting.to_plain(markdown))


def test_the_table_is_a_real_sample() -> None:
    assert len(FORMULAS) >= 30


@pytest.mark.parametrize(("latex", "whatsapp", "sms"), FORMULAS, ids=[f[0][:40] for f in FORMULAS])
def test_a_formula_reads_right_on_whatsapp_and_in_gsm7_on_sms(latex: str, whatsapp: str, sms: str) -> None:
    assert formatting.to_whatsapp(latex) == whatsapp
    assert transliterated(latex) == sms
    assert formatting.is_gsm7(transliterated(latex))
    assert formatting.sms_segments(sms)[0] == "GSM-7"


def test_maths_inside_a_sentence_keeps_the_sentence() -> None:
    answer = "**Étape 1** : on calcule $\\Delta = b^2 - 4ac = 25 - 24 = 1$, donc $\\sqrt{\\Delta} = 1$."
    assert formatting.to_whatsapp(answer) == "*Étape 1* : on calcule Δ = b² - 4ac = 25 - 24 = 1, donc √Δ = 1."
    assert transliterated(answer) == "Étape 1 : on calcule Δ = b^2 - 4ac = 25 - 24 = 1, donc sqrt(Δ) = 1."


@pytest.mark.parametrize("text", [
    "Le cahier coûte 500 $ et le stylo 5$ ou 10$.",
    "Entre 5$, 10$ et 20$ : choisis.",
    "Il a payé $5 ou 10$ hier.",
    "Prix : 1 250 $ (environ 750 000 FCFA).",
])
def test_prices_in_dollars_are_not_maths(text: str) -> None:
    assert latex_to_text(text) == text
    assert formatting.to_whatsapp(text) == text
    assert "$" in transliterated(text) and transliterated(text).count("$") == text.count("$")


def test_code_is_left_as_written() -> None:
    text = "En Python : `x**2` et `r'\\frac{a}{b}'`.\n\n```\nprint(2^3, '$\\alpha$')\n```"
    assert latex_to_text(text) == text
    assert "\\frac{a}{b}" in formatting.to_whatsapp(text) and "'$\\alpha$'" in formatting.to_whatsapp(text)


def test_unicode_maths_the_model_wrote_itself_stays_gsm7_on_sms() -> None:
    assert formatting.to_whatsapp("x² ≤ 4 donc −2 ≤ x ≤ 2") == "x² ≤ 4 donc −2 ≤ x ≤ 2"
    assert transliterated("x² ≤ 4 donc −2 ≤ x ≤ 2") == "x^2 <= 4 donc -2 <= x <= 2"
    assert gsm7_maths("√(x+1) ≠ π · r") == "sqrt(x+1) != pi*r"
    assert transliterated("Tâche n°9 : 30°C") == "Tache no 9 : 30 deg C"  # n° is numéro
    # One square sign would have made the whole SMS UCS-2: 70 characters a segment instead of 160.
    assert not formatting.is_gsm7("x²") and formatting.is_gsm7(transliterated("x²"))
    # A short one keeps its symbols (one segment either way); a long one is transliterated.
    assert formatting.to_sms("x² ≤ 4 donc −2 ≤ x ≤ 2") == "x² ≤ 4 donc −2 ≤ x ≤ 2"
    long = "On a x² ≤ 4, donc −2 ≤ x ≤ 2 : " + "c'est l'ensemble des solutions de l'inéquation. " * 2
    assert formatting.is_gsm7(formatting.to_sms(long)) and formatting.sms_cost(formatting.to_sms(long)) == 1


def test_each_streamed_paragraph_converts_alone_as_the_whole_answer_does() -> None:
    parts = ["On pose $\\Delta = b^2 - 4ac$.", "Ici $\\Delta = 1$, donc $x_1 = \\frac{-5 - 1}{2} = -3$."]
    whole = formatting.to_whatsapp("\n\n".join(parts))
    assert whole == "\n\n".join(formatting.to_whatsapp(p) for p in parts)
    assert whole == "On pose Δ = b² - 4ac.\n\nIci Δ = 1, donc x₁ = (-5 - 1)/2 = -3."


LESSON = {
    "title": "Les fractions",
    "markdown": (
        "# Additionner\n\n"
        "On a $\\frac{1}{4} + \\frac{2}{4} = \\frac{3}{4}$ et $x^2 \\geq 0$.\n\n"
        "- Pythagore : \\[ BC^2 = AB^2 + AC^2 \\]\n"
        "- Racine : $\\sqrt{2} \\approx 1{,}41$\n\n"
        "$$\\begin{cases} x + y = 3 \\\\ x - y = 1 \\end{cases}$$\n"
    ),
}


def test_a_pdf_shows_the_maths_readable() -> None:
    data, _pages = build_pdf(parse_document(LESSON))
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)
    assert "3/4" in text and "x² ≥ 0" in text and "BC² = AB² + AC²" in text and "√2 ≈ 1,41" in text
    assert "x + y = 3" in text and "x - y = 1" in text
    assert "\\frac" not in text and "$" not in text and "\\begin" not in text


def test_a_word_document_shows_the_maths_readable() -> None:
    blocks = {"title": "Les fractions", "blocks": [
        {"type": "paragraph",
         "text": "On a $\\frac{1}{4} + \\frac{2}{4} = \\frac{3}{4}$ et **$x^2 \\geq 0$**."},
        {"type": "bullets", "items": ["$\\sqrt{2} \\approx 1{,}41$"]},
    ]}
    doc = DocxDocument(io.BytesIO(build_docx(parse_document(blocks))))
    text = "\n".join(p.text for p in doc.paragraphs)
    assert "1/4 + 2/4 = 3/4" in text and "x² ≥ 0" in text and "√2 ≈ 1,41" in text
    assert "\\frac" not in text and "$" not in text
