"""The outreach tools' fixtures, defined in tests/support/outreach.py."""

from tests.support.outreach import (  # noqa: F401  (fixtures, found by pytest here)
    http_stub,
    make_services,
    silent_server,
    smtp_server,
    test_ca,
)
