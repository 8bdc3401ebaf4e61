"""``lab --out``: a sweep's folder is the old sweep or the new one, whole; a save that
fails after training keeps the runs somewhere safe and says where; and nothing that
is not the app's own is ever removed.

The faults are real ones at a chosen moment: Ctrl+C (KeyboardInterrupt) or the system
killing the process while the second run is written, a FIFO planted where a run
folder goes while the models train, a person's hidden folder named like the save's
temporaries. Every file is under tmp_path; the data folder is pointed there too."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from test_lab_cli import _run

from mha_explorer.core.lab import train as train_module
from mha_explorer.core.lab.store import load_run
from mha_explorer.core.system import safe_files

TINY = ["--task", "copy", "--d-model", "8", "--steps", "4"]


def _snapshot(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _interrupt_at_second_run_json(monkeypatch, fault) -> None:
    """``fault()`` when the save writes its second run.json (the first run is saved whole)."""
    real, seen = safe_files.write_bytes, []

    def write_bytes(path, data):
        if os.path.basename(path) == "run.json":
            seen.append(path)
            if len(seen) == 2:
                fault()
        return real(path, data)

    monkeypatch.setattr(safe_files, "write_bytes", write_bytes)


def test_ctrl_c_during_the_saves_leaves_the_old_sweep_whole(tmp_path, monkeypatch, capsys):
    out = tmp_path / "sweep"
    assert _run([*TINY, "--heads", "1,2", "--seed", "0", "--out", str(out)]) == 0
    before = _snapshot(out)
    assert {"heads-1/run.json", "heads-2/run.json", "summary.json"} <= set(before)

    def ctrl_c():
        raise KeyboardInterrupt

    _interrupt_at_second_run_json(monkeypatch, ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        _run([*TINY, "--heads", "1,2", "--seed", "1", "--out", str(out)])
    monkeypatch.undo()
    assert _snapshot(out) == before  # no new heads-1 beside the old heads-2 and summary
    assert [p.name for p in tmp_path.iterdir()] == ["sweep"]  # and nothing half-written beside it


KILLED_AT_SECOND_RUN = """
import os, signal, sys
from mha_explorer.core.system import safe_files
real, seen = safe_files.write_bytes, []
def write_bytes(path, data):
    if os.path.basename(path) == "run.json":
        seen.append(path)
        if len(seen) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
    return real(path, data)
safe_files.write_bytes = write_bytes
from mha_explorer.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_kill_during_the_saves_leaves_the_old_sweep_and_the_next_save_tidies(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert _run([*TINY, "--heads", "1,2", "--seed", "0", "--out", str(out)]) == 0
    before = _snapshot(out)
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", KILLED_AT_SECOND_RUN, "lab", *TINY, "--heads", "1,2",
                           "--seed", "1", "--out", str(out)], capture_output=True, timeout=300, env=env)
    assert done.returncode == -9, done.stderr
    assert _snapshot(out) == before
    assert _run([*TINY, "--heads", "2", "--seed", "2", "--out", str(out)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["sweep"]  # what the killed save left is gone
    assert sorted(p.name for p in out.iterdir()) == ["heads-2", "summary.json"]  # the new sweep, whole


def _plant_during_training(monkeypatch, plant) -> None:
    real = train_module.train

    def train_then_plant(*args, **kwargs):
        run = real(*args, **kwargs)
        plant()
        return run

    monkeypatch.setattr(train_module, "train", train_then_plant)


def test_a_save_that_fails_after_training_prints_the_results_and_keeps_the_runs(tmp_path, monkeypatch,
                                                                                 capsys):
    out, data = tmp_path / "sweep", tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    _plant_during_training(monkeypatch, lambda: (out.mkdir(exist_ok=True), os.path.exists(out / "heads-1")
                                                 or os.mkfifo(out / "heads-1")))
    assert _run([*TINY, "--heads", "1,2", "--seed", "3", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "final acc" in captured.out  # the results are printed
    err = captured.err
    assert err.count("\n") == 1 and str(out) in err and "kept in" in err, err
    assert stat.S_ISFIFO(os.lstat(out / "heads-1").st_mode)  # what was planted is left alone
    [kept] = (data / "mha-explorer" / "unsaved-lab-runs").iterdir()
    assert str(kept) in err
    assert sorted(p.name for p in kept.iterdir()) == ["heads-1", "heads-2", "summary.json"]
    run, _extra = load_run(kept / "heads-2")  # checked against its schema and checksum
    assert run.spec.heads == 2 and run.settings.seed == 3


def test_when_no_save_is_possible_the_printed_results_say_they_are_all_that_is_left(tmp_path, monkeypatch,
                                                                                    capsys):
    out, not_a_folder = tmp_path / "sweep", tmp_path / "data"
    not_a_folder.write_text("a file where the data folder would be")
    monkeypatch.setenv("XDG_DATA_HOME", str(not_a_folder))
    _plant_during_training(monkeypatch, lambda: out.exists() or out.write_text("planted"))
    assert _run([*TINY, "--heads", "1", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "final acc" in captured.out
    assert captured.err.count("\n") == 1 and "all that is left" in captured.err, captured.err
    assert out.read_text() == "planted"


def test_a_person_s_hidden_folder_named_like_a_temporary_is_never_removed(tmp_path, capsys):
    out = tmp_path / "sweep"
    notes = out / ".heads-1.notes.tmp"
    notes.mkdir(parents=True)
    (notes / "notes.txt").write_text("mine")
    rc = _run([*TINY, "--heads", "1", "--out", str(out)])
    assert rc == 2  # refused before any training: the folder is not only a sweep's
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ".heads-1.notes.tmp" in err, err
    assert (notes / "notes.txt").read_text() == "mine"


def test_a_sweep_folder_with_other_files_is_refused_before_training(tmp_path, monkeypatch, capsys):
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    trained = []
    monkeypatch.setattr(train_module, "train", lambda *a, **k: trained.append(1))
    assert _run([*TINY, "--heads", "1", "--out", str(out)]) == 2
    assert trained == [] and "notes.txt" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine"

