"""`python -m bot ARGS` without paying Python's start and the bot's imports each time.

One helper process imports the bot and its console commands once (`PRELOADED`), then forks a
child per command. The child becomes what a fresh `python -m bot ARGS` would be: the given
environment (set before the command reads its settings, which `load_settings` does at each call),
working directory, argv and `sys.path[0]`, its stdin, stdout and stderr on the files the caller
passed (by descriptor, over a Unix socket), `bot.__main__` run as `__main__`, exit handlers run at
the end. The exit code comes back over the socket, as a subprocess's return code would.

What a fork shares with its helper and a fresh process would not have: modules already imported
(their import-time state: none of them reads the environment or the working directory then) and
the hash seed. The temporary directory, the time zone and the signal dispositions are reset.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import runpy
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
PRELOADED = (
    "bot.cli", "bot.config", "bot.logs", "bot.services", "bot.storage.models", "bot.storage.migrate",
    "bot.console.users", "bot.school", "bot.library",
    "bot.doctor", "sqlalchemy.ext.asyncio", "aiosqlite", "asyncpg", "redis.asyncio", "alembic",
    "aiohttp", "pydantic_settings",
)
_HEADER = struct.Struct("!I")


class ConsoleForks:
    """The helper process, started at the first `run`; `close` stops it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._path = ""

    def _start(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="console-forks-")
        self._path = os.path.join(self._dir.name, "socket")
        errors = open(os.path.join(self._dir.name, "stderr"), "wb")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("TEST_")}, "PYTHONPATH": str(ROOT)}
        with errors:
            self._proc = subprocess.Popen([sys.executable, __file__, self._path], cwd=str(ROOT), env=env,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)
        deadline = time.monotonic() + 60
        while not os.path.exists(self._path):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the console helper did not start: "
                                   + Path(self._dir.name, "stderr").read_text(errors="replace"))
            time.sleep(0.02)

    def run(self, args: list[str], env: dict[str, str], cwd: str,
            stdin: bytes | None) -> tuple[int, bytes, bytes]:
        """(exit code, stdout, stderr) of `python -m bot ARGS` (blocking: call it in a thread)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
        with contextlib.ExitStack() as files:
            given: IO[bytes]
            if stdin is None:
                given = files.enter_context(open(os.devnull, "rb"))
            else:
                given = files.enter_context(tempfile.TemporaryFile())
                given.write(stdin)
                given.seek(0)
            out = files.enter_context(tempfile.TemporaryFile())
            err = files.enter_context(tempfile.TemporaryFile())
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(self._path)
                request = json.dumps({"args": args, "env": env, "cwd": cwd}).encode()
                socket.send_fds(conn, [b"r"], [given.fileno(), out.fileno(), err.fileno()])
                conn.sendall(_HEADER.pack(len(request)) + request)
                reply = _read_all(conn)
            if not reply:
                raise RuntimeError("a console fork died before it returned an exit code: "
                                   + _read(err).decode(errors="replace"))
            return int(reply), _read(out), _read(err)

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
        if self._dir is not None:
            self._dir.cleanup()


def _read(file: IO[bytes]) -> bytes:
    file.seek(0)
    return file.read()


def _read_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("request cut short")
        data += chunk
    return data


# --- the helper process ---------------------------------------------------------------------


def _serve(path: str) -> None:
    for name in PRELOADED:
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".binding")
    listener.listen(64)
    os.rename(path + ".binding", path)  # the socket appears ready to connect to
    while True:
        conn, _ = listener.accept()
        with conn:
            _, fds, _, _ = socket.recv_fds(conn, 1, 3)
            (size,) = _HEADER.unpack(_read_exactly(conn, _HEADER.size))
            request = json.loads(_read_exactly(conn, size))
            if os.fork() == 0:
                listener.close()
                _child(conn, request, fds)
            for fd in fds:
                os.close(fd)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass


def _child(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    code = 70
    try:
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        time.tzset()
        tempfile.tempdir = None
        sys.path[0] = os.getcwd()  # as `python -m` puts it
        code = _main(request["args"])
        conn.sendall(str(code).encode())
        conn.close()
    finally:
        os._exit(code)


def _main(args: list[str]) -> int:
    """`bot.__main__` as `python -m bot ARGS` runs it; the exit code a process would end with."""
    sys.argv = ["-m", *args]
    try:
        runpy.run_module("bot", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:  # as the interpreter: the traceback on stderr, status 1
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.path[0] = str(ROOT)
    _serve(sys.argv[1])
