"""tiles at small blocks: the comparison with the full computation is bounded by the tiles
it walks (a note says why it was skipped), the counting shows a bar on a terminal and stops
at Ctrl+C with 130 and one line."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from mha_explorer.cli import main

DEADLINE_S = 120


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_a_comparison_of_too_many_tiles_is_skipped_with_its_reason():
    # 512² tiles of 1×1: minutes of small torch calls, one by one
    rc, out, err = run_main(["tiles", "--d-model", "8", "--heads", "1", "--batch", "1", "--seq", "512",
                             "--block", "1,1", "--json"])
    assert rc == 0 and err == "", err
    report = json.loads(out)
    assert report["max_abs_diff_vs_full"] is None
    assert any("262,144 tiles of 1×1" in n and "larger blocks" in n for n in report["notes"]), report["notes"]
    rc, out, _err = run_main(["tiles", "--d-model", "8", "--heads", "1", "--batch", "1", "--seq", "512",
                              "--block", "16,16", "--json"])  # larger blocks: compared
    assert rc == 0 and json.loads(out)["max_abs_diff_vs_full"] < 1e-4


def _read_until(fd: int, proc: subprocess.Popen, wanted: bytes) -> bytes:
    seen = b""
    deadline = time.monotonic() + DEADLINE_S
    while wanted not in seen:
        assert time.monotonic() < deadline and proc.poll() is None, seen[-500:]
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


@pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX terminals and signals")
def test_counting_many_tiles_shows_a_bar_and_ctrl_c_stops_it():
    main_fd, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1", "COLUMNS": "100"}
    # a strided mask over 16,384² keys in 1×1 tiles: seconds of scanning, a bar meanwhile
    proc = subprocess.Popen([sys.executable, "-m", "mha_explorer", "tiles", "--seq", "16384", "--stride", "2",
                             "--block", "1,1", "--json"], stdout=subprocess.PIPE, stderr=terminal, env=env)
    os.close(terminal)
    try:
        shown = _read_until(main_fd, proc, b"counting tiles:")
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            pytest.fail("Ctrl+C did not stop the counting")
        rest = _drain(main_fd)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main_fd)
    assert proc.returncode == 130, (shown + rest)[-500:]
    assert rest.rstrip().endswith(b"mha-explorer: interrupted") and b"Traceback" not in shown + rest
    assert proc.stdout.read() == b""  # no report for a count that did not finish
    proc.stdout.close()
