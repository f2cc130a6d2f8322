"""Maths written in LaTeX made readable where nothing renders LaTeX: WhatsApp, SMS and documents.

Models write `\\frac{3}{4}`, `x^2` or `$\\sqrt{2}$`, which a phone shows raw. `latex_to_text` turns
every formula (between `$…$`, `$$…$$`, `\\(…\\)`, `\\[…\\]`, or bare commands in a line) into
Unicode text: 3/4, x², √2, ≤, π, 30°. What is too complex for one line (matrices, systems, cases)
becomes one line per row. pylatexenc parses; the rendering rules are ours. A `$` that is a price
(« 500 $ », « 5$ et 10$ ») is no delimiter: an opening `$` follows no digit or letter, a closing
one is followed by none, and what lies between must look like maths.

`gsm7_maths` spells the Unicode maths characters that GSM-7 lacks (x^2, sqrt(2), <=, !=, pi) so
an SMS stays in 160-character segments instead of switching to UCS-2 (70 a segment).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pylatexenc import latexwalker as lw
from pylatexenc.macrospec import EnvironmentSpec, MacroSpec

__all__ = ["gsm7_maths", "latex_to_text"]

_SUP = dict(zip("0123456789+-=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ", strict=True))
_SUB = dict(zip("0123456789+-=()nijk", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₙᵢⱼₖ", strict=True))

_GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ",
    "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ",
    "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ",
    "Upsilon": "Υ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}
_SYMBOLS = _GREEK | {
    "times": "×", "div": "÷", "cdot": "·", "pm": "±", "mp": "∓", "ast": "*", "star": "⋆",
    "leq": "≤", "le": "≤", "leqslant": "≤", "geq": "≥", "ge": "≥", "geqslant": "≥",
    "neq": "≠", "ne": "≠", "approx": "≈", "simeq": "≈", "sim": "~", "equiv": "≡", "propto": "∝",
    "infty": "∞", "circ": "°", "degree": "°", "prime": "′", "to": "→", "rightarrow": "→",
    "longrightarrow": "→", "mapsto": "↦", "Rightarrow": "⇒", "implies": "⇒", "Leftarrow": "⇐",
    "Leftrightarrow": "⇔", "iff": "⇔", "Longleftrightarrow": "⇔", "in": "∈", "notin": "∉",
    "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩", "setminus": "∖", "emptyset": "∅",
    "varnothing": "∅", "forall": "∀", "exists": "∃", "partial": "∂", "nabla": "∇", "perp": "⊥",
    "parallel": "∥", "angle": "∠", "triangle": "△", "ldots": "…", "cdots": "…", "dots": "…",
    "sum": "Σ", "prod": "Π", "int": "∫", "iint": "∬", "oint": "∮", "wedge": "∧", "vee": "∨",
    "neg": "¬", "langle": "⟨", "rangle": "⟩", "lvert": "|", "rvert": "|", "vert": "|",
    "mid": "|", "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "|": "‖",
    "%": "%", "$": "$", "&": "&", "#": "#", "_": "_", "{": "{", "}": "}",
    ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": " ", "qquad": " ", "\\": "\n",
    "left": "", "right": "", "displaystyle": "", "limits": "", "nolimits": "",
}
_FUNCTIONS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh ln log exp lim liminf limsup "
    "max min sup inf det gcd deg dim ker arg".split()
)
_SETS = {"N": "ℕ", "Z": "ℤ", "Q": "ℚ", "R": "ℝ", "C": "ℂ"}
# Macros whose argument is shown as it is.
_CONTENT = frozenset(
    "text textrm textit textbf textsf mathrm mathit mathbf mathsf mathcal operatorname "
    "boxed mbox hbox overline underline".split()
)
_BRACKETS = {"pmatrix": ("(", ")"), "bmatrix": ("[", "]"), "Bmatrix": ("{", "}"),
             "vmatrix": ("|", "|"), "Vmatrix": ("‖", "‖"), "matrix": ("", ""), "smallmatrix": ("", "")}


def _context() -> lw.LatexContextDb:
    db = lw.get_default_latex_context_db()
    one = ("vec", "overrightarrow", "widehat", "hat", "bar", "mathbb", "dot", "tilde", "boxed",
           "operatorname", "text", "mathrm", "mathbf", "mathit", "mathcal", "overline")
    db.add_context_category(
        "deblo-maths", prepend=True,
        macros=[MacroSpec(name, "{") for name in one]
        + [MacroSpec(name, "{{") for name in ("frac", "dfrac", "tfrac", "cfrac", "binom")]
        + [MacroSpec("sqrt", "[{")],
        environments=[EnvironmentSpec("array", "{")],
    )
    return db


_DB = _context()

# --- Rendering: nodes to text ----------------------------------------------------------------

Atom = tuple[str, str]  # (text, kind): kind "char", "big" (lim, max…: subscript in brackets) or "node"


def _script(body: str, table: dict[str, str], mark: str) -> str:
    body = body.strip()
    if body in ("°", "′", "*", "'"):
        return body
    if body and all(ch in table for ch in body):
        return "".join(table[ch] for ch in body)
    return f"{mark}{body}" if len(body) == 1 or _balanced_parens(body) else f"{mark}({body})"


def _balanced_parens(text: str) -> bool:
    """`(…)` whose brackets hold all of it: (x+1), not (a)(b)."""
    inner = _strip_groups(text[1:-1])
    return text.startswith("(") and text.endswith(")") and "(" not in inner and ")" not in inner


def _strip_groups(text: str) -> str:
    while True:
        shorter = re.sub(r"\([^()]*\)", "", text)
        if shorter == text:
            return text
        text = shorter


def _operand(text: str, numerator: bool = True) -> str:
    """An operand of `/` or `√`: as it is when it is one term, else in brackets. Below the bar,
    only a number or one letter goes bare: 1/2a would read as a half of a."""
    text = text.strip()
    core = text[1:] if numerator and text.startswith("-") else text
    if not numerator and not re.fullmatch(r"[\d.,]+|\w[⁰¹²³⁴-⁹ⁿ′\u20d7]*", text):
        return text if _balanced_parens(text) else f"({text})"
    if core and not re.search(r"[\s+\-−=<>/±×÷·:,;≤≥≠]", _strip_groups(core)):
        return text
    return text if _balanced_parens(text) else f"({text})"


def _arg(node: lw.LatexNode, index: int) -> str:
    args = node.nodeargd.argnlist if node.nodeargd is not None else []
    return _render([args[index]]) if index < len(args) and args[index] is not None else ""


def _root(node: lw.LatexNode) -> str:
    index, body = _arg(node, 0).strip(), _arg(node, 1)
    sign = {"": "√", "2": "√", "3": "∛", "4": "∜"}.get(index)
    if sign is None:
        if not all(ch in _SUP for ch in index):
            return f"{_operand(body)}^(1/{index})"
        sign = "".join(_SUP[ch] for ch in index) + "√"
    return sign + _operand(body)


def _accent(name: str, body: str) -> str:
    if name in ("vec", "overrightarrow"):
        return body.strip() + "\u20d7"
    if name == "widehat":
        return "∠" + body.strip()
    marks = {"hat": "\u0302", "bar": "\u0304", "dot": "\u0307", "tilde": "\u0303"}
    return body.strip() + marks[name] if len(body.strip()) == 1 else body


def _macro(node: lw.LatexMacroNode) -> Atom:
    name = node.macroname
    space = " " if node.macro_post_space and not (node.nodeargd and node.nodeargd.argnlist) else ""
    if name in ("frac", "dfrac", "tfrac", "cfrac"):
        return f"{_operand(_arg(node, 0))}/{_operand(_arg(node, 1), numerator=False)}", "node"
    if name == "binom":
        return f"C({_arg(node, 0).strip()}, {_arg(node, 1).strip()})", "node"
    if name == "sqrt":
        return _root(node), "node"
    if name == "mathbb":
        body = _arg(node, 0).strip()
        return _SETS.get(body, body), "node"
    if name in ("vec", "overrightarrow", "widehat", "hat", "bar", "dot", "tilde"):
        return _accent(name, _arg(node, 0)), "node"
    if name in _CONTENT:
        return _arg(node, 0), "node"
    if name in _FUNCTIONS:
        return name + space, "big" if name in ("lim", "max", "min", "sup", "inf") else "node"
    if name in _SYMBOLS:
        text = _SYMBOLS[name]
        return text + space if text.strip() else text, "node"
    return name + space, "node"


def _environment(node: lw.LatexEnvironmentNode) -> str:
    name = node.environmentname.rstrip("*")
    rows: list[list[str]] = [[]]
    cell: list[lw.LatexNode] = []
    for child in node.nodelist or []:
        if isinstance(child, lw.LatexSpecialsNode) and child.specials_chars == "&":
            rows[-1].append(_render(cell).strip())
            cell = []
        elif isinstance(child, lw.LatexMacroNode) and child.macroname == "\\":
            rows[-1].append(_render(cell).strip())
            rows.append([])
            cell = []
        else:
            cell.append(child)
    rows[-1].append(_render(cell).strip())
    rows = [row for row in rows if any(row)]
    if name in _BRACKETS:
        left, right = _BRACKETS[name]
        return "\n".join(f"{left}{', '.join(row)}{right}" for row in rows)
    lines = [re.sub(r"\s+", " ", " ".join(row)).strip() for row in rows]
    return "\n" + "\n".join(lines) + "\n" if name == "cases" else "\n".join(lines)


def _atoms(nodes: Sequence[lw.LatexNode | None]) -> list[Atom]:
    atoms: list[Atom] = []
    for node in nodes:
        if node is None or isinstance(node, lw.LatexCommentNode):
            continue
        if isinstance(node, lw.LatexCharsNode):
            atoms.extend((ch, "char") for ch in node.chars)
        elif isinstance(node, lw.LatexGroupNode):
            atoms.append((_render(node.nodelist), "node"))
        elif isinstance(node, lw.LatexMacroNode):
            atoms.append(_macro(node))
        elif isinstance(node, lw.LatexEnvironmentNode):
            atoms.append((_environment(node), "node"))
        elif isinstance(node, lw.LatexMathNode):
            atoms.append((_render(node.nodelist), "node"))
        elif isinstance(node, lw.LatexSpecialsNode):
            atoms.append((" " if node.specials_chars == "~" else node.specials_chars, "node"))
        else:
            atoms.append((node.latex_verbatim(), "node"))
    return atoms


def _render(nodes: Sequence[lw.LatexNode | None] | None) -> str:
    atoms = _atoms(nodes or [])
    out: list[str] = []
    big = False  # the last atom was lim, max…: its subscript reads best as lim(x → 0)
    i = 0
    while i < len(atoms):
        text, kind = atoms[i]
        if kind == "char" and text in "^_" and i + 1 < len(atoms):
            j = i + 1
            while j < len(atoms) - 1 and atoms[j] == (" ", "char"):
                j += 1
            body = atoms[j][0]
            if big and text == "_" and body.strip():
                out.append(f"({body.strip()})" if not _balanced_parens(body.strip()) else body.strip())
            else:
                out.append(_script(body, _SUP if text == "^" else _SUB, text))
            i = j + 1
            continue
        big = kind == "big" or (big and text == " ")
        out.append(text)
        i += 1
    return "".join(out)


def _formula(source: str) -> str:
    """One formula's LaTeX (no delimiters) as text; the source as it is when it does not parse."""
    source = re.sub(r"(?<!\\)%", r"\\%", source)
    try:
        nodes, _pos, _len = lw.LatexWalker(source, latex_context=_DB, tolerant_parsing=True).get_latex_nodes()
        text = _render(nodes)
    except Exception:  # a formula it cannot read must never stop the message: sent as written
        return source
    text = re.sub(r"[ \t]+\n", "\n", re.sub(r"\n[ \t]*\n+", "\n", text))
    text = re.sub(r"([(\[])[ \t]+|[ \t]+(?=[)\]])", r"\1", text)
    return re.sub(r"(?<=\S)[ \t]{2,}", " ", text).strip(" \t")


