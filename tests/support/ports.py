"""A free TCP port for a server a test starts later, safe when two test passes run side by side.

Asking the kernel for port 0 and closing the socket is racy here: the port comes from the ephemeral
range, so another pass (or any outgoing connection, which takes its source port from that same
range) may take it before our server binds. So ports are picked below the ephemeral range, and each
is held by an exclusive lock file for the life of this test process: no two processes pick the same
one, and no client connection is ever given it."""

from __future__ import annotations

import fcntl
import random
import socket
import tempfile
from pathlib import Path
from typing import IO

__all__ = ["free_port"]

_RANGE = range(20000, 32000)  # below net.ipv4.ip_local_port_range (32768-60999 by default)
_LOCKS = Path(tempfile.gettempdir()) / "deblo-test-ports"
_held: list[IO[str]] = []  # kept open: closing a lock file would release its port to other passes


def _reserve(port: int) -> bool:
    handle = open(_LOCKS / f"{port}.lock", "w")  # held open on purpose: see _held
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return False
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:  # used by something that does not take our locks
            handle.close()
            return False
    _held.append(handle)
    return True


def free_port() -> int:
    _LOCKS.mkdir(exist_ok=True)
    start = random.randrange(len(_RANGE))
    for step in range(len(_RANGE)):
        port = _RANGE[(start + step) % len(_RANGE)]
        if _reserve(port):
            return port
    raise RuntimeError(f"no free port in {_RANGE.start}-{_RANGE.stop - 1}")
