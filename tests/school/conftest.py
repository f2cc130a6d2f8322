"""The school's fixtures: the real SMTP server (aiosmtpd) of tests/support/outreach.py."""

from tests.support.outreach import smtp_server  # noqa: F401  (a fixture, found by pytest here)