# --- Finding the formulas in an answer --------------------------------------------------------

_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_DELIMITED = re.compile(
    r"\$\$(?P<display>.+?)\$\$"
    r"|\\\[(?P<bracket>.+?)\\\]"
    r"|\\\((?P<paren>.+?)\\\)"
    # An inline $…$: opened after no digit or letter, closed before none, on one line.
    r"|(?<![\w$\\])\$(?=[^\s$])(?P<inline>[^$\n]*?[^\s$\\])\$(?![\w$])",
    re.S,
)
_MATHS_SIGN = re.compile(r"[\\^_={}<>+\-*/()|]|^[^\W\d_]{1,6}$|^\w{1,2}$")
_KNOWN = "|".join(sorted(
    {name for name in [*_SYMBOLS, *_FUNCTIONS, *_CONTENT] if name.isalpha()}
    | {"frac", "dfrac", "tfrac", "sqrt", "mathbb", "vec", "overrightarrow", "widehat", "begin", "binom"},
    key=len, reverse=True))
_BARE_MACRO = re.compile(rf"\\(?:{_KNOWN})(?![a-zA-Z])")
_BARE_POWER = re.compile(r"(?<=[\w)])\^(\{[^{}\s]{1,12}\}|-?\d+|[a-z](?![a-z]))")


