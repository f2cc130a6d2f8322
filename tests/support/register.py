"""The French register of a text, and every text the bot's code says, read from the source (ast).

A student is told « tu », a parent or a pro « vous »; a text anyone may receive (before the profile
is known, or sent to whoever writes) names no one. `tu_marks` and `vous_marks` find the second
person of each register: the pronouns and possessives, the elided « t' », the imperatives
(« Envoie », « Pose-moi » against « Envoyez », « Dites-moi »). `said` walks one module and gives each
French string literal with the audience its call gives it (`to_audience`'s « tu » and « vous »
arguments), English ones left out (`fr_en`'s and `msg.t`'s second text, `"en"` keys, the body of
`if language == "en"`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

# Singular imperatives the bot uses, recognised where an order starts (a sentence, a clause, « ou »).
_SINGULAR = ("envoie|renvoie|écris|réécris|réponds|réessaie|essaie|tape|attends|indique|choisis|vérifie|"
             "appelle|reviens|clique|touche|reformule|précise|patiente|recommence|relis|lis|ouvre|utilise|"
             "ajoute|regarde|redemande|demande|dis|fais|pose|parle|donne|prends|mets|garde|crée|ignore|"
             "n['’]hésite|n['’]oublie|vérifie|confirme|choisis|continue|écoute|réfléchis|explique")
_START = r"(?:^|[.!?:;,(\n»«—]\s*|\b(?:ou|et|puis|alors|sinon)\s+)"
_TU = re.compile(
    r"(?<![\w'’])(?:tu|te|toi|ton|ta|tes)(?![\w'’])"  # pronouns, possessives, « Peux-tu », « Tu »
    r"|(?<![\w'’])t['’](?=\w)"  # « t'aide », « t'offre »
    rf"|{_START}(?P<order>{_SINGULAR})(?![\w-])", re.IGNORECASE | re.MULTILINE)
_HYPHENED = re.compile(r"(?<![\w'’-])(\w+)-(?:moi|toi|nous|le|la|les|lui|leur|en|y)(?![\w'’])", re.IGNORECASE)
_NOT_AN_ORDER = frozenset({"le", "la", "les", "lui", "leur", "moi", "toi", "nous", "vous", "en", "y", "dites",
                           "faites", "peut", "celui", "celle", "ceux", "celles", "a", "va", "est"})
_VOUS = re.compile(r"(?<![\w'’])(?:vous|votre|vos|vôtres?)(?![\w'’])"
                   rf"|{_START}(?P<order>dites|faites)(?![\w])", re.IGNORECASE | re.MULTILINE)
_EZ = re.compile(r"(?<![\w'’])(\w+ez)(?![\w'’])", re.IGNORECASE)
_NOT_A_VERB = frozenset({"chez", "assez", "nez", "rez", "fez", "suez", "lez"})
_QUOTED = re.compile(r"«[^«»]*»")


def unquoted(text: str) -> str:
    """A text without what it quotes between « »: a person's own words (« rappelle-moi demain »),
    a name, a title."""
    return _QUOTED.sub(" ", text)


def tu_marks(text: str) -> list[str]:
    """The « tu » register's words in a French text: « tu », « ton », « t'aide », « Envoie », « Pose-moi »."""
    found = [m.group("order") or m.group(0) for m in _TU.finditer(text)]
    found += [m.group(0) for m in _HYPHENED.finditer(text)
              if m.group(1).lower() not in _NOT_AN_ORDER and not m.group(1).lower().endswith(("ez", "ons"))]
    return found


def vous_marks(text: str) -> list[str]:
    """The « vous » register's words: « vous », « votre », « vos », « Envoyez », « Dites-moi »."""
    found = [m.group("order") or m.group(0) for m in _VOUS.finditer(text)]
    return found + [m.group(1) for m in _EZ.finditer(text) if m.group(1).lower() not in _NOT_A_VERB]


