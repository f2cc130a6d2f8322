"""Each test's sandboxes live under a parent control group of their own, removed afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.sandbox import remove_parent_groups


@pytest.fixture(autouse=True)
def _remove_parent_groups() -> Iterator[None]:
    yield
    remove_parent_groups()
