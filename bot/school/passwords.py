"""Operators' passwords: Argon2id through argon2-cffi (its defaults follow RFC 9106's low-memory
profile), and the random password printed once when none is given."""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_HASHER = PasswordHasher()  # Argon2id


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def verify_password(stored_hash: str, password: str) -> bool:
    """True when `password` matches; a malformed stored hash is a mismatch, never an exception."""
    try:
        return _HASHER.verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(stored_hash: str) -> bool:
    """True when the hash was made with weaker parameters than today's: rehash it at the next login."""
    return _HASHER.check_needs_rehash(stored_hash)


def random_password() -> str:
    """About 120 bits, URL-safe, for an operator added without --password-stdin."""
    return secrets.token_urlsafe(15)


# A hash of a password nobody has, checked when the e-mail is unknown so that a login takes the
# same time whether or not the account exists.
DUMMY_HASH = hash_password(secrets.token_urlsafe(15))
