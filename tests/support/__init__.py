"""What the tests share: helpers, constants and fixtures used by more than one test module.

Test modules import from here and from tests/fakes (the wire-level stand-ins of paid services),
never from another test module or a conftest. A fixture needed in several directories is defined
here and exposed by the conftest of each directory that uses it. tests/core/test_test_layout.py
holds the rule.
"""

import pkgutil

import pytest

# The helpers assert as the tests do; pytest explains a failed assert only in the modules it
# rewrites, and it rewrites test modules and conftests by itself, this package's modules only when
# told before they are imported (this package itself is, by now, so it is not named).
pytest.register_assert_rewrite(*(f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__)))
