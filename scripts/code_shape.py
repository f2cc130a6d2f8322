#!/usr/bin/env python3
"""The code's shape: the longest functions, the largest modules and classes, any import cycle.

Run it from anywhere: ``python scripts/code_shape.py [--top N]``. It walks bot/, handlers/ and
tools/ whatever their subpackages, so modules may move without this script changing.

It is a ratchet, not a purge: tests/core/test_code_shape.py fails when a function is longer than
LIMIT lines unless it is on scripts/long_functions.txt with its current length. Entries there are
``path::qualified_name length`` and are matched by the module's file name and the function's
qualified name (``agent.py::run_turn``), so a ``git mv`` of bot/agent.py into a subpackage keeps
its entry matching (and when the file is renamed too, a qualified name found only once in the
project still matches); the directories written before the file name are for the reader only.

Modules have a ratchet of their own: none is longer than MODULE_LIMIT lines unless it is on
scripts/large_modules.txt with its current length (``path lines``). A listed module may shrink,
never grow, and new modules never join. Entries are matched by the whole path: a module is split
or moved on purpose, so an entry whose file is gone is reported as a hint to remove it (a module
moved whole and still too long then fails at its new path until its entry follows it).
Migrations are skipped by both ratchets.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "handlers", "tools")
LIMIT = 60
MAX_LISTED = 3
ALLOWED_FILE = Path(__file__).resolve().parent / "long_functions.txt"
MODULE_LIMIT = 500
LARGE_MODULES_FILE = Path(__file__).resolve().parent / "large_modules.txt"


@dataclass(frozen=True)
class Function:
    """One function or method: where it is, its dotted name inside the module, its line count."""

    path: str
    qualname: str
    lines: int

    @property
    def key(self) -> tuple[str, str]:
        """What a list entry is matched on: the file's name and the qualified name."""
        return Path(self.path).name, self.qualname


# Migrations are history: a revision is never edited once shipped, so its length is not ours to
# ratchet. Any directory named "versions" under a "migrations" directory is skipped wherever it sits.
FROZEN = ("migrations", "versions")


def module_files(root: Path = ROOT) -> list[Path]:
    """Every .py file under the project packages, in a stable order."""
    return sorted(p for pkg in PACKAGES for p in (root / pkg).rglob("*.py"))


def _frozen(path: Path) -> bool:
    parts = path.parts
    return any(parts[i : i + 2] == FROZEN for i in range(len(parts) - 1))


