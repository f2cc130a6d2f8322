"""pyproject.toml's filterwarnings: a DeprecationWarning raised from our own modules fails the test,
one from another package stays ignored. The tests set no filter themselves: pytest's are in force."""

from __future__ import annotations

import warnings

import pytest


def _warn_from(module: str) -> None:
    warnings.warn_explicit("deprecated", DeprecationWarning, "f.py", 1, module=module)


@pytest.mark.parametrize("module", ["bot", "bot.clock", "handlers.turn.direct", "tools.bash_execute"])
def test_a_deprecation_from_our_code_is_an_error(module: str) -> None:
    with pytest.raises(DeprecationWarning, match="deprecated"):
        _warn_from(module)


@pytest.mark.parametrize("module", ["sqlalchemy.orm.session", "botocore", "toolshed", "tests.core"])
def test_a_deprecation_from_other_code_stays_ignored(module: str) -> None:
    with warnings.catch_warnings(record=True) as shown:  # keeps the filters in force, records what passes
        _warn_from(module)
    assert shown == []
