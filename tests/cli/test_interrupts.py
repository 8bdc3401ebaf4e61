"""Ctrl+C: an export in progress ends with one line and exit 130, leaving only whole
files; the window quits with 130 too. Real processes, real signals; every wait is a
poll for a condition with a deadline, never a fixed sleep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest
from PySide6.QtGui import QImage

from mha_explorer.core.system.safe_files import PART_SUFFIX

pytestmark = pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX signals")
DEADLINE_S = 120


def quiet_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="offscreen", OMP_NUM_THREADS="1", PYTHONPATH=os.getcwd())
    return env


def wait_until(condition, what: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the process ended (rc {proc.returncode}) before {what}: "
                        f"{proc.stderr.read() if proc.stderr else ''}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {what} within {DEADLINE_S} s")
        time.sleep(0.02)  # a poll interval, not a timing assumption


def interrupt_and_collect(proc: subprocess.Popen) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("SIGINT did not end the process")
    return proc.returncode, err


def assert_whole(path) -> None:
    if path.suffix == ".png":
        assert not QImage(str(path)).isNull(), path
    elif path.suffix == ".svg":
        assert ET.parse(path).getroot().tag.rsplit("}", 1)[-1] == "svg", path


def test_ctrl_c_ends_an_export_with_130_one_line_and_only_whole_files(qapp, tmp_path):
    out = tmp_path / "slides"
    # every stage, both formats, 4K: dozens of files, so the signal lands mid-export
    proc = subprocess.Popen(
        [sys.executable, "-m", "mha_explorer", "export", "--out", str(out), "--size", "3840x2160",
         "--d-model", "64", "--heads", "4", "--seq", "6", "--batch", "1", "--device", "cpu"],
        env=quiet_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: out.is_dir() and any(p.suffix in (".png", ".svg") for p in out.iterdir()),
               "first exported file", proc)
    rc, err = interrupt_and_collect(proc)
    assert rc == 130, err
    assert err == "mha-explorer: interrupted\n", err  # one line, no traceback
    files = sorted(out.iterdir())
    assert not any(p.name.endswith(PART_SUFFIX) for p in files), files
    assert 0 < len(files) < 2 * 2 * 9 + 4, "the export was not cut short"
    for path in files:
        assert_whole(path)


def torch_is_loaded(pid: int) -> bool:
    """The window's worker loads torch from the running event loop, so this says the
    window is up and waiting for events."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
            return "libtorch" in maps.read()
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc to see the window is up")
def test_ctrl_c_quits_the_window_with_130(tmp_path):
    settings = tmp_path / "settings.ini"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mha_explorer", "--settings", str(settings), "--d-model", "64",
         "--heads", "4", "--seq", "6", "--device", "cpu"],
        env=quiet_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: torch_is_loaded(proc.pid), "window with its worker running", proc)
    rc, err = interrupt_and_collect(proc)
    assert rc == 130, err
    assert "Traceback" not in err and "Error calling Python override" not in err, err
    assert "d_model" in settings.read_text()  # quit like any quit: the preferences were saved


def test_a_killed_export_leaves_only_whole_files(qapp, tmp_path):
    out = tmp_path / "slides"
    args = [sys.executable, "-m", "mha_explorer", "export", "--out", str(out), "--size", "3840x2160",
            "--d-model", "64", "--heads", "4", "--seq", "6", "--batch", "1", "--device", "cpu"]
    out.mkdir()
    earlier = out / "09-output.svg"
    earlier.write_text('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"/>')
    before = earlier.read_bytes()
    proc = subprocess.Popen(args, env=quiet_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_until(lambda: any(p.name.startswith("01-") for p in out.iterdir()), "first exported file",
               proc)
    proc.kill()  # SIGKILL: no handler, no cleanup
    proc.communicate(timeout=DEADLINE_S)
    for path in out.iterdir():
        if not path.name.startswith("."):  # a hidden part file may stay; never a truncated picture
            assert_whole(path)
    assert earlier.read_bytes() == before  # not reached yet, so not touched
