"""`long_work`, a slow six-step job on worker processes, defined in tests/support/job_processes.py."""

from tests.support.job_processes import long_work  # noqa: F401  (a fixture, found by pytest here)
