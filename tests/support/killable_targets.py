"""Functions run in child processes by bot.sandbox.killable in tests: a light module, quick to import."""

from __future__ import annotations

import os
import time


def write_pid_and_spin(pid_file: str) -> None:
    with open(pid_file, "w") as f:
        f.write(str(os.getpid()))
    while True:  # blocking: only killing the process stops it
        time.sleep(0.01)


def sleep_then(value: int, seconds: float) -> int:
    time.sleep(seconds)
    return value


def fail() -> None:
    raise ValueError("bad input")
