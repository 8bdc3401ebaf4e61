"""A command run with its stderr on a pseudo-terminal, as a person at a terminal runs it:
wait for a marker in what it shows, press Ctrl+C (SIGINT), collect what follows. Every wait
polls for output with a deadline; nothing sleeps for a fixed time."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass

DEADLINE_S = 120


@dataclass
class Interrupted:
    returncode: int
    shown: bytes  # the terminal's output up to the marker
    after: bytes  # what came after Ctrl+C
    stdout: bytes


def _read_until(fd: int, proc: subprocess.Popen, wanted: bytes) -> bytes:
    seen = b""
    deadline = time.monotonic() + DEADLINE_S
    while wanted not in seen:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise AssertionError(f"no {wanted!r} on the terminal (rc {proc.poll()}): {seen[-500:]!r}")
        ready, _w, _x = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


def _drain(fd: int) -> bytes:
    rest = b""
    while True:
        ready, _w, _x = select.select([fd], [], [], 0.1)
        if not ready:
            return rest
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return rest
        if not chunk:
            return rest
        rest += chunk


def interrupt_at(argv: list[str], marker: bytes, env: dict[str, str] | None = None) -> Interrupted:
    """Run ``mha_explorer argv`` with stderr on a 100-column terminal; Ctrl+C once ``marker``
    shows there."""
    main_fd, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1", "COLUMNS": "100",
           **(env or {})}
    # a command in a terminal's foreground hears Ctrl+C; a test suite started as a background
    # job inherits SIGINT ignored, and a child would keep ignoring it (exec resets only handled
    # signals to default), so the child starts with the default, as at a terminal
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "mha_explorer", *argv], stdout=subprocess.PIPE,
                                stderr=terminal, env=env)
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.close(terminal)
    try:
        shown = _read_until(main_fd, proc, marker)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(DEADLINE_S)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError("Ctrl+C did not stop the command") from exc
        after = _drain(main_fd)
        stdout = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        os.close(main_fd)
    return Interrupted(proc.returncode, shown, after, stdout)


def assert_stopped_in_one_line(run: Interrupted) -> None:
    """Exit 130, the last thing on the terminal one line saying so, no traceback, no output."""
    assert run.returncode == 130, (run.shown + run.after)[-500:]
    assert run.after.rstrip().endswith(b"mha-explorer: interrupted"), run.after[-500:]
    assert b"Traceback" not in run.shown + run.after
    assert run.stdout == b""