def module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted module name of a file (a package's ``__init__`` names the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _functions_in(tree: ast.AST, path: str) -> list[Function]:
    found: list[Function] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                found.append(Function(path, name, child.end_lineno - child.lineno + 1))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def functions(root: Path = ROOT) -> list[Function]:
    """Every function and method in the project, longest first."""
    found: list[Function] = []
    for path in module_files(root):
        if _frozen(path.relative_to(root)):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += _functions_in(tree, path.relative_to(root).as_posix())
    return sorted(found, key=lambda f: (-f.lines, f.path, f.qualname))


def module_sizes(root: Path = ROOT) -> list[tuple[str, int]]:
    """Each module's path and line count, largest first."""
    sizes = [
        (p.relative_to(root).as_posix(), len(p.read_text(encoding="utf-8").splitlines()))
        for p in module_files(root)
    ]
    return sorted(sizes, key=lambda s: (-s[1], s[0]))


def ratcheted_module_sizes(root: Path = ROOT) -> list[tuple[str, int]]:
    """Each module's path and line count, largest first, migrations left out."""
    return [(p, n) for p, n in module_sizes(root) if not _frozen(Path(p))]


def read_large_modules(path: Path = LARGE_MODULES_FILE) -> dict[str, int]:
    """The list of allowed large modules: path (as written, from the project root) -> length."""
    allowed: dict[str, int] = {}
    if not path.exists():
        return allowed
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            where, length = line.rsplit(maxsplit=1)
            allowed[where] = int(length)
    return allowed


def module_ratchet(
    sizes: list[tuple[str, int]], allowed: dict[str, int], limit: int = MODULE_LIMIT
) -> tuple[list[str], list[str]]:
    """Problems (a module too long and not listed, or grown past its listed length) and hints."""
    problems: list[str] = []
    hints: list[str] = []
    found = dict(sizes)
    for path, lines in sizes:
        listed = allowed.get(path)
        if lines <= limit:
            continue
        if listed is None:
            problems.append(
                f"{path} is {lines} lines (limit {limit}): split it where the meaning splits; "
                "new modules never join the list (a listed module that moved takes its entry along)"
            )
        elif lines > listed:
            problems.append(
                f"{path} grew to {lines} lines (listed at {listed}): a listed module may shrink, never grow"
            )
        elif lines < listed:
            hints.append(f"{path} shrank to {lines}: lower its number in the list")
    for path in allowed:
        lines = found.get(path)
        if lines is None:
            hints.append(f"{path} no longer exists: remove it from the list")
        elif lines <= limit:
            hints.append(f"{path} is {lines} lines, within the limit: remove it from the list")
    return problems, hints


def class_sizes(root: Path = ROOT) -> list[tuple[str, int]]:
    """Each class (``path::qualname``) and its line count, largest first."""
    sizes: list[tuple[str, int]] = []
    for path in module_files(root):
        if _frozen(path.relative_to(root)):
            continue
        rel = path.relative_to(root).as_posix()
        pending: list[tuple[ast.AST, str]] = [(ast.parse(path.read_text(encoding="utf-8"), str(path)), "")]
        while pending:
            node, prefix = pending.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    sizes.append((f"{rel}::{prefix}{child.name}", child.end_lineno - child.lineno + 1))
                    pending.append((child, f"{prefix}{child.name}."))
    return sorted(sizes, key=lambda s: (-s[1], s[0]))


def _imported(node: ast.Import | ast.ImportFrom, here: str, is_package: bool) -> list[str]:
    """The dotted names an import statement may refer to (modules or names inside them)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = here.split(".") if is_package else here.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    return [module] + [f"{module}.{alias.name}" for alias in node.names]


def _all_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth: inside functions, and under ``if TYPE_CHECKING:`` too
    (an import made only for the type checker still ties the two modules in a reader's mind, and
    hiding it is how a circle goes unseen)."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Project module -> project modules it imports, at module level, inside functions, or for the
    type checker."""
    files = {module_name(p, root): p for p in module_files(root)}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _all_imports(tree):
            for target in _imported(node, name, path.name == "__init__.py"):
                # "from bot import x" names bot.x when x is a module, else a name in bot.
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (Tarjan's SCCs).

    A package importing its own submodule, and that submodule importing a sibling through the
    package, is how Python packages are built, not a cycle: edges to a module's own ancestor
    package are left out.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def edges(node: str) -> list[str]:
        return sorted(t for t in graph[node] if not node.startswith(f"{t}."))

    def strongconnect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges(node):
            if target not in index:
                strongconnect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            strongconnect(node)
    return sorted(cycles)


def read_allowed(path: Path = ALLOWED_FILE) -> dict[tuple[str, str], tuple[str, int]]:
    """The list of allowed long functions: (file name, qualname) -> (line as written, length)."""
    allowed: dict[tuple[str, str], tuple[str, int]] = {}
    if not path.exists():
        return allowed
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where, length = line.rsplit(maxsplit=1)
        file_path, qualname = where.split("::", 1)
        allowed[(Path(file_path).name, qualname)] = (where, int(length))
    return allowed


def match_listed(
    found: list[Function], allowed: dict[tuple[str, str], tuple[str, int]]
) -> dict[tuple[str, str], Function]:
    """Each list entry's function: same file name and qualified name, or else (the module was
    renamed as well as moved) the one function in the project with that qualified name."""
    by_key: dict[tuple[str, str], Function] = {}
    by_name: dict[str, list[Function]] = {}
    for f in found:
        by_key.setdefault(f.key, f)
        by_name.setdefault(f.qualname, []).append(f)
    matched: dict[tuple[str, str], Function] = {}
    for key in allowed:
        same_name = by_name.get(key[1], [])
        f = by_key.get(key) or (same_name[0] if len(same_name) == 1 else None)
        if f is not None:
            matched[key] = f
    return matched


def ratchet(
    found: list[Function], allowed: dict[tuple[str, str], tuple[str, int]], limit: int = LIMIT
) -> tuple[list[str], list[str]]:
    """Problems (a function too long and not listed, or grown past its listed length) and hints."""
    problems: list[str] = []
    hints: list[str] = []
    matched = match_listed(found, allowed)
    listed_as = {(f.path, f.qualname): allowed[key] for key, f in matched.items()}
    for f in found:
        if f.lines <= limit:
            continue
        listed = listed_as.get((f.path, f.qualname))
        if listed is None:
            problems.append(
                f"{f.path}::{f.qualname} is {f.lines} lines (limit {limit}): split it where the "
                "meaning splits (a step, a decision, a rendering); new code never joins the list"
            )
        elif f.lines > listed[1]:
            problems.append(
                f"{f.path}::{f.qualname} grew to {f.lines} lines (listed at {listed[1]}): "
                "a listed function may shrink, never grow"
            )
        elif f.lines < listed[1]:
            hints.append(f"{f.path}::{f.qualname} shrank to {f.lines}: lower its number in the list")
    for key, (where, _length) in allowed.items():
        f = matched.get(key)
        if f is None:
            hints.append(f"{where} no longer exists: remove it from the list")
        elif f.lines <= limit:
            hints.append(f"{where} is {f.lines} lines, within the limit: remove it from the list")
    return problems, hints


def _table(headers: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    cells = [tuple(str(c) for c in row) for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) if c.isdigit() else c.ljust(w) for c, w in zip(row, widths, strict=True))
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def report(top: int = 15, root: Path = ROOT) -> str:
    """The readable report: longest functions, largest modules, import cycles, the ratchets."""
    found = functions(root)
    allowed = read_allowed()
    over = [f for f in found if f.lines > LIMIT]
    listed = {(f.path, f.qualname): allowed[key][1] for key, f in match_listed(found, allowed).items()}
    shown = found[: max(top, len(over))]
    large = read_large_modules()
    parts = [
        f"Longest functions ({len(over)} over {LIMIT} lines, {len(found)} in all)",
        _table(
            ("lines", "function", "listed"),
            [(f.lines, f"{f.path}::{f.qualname}", listed.get((f.path, f.qualname), "")) for f in shown],
        ),
        "",
        "Largest modules",
        _table(
            ("lines", "module", "listed"),
            [(n, p, large.get(p, "")) for p, n in module_sizes(root)[:top]],
        ),
        "",
        "Largest classes",
        _table(("lines", "class"), [(n, c) for c, n in class_sizes(root)[:top]]),
        "",
        "Import cycles",
    ]
    cycles = import_cycles(import_graph(root))
    parts += [" <-> ".join(c) for c in cycles] or ["none"]
    problems, hints = ratchet(found, allowed)
    module_problems, module_hints = module_ratchet(ratcheted_module_sizes(root), large)
    problems, hints = problems + module_problems, hints + module_hints
    if problems or hints:
        parts += ["", "Ratchet", *(f"FAIL {p}" for p in problems), *(f"hint {h}" for h in hints)]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="rows per table (default 15)")
    print(report(parser.parse_args().top))


if __name__ == "__main__":
    main()