def _delimited(m: re.Match[str]) -> str:
    inline = m.group("inline")
    if inline is not None and not _MATHS_SIGN.search(inline):
        return m.group(0)  # « $5 ou 10$ »: dollars, not maths
    groups = (m.group("display"), m.group("bracket"), m.group("paren"), inline)
    body = next(g for g in groups if g is not None)
    text = _formula(body)
    return text.strip("\n") if inline is not None or m.group("paren") is not None else text.strip()


def _bare(line: str) -> str:
    if _BARE_MACRO.search(line):
        return _formula(re.sub(r"(?<!\\)\$", r"\\$", line))  # a $ left in a line is a price
    return _BARE_POWER.sub(lambda m: _script(m.group(1).strip("{}"), _SUP, "^"), line)


def _outside_code(text: str, convert: Callable[[str], str]) -> str:
    out, pos = [], 0
    for m in _CODE.finditer(text):
        out += [convert(text[pos : m.start()]), m.group(0)]
        pos = m.end()
    return "".join([*out, convert(text[pos:])])


def latex_to_text(text: str) -> str:
    """Every formula of `text` in readable Unicode; code (``` and `…`) and prices left alone."""
    if "\\" not in text and "$" not in text and "^" not in text:
        return text

    def convert(part: str) -> str:
        part = _DELIMITED.sub(_delimited, part)
        return "\n".join(_bare(line) if "\\" in line or "^" in line else line for line in part.split("\n"))

    return _outside_code(text, convert)


