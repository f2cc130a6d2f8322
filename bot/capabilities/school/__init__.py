"""Classes (cohorts) of students and the operators who see them: admins and teachers."""

from __future__ import annotations

from bot.capabilities.school.passwords import (
    DUMMY_HASH,
    hash_password,
    needs_rehash,
    random_password,
    verify_password,
)

__all__ = ["DUMMY_HASH", "hash_password", "needs_rehash", "random_password", "verify_password"]