@dataclass(frozen=True)
class Said:
    """One French text of the code: where it is, the function that holds it (its outermost one,
    "" at module level), and the audience its call names (None: the module's or function's)."""

    where: str
    function: str
    text: str
    audience: str | None = None


_LOG_CALLS = frozenset({"debug", "info", "warning", "error", "exception", "critical", "warning_sampled"})


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _asks_english(test: ast.expr) -> bool | None:
    """True for `x == "en"`, False for `x != "en"`, None for anything else."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        sides = [test.left, *test.comparators]
        if any(isinstance(s, ast.Constant) and s.value == "en" for s in sides):
            if isinstance(test.ops[0], ast.Eq):
                return True
            if isinstance(test.ops[0], ast.NotEq):
                return False
    return None


def _text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                       for v in node.values)
    return None


class _Reader:
    """Walks one module, carrying the function and the audience a call gives its arguments."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.found: list[Said] = []

    def visit(self, node: ast.AST, function: str, audience: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and _text(body[0].value) is not None:
                body = body[1:]  # the docstring
            inner = function or ("" if isinstance(node, ast.Module) else node.name)
            for child in [*getattr(node, "decorator_list", []), *body]:
                self.visit(child, inner, audience)
            return
        said = _text(node) if isinstance(node, ast.expr) else None
        if said is not None:
            self.found.append(Said(f"{self.where}:{getattr(node, 'lineno', 0)}", function, said, audience))
            if isinstance(node, ast.JoinedStr):  # the expressions inside may hold texts too
                for value in node.values:
                    if isinstance(value, ast.FormattedValue):
                        self.visit(value.value, function, audience)
            return
        for child, child_audience in self._children(node, audience):
            if child_audience != "en":
                self.visit(child, function, child_audience)

    def _children(self, node: ast.AST, audience: str | None) -> list[tuple[ast.AST, str | None]]:
        if isinstance(node, ast.Call):
            name, args = _name(node.func), list(node.args)
            if name in _LOG_CALLS:
                return []
            if name == "fr_en" and len(args) == 3:
                return [(args[0], audience), (args[1], audience), (args[2], "en")]
            if name in ("t", "Text") and len(args) == 2:
                return [(args[0], audience), (args[1], "en")]
            if name == "to_audience" and len(args) == 4:
                return [(args[0], audience), (args[1], "student"), (args[2], "adult"), (args[3], "en")]
        if isinstance(node, ast.Dict):
            return [(v, "en" if isinstance(k, ast.Constant) and k.value == "en" else audience)
                    for k, v in zip(node.keys, node.values, strict=True)]
        if isinstance(node, ast.If | ast.IfExp):
            english = _asks_english(node.test)
            if english is not None:
                body: list[ast.AST] = [*node.body] if isinstance(node.body, list) else [node.body]
                orelse: list[ast.AST] = [*node.orelse] if isinstance(node.orelse, list) else [node.orelse]
                return [(n, "en" if english else audience) for n in body] + \
                       [(n, audience if english else "en") for n in orelse]
        return [(child, audience) for child in ast.iter_child_nodes(node)]


def said(path: Path, root: Path) -> list[Said]:
    """Every string literal of one module but its docstrings, log messages and English texts."""
    reader = _Reader(str(path.relative_to(root)))
    reader.visit(ast.parse(path.read_text(), str(path)), "", None)
    return reader.found


_JINJA = re.compile(r"\{#.*?#\}|\{\{.*?\}\}|\{%.*?%\}|<[^>]*>", re.DOTALL)
_ENGLISH_BRANCH = re.compile(r"\{%-?\s*else\s*-?%\}.*?\{%-?\s*endif\s*-?%\}", re.DOTALL)


def template_text(source: str) -> str:
    """A template's words as a reader sees them: no comments, expressions, tags or markup, and no
    `{% else %}` branch (the English one of `{% if fr %}…{% else %}…{% endif %}`)."""
    return _JINJA.sub(" ", _ENGLISH_BRANCH.sub(" ", source))
