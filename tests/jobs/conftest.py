"""Fixtures shared with other directories: `long_work` (a slow six-step job on worker processes,
tests/support/job_processes.py) and `own_redis` (a Redis server of the test's own,
tests/support/processes.py)."""

from tests.support.job_processes import long_work  # noqa: F401  (a fixture, found by pytest here)
from tests.support.processes import own_redis  # noqa: F401  (a fixture, found by pytest here)
