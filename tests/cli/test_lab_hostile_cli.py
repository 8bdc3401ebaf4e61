"""``lab`` given what nobody should type, and driven as a terminal user drives it.

Every hostile flag value is one line on stderr (nothing unprintable echoed back) and
exit 2, before torch loads. On a terminal a progress bar runs on stderr; piped, the
JSON is all there is; Ctrl+C ends the run with 130 and leaves no partial file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from terminal_session import assert_stopped_in_one_line, interrupt_at

from mha_explorer.cli import main

DEADLINE_S = 120
TINY = ["--task", "copy", "--d-model", "8", "--steps", "4"]

HOSTILE_VALUES = {
    "zero": "0", "negative": "-3", "huge": "9" * 40, "NaN": "nan", "inf": "inf", "text": "many",
    "empty": "", "control characters": "\x1b[2J\x07", "emoji": "🙂", "float": "2.5",
}
FLAGS = {"--heads": 8, "--d-model": None, "--steps": None, "--seed": None, "--layers": None}
ALLOWED = {("--seed", "zero")}  # a seed of 0 is a seed


def _cases():
    for flag in FLAGS:
        for name, value in HOSTILE_VALUES.items():
            if (flag, name) not in ALLOWED:
                yield pytest.param(flag, value, id=f"{flag}={name}")
    for name, value in HOSTILE_VALUES.items():
        if name not in ("text", "zero", "negative", "huge", "float", "NaN", "inf"):
            yield pytest.param("--task", value, id=f"--task={name}")
    yield pytest.param("--task", "x" * 100_000, id="--task=very long")
    yield pytest.param("--heads", "1,,2", id="--heads=gap")
    yield pytest.param("--heads", "3", id="--heads=not dividing")
    yield pytest.param("--layers", "3", id="--layers=three")


def _one_line_exit_2(argv, capsys) -> str:
    assert main(["lab", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert err.count("\n") == 1 and err.startswith("mha-explorer: error:"), err
    assert "Traceback" not in err and all(c.isprintable() for c in err.rstrip("\n")), repr(err)
    assert len(err) < 600
    return err


@pytest.mark.parametrize("flag, value", list(_cases()))
def test_a_hostile_flag_value_is_one_line_and_exit_2(flag, value, capsys):
    argv = [*TINY, "--heads", "1"] if flag != "--task" else ["--heads", "1"]
    base = dict(zip(argv[::2], argv[1::2], strict=True))
    base[flag] = value
    if flag != "--task":
        base.setdefault("--task", "copy")
    _one_line_exit_2([x for kv in base.items() for x in kv], capsys)


@pytest.mark.parametrize("kind", ["file", "fifo", "link", "control characters", "empty"])
def test_a_hostile_out_folder_is_one_line_and_exit_2(kind, tmp_path, capsys):
    target = tmp_path / "out"
    if kind == "file":
        target.write_text("x")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "link":
        (tmp_path / "real").mkdir()
        target.symlink_to(tmp_path / "real")
    elif kind == "control characters":
        target = tmp_path / "out\x1b[2J"
    else:
        target = ""
    _one_line_exit_2([*TINY, "--heads", "1", "--out", str(target)], capsys)
    assert not (kind == "control characters" and target.exists())


def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "100"}


def test_piped_json_has_nothing_extra(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mha_explorer", "lab", *TINY, "--heads", "1,2", "--json"],
                          capture_output=True, text=True, timeout=DEADLINE_S, env=_env())
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no bar when stderr is not a terminal
    assert [r["heads"] for r in json.loads(done.stdout)["runs"]] == [1, 2]


@pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX terminals and signals")
def test_on_a_terminal_a_bar_runs_and_ctrl_c_stops_with_no_partial_file(tmp_path):
    out = tmp_path / "runs"
    run = interrupt_at(["lab", "--task", "induction", "--d-model", "16", "--steps", "100000", "--heads", "2",
                        "--out", str(out)], b"2 heads")  # the bar, named for the run it counts
    assert b"step" in run.shown
    assert_stopped_in_one_line(run)
    assert not out.exists() or not any(out.rglob("*"))  # nothing half-written