# --- SMS: GSM-7 spellings ----------------------------------------------------------------------

_UNSUP = {v: k for k, v in _SUP.items()}
_UNSUB = {v: k for k, v in _SUB.items()}
_GSM7_SIGNS = {
    "≤": "<=", "≥": ">=", "≠": "!=", "≈": "~", "±": "+/-", "∓": "-/+", "×": "x", "÷": ":",
    "π": "pi", "∞": "inf", "°": " deg", "′": "'", "→": "->", "⇒": "=>", "⇔": "<=>", "∈": " in ",
    "∉": " not in ", "∫": "int", "∑": "Σ", "∏": "Π", "∅": "{}", "ℕ": "N", "ℤ": "Z", "ℚ": "Q",
    "ℝ": "R", "ℂ": "C", "∪": " U ", "∩": " inter ", "⊂": " subset ", "∀": "for all ", "∃": "exists ",
    "‖": "||", "⟨": "<", "⟩": ">", "∠": "angle ", "⊥": " perp ", "∥": "//", "≡": "=",
    "…": "...", "∂": "d", "∇": "grad ", "√": "sqrt", "⌊": "floor(", "⌋": ")",
}
_GREEK_NAMES = {v: k for k, v in _GREEK.items() if k[0].islower() and not k.startswith("var")}
_ROOT = re.compile(r"([√∛∜])(\((?:[^()]|\([^()]*\))*\)|[\w.,]+)")
_SCRIPT_RUN = re.compile(f"[{''.join(_UNSUP)}]+|[{''.join(_UNSUB)}]+")


def _gsm7_root(m: re.Match[str]) -> str:
    body = m.group(2)
    if m.group(1) == "√":
        return f"sqrt{body}" if body.startswith("(") else f"sqrt({body})"
    return f"{body}^(1/{'3' if m.group(1) == '∛' else '4'})"


def _gsm7_script(m: re.Match[str]) -> str:
    run = m.group(0)
    table, mark = (_UNSUP, "^") if run[0] in _UNSUP else (_UNSUB, "_")
    body = "".join(table[ch] for ch in run)
    return mark + (body if len(body) == 1 or _balanced_parens(body) else f"({body})")


def gsm7_maths(text: str) -> str:
    """Maths characters outside GSM-7 in the spelling a calculator uses: x^2, sqrt(2), <=, pi."""
    text = _ROOT.sub(_gsm7_root, text)
    text = _SCRIPT_RUN.sub(_gsm7_script, text)
    text = re.sub(r"(\w+)\u20d7", r"vec(\1)", text)
    text = re.sub(r"(?<=[\w)])\s*·\s*(?=[\w(])", "*", text)
    text = re.sub(r"\b([nN])°\s*", r"\1o ", text)  # n° 9: numéro, not degrees
    text = re.sub(r"\s?°\s?(?=[CF]\b)", " deg ", text)
    return "".join(_GSM7_SIGNS.get(ch) or _GREEK_NAMES.get(ch) or ch for ch in text)
