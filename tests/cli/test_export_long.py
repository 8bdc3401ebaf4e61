"""export of a long sequence: the attention pictures compute only the query rows they
draw and say which (on stderr and in rows.json); a computation of every row says how long
it will take first, shows a bar on a terminal and stops at Ctrl+C with 130, leaving nothing."""

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
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.engine import runner
from mha_explorer.core.plan import memory

DEADLINE_S = 120
SMALL = ["--d-model", "32", "--heads", "4", "--kv-heads", "2", "--seq", "40", "--batch", "1",
         "--causal", "--device", "cpu"]


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def long_for_the_picture(monkeypatch):
    """A sequence the picture cannot show whole (as 100,000 tokens would be), at a small size."""
    monkeypatch.setattr(memory, "FULL_DETAIL_MAX_CELLS", 64)
    monkeypatch.setattr(memory, "SHOWN_MAX_ROWS", 6)


def test_a_softmax_export_draws_exact_picked_rows_and_names_them(qapp, tmp_path, long_for_the_picture):
    out = tmp_path / "slides"
    rc, stdout, err = run_main(["export", "--stage", "softmax", "--out", str(out), "--format", "png",
                                "--size", "640x360", "--no-tables", *SMALL])
    assert rc == 0, err
    sidecar = json.loads((out / "rows.json").read_text())
    rows = sidecar["rows"]
    assert rows == sorted(set(rows)) and len(rows) == 6 and rows[0] == 0 and rows[-1] == 39
    assert sidecar["query_rows_total"] == 40 and sidecar["batch_element"] == 0
    assert str(out / "rows.json") in stdout.splitlines()
    assert err.count("\n") == 1 and "6 of 40" in err and "each exact" in err, err
    # the rows drawn are the engine's picked rows, each equal to the whole computation's
    # (tests/core/test_engine_picked_rows.py)
    cfg = MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, seq=40, batch=1, causal=True, device="cpu")
    assert list(runner.run(cfg, mode="rows").row_ids) == rows


def test_a_stage_after_the_softmax_says_how_long_every_row_takes(qapp, tmp_path, long_for_the_picture):
    out = tmp_path / "slides"
    rc, _stdout, err = run_main(["export", "--stage", "output", "--out", str(out), "--format", "png",
                                 "--size", "640x360", "--no-tables", *SMALL])
    assert rc == 0, err
    assert "needs every one of the 40 query rows" in err and "FLOPs" in err, err
    assert not (out / "rows.json").exists()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="offscreen", OMP_NUM_THREADS="1", PYTHONPATH=os.getcwd(), COLUMNS="100")
    return env


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
def test_on_a_terminal_every_row_shows_a_bar_and_ctrl_c_stops_it(tmp_path):
    out = tmp_path / "slides"
    main_fd, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    # every row of 60,000 tokens: minutes of work, so the signal lands mid-computation
    proc = subprocess.Popen([sys.executable, "-m", "mha_explorer", "export", "--stage", "output",
                             "--out", str(out), "--d-model", "64", "--heads", "4", "--batch", "1",
                             "--seq", "60000", "--causal", "--device", "cpu"],
                            stdout=subprocess.PIPE, stderr=terminal, env=_env())
    os.close(terminal)
    try:
        shown = _read_until(main_fd, proc, b"computing:")  # the bar, after the estimate
        assert b"needs every one of the 60,000 query rows" in shown
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            pytest.fail("Ctrl+C did not stop the computation")
        rest = _drain(main_fd)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main_fd)
    assert proc.returncode == 130
    assert rest.rstrip().endswith(b"mha-explorer: interrupted") and b"Traceback" not in shown + rest
    assert proc.stdout.read() == b""
    proc.stdout.close()
    assert not out.exists() or not any(out.iterdir())  # nothing written, not even in part
