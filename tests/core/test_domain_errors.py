"""One base exception per domain: every exception class a domain package defines derives from the
base its `errors` module holds and its `__init__` shows, so that a caller catches one domain's
failures at once (`except BillingError`)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each domain (the packages of DOMAINS in test_platform.py) and the name of its base exception.
BASES = {
    "bot.sandbox": "SandboxError",
    "bot.documents": "DocumentError",
    "bot.billing": "BillingError",
    "bot.jobs": "JobError",
    "bot.safety": "SafetyError",
    "bot.assistant": "AssistantError",
    "bot.accounts": "AccountsError",
    "bot.library": "LibraryError",
    "bot.learning": "LearningError",
    "bot.media": "MediaError",
    "bot.school": "SchoolError",
}


def _modules(package: str) -> list[ModuleType]:
    root = importlib.import_module(package)
    names = [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
    return [root, *(importlib.import_module(name) for name in names)]


def _exceptions(module: ModuleType) -> list[type[BaseException]]:
    """The exception classes the module defines (at its top level or inside its classes)."""
    found: list[type[BaseException]] = []
    scopes: list[object] = [module]
    while scopes:
        scope = scopes.pop()
        for value in vars(scope).values():
            if not isinstance(value, type) or value.__module__ != module.__name__ or value in found:
                continue
            if issubclass(value, BaseException):
                found.append(value)
            scopes.append(value)
    return found


def test_the_domains_are_those_of_the_layer_rules() -> None:
    source = (ROOT / "tests" / "core" / "test_platform.py").read_text()
    tree = ast.parse(source)
    domains = next(node.value for node in ast.walk(tree) if isinstance(node, ast.AnnAssign)
                   and isinstance(node.target, ast.Name) and node.target.id == "DOMAINS")
    assert isinstance(domains, ast.Dict)
    assert {ast.literal_eval(key) for key in domains.keys if key is not None} == set(BASES)


@pytest.mark.parametrize("package", sorted(BASES))
def test_each_domain_shows_its_base_exception(package: str) -> None:
    face = importlib.import_module(package)
    errors = importlib.import_module(package + ".errors")
    base = getattr(errors, BASES[package])
    assert issubclass(base, Exception)
    assert BASES[package] in face.__all__
    assert getattr(face, BASES[package]) is base


@pytest.mark.parametrize("package", sorted(BASES))
def test_every_exception_of_a_domain_derives_from_its_base(package: str) -> None:
    base = getattr(importlib.import_module(package + ".errors"), BASES[package])
    strays = [f"{cls.__module__}.{cls.__qualname__}" for module in _modules(package)
              for cls in _exceptions(module) if not issubclass(cls, base)]
    assert not strays, f"not derived from {package}.errors.{BASES[package]}: {', '.join(strays)}"


def test_no_domain_defines_an_exception_inside_a_function() -> None:
    """Exception classes defined inside functions escape the import walk: none may exist."""
    nested = []
    for package in BASES:
        for path in (ROOT / Path(*package.split("."))).rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            for func in ast.walk(tree):
                if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(func):
                    if not isinstance(node, ast.ClassDef):
                        continue
                    if any(ast.unparse(b).endswith(("Error", "Exception")) for b in node.bases):
                        nested.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not nested, "exception classes defined inside functions: " + ", ".join(nested)
