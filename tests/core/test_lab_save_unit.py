"""A lab run is saved as one unit: a save killed between its two files, or two saves to
one folder at once, never leave the weights of one run beside the JSON of another,
and what a killed save left behind is cleared by the next one."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from mha_explorer.core.lab import store
from mha_explorer.core.lab.files import RunFileError
from mha_explorer.core.lab.model import LabModelSpec
from mha_explorer.core.lab.store import load_run, save_run
from mha_explorer.core.lab.train import TrainSettings, train


def _train(seed: int):
    spec = LabModelSpec(task="copy", vocab=5, n=3, d_model=8, heads=2)
    return train(spec, TrainSettings(steps=6, batch=4, eval_every=3, eval_size=8, seed=seed, device="cpu"))


@pytest.fixture(scope="module")
def runs():
    return _train(1), _train(2)


def _same(loaded, run) -> bool:
    return loaded.curve == run.curve and all(
        torch.equal(a, b) for a, b in zip(loaded.model.state_dict().values(),
                                         run.model.state_dict().values(), strict=True))


def test_a_resave_killed_between_its_files_leaves_the_old_run_whole(runs, tmp_path, monkeypatch):
    old, new = runs
    folder = tmp_path / "run"
    save_run(old, folder)
    real = store.write_atomic
    calls = []

    def killed_after_the_weights(path, data):
        calls.append(path.name)
        if len(calls) == 2:  # the JSON: the process dies here (Ctrl+C, or the system ending it)
            raise KeyboardInterrupt
        real(path, data)

    monkeypatch.setattr(store, "write_atomic", killed_after_the_weights)
    with pytest.raises(KeyboardInterrupt):
        save_run(new, folder)
    monkeypatch.undo()
    assert calls == ["model.safetensors", "run.json"]
    assert _same(load_run(folder)[0], old)
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # nothing half-written beside it


def test_two_saves_to_one_folder_at_once_leave_one_whole_run(runs, tmp_path, monkeypatch):
    first, second = runs
    folder = tmp_path / "run"
    save_run(first, folder)
    real = store.write_atomic
    interleaved = []

    def another_save_meanwhile(path, data):
        real(path, data)
        if path.name == "model.safetensors" and not interleaved:
            interleaved.append(1)
            save_run(second, folder)  # the other process saves whole, between our two files

    monkeypatch.setattr(store, "write_atomic", another_save_meanwhile)
    save_run(first, folder)
    monkeypatch.undo()
    loaded = load_run(folder)[0]
    assert _same(loaded, first)  # the last to finish wins, whole: its weights with its JSON
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_what_a_killed_save_left_is_removed_by_the_next_save(runs, tmp_path):
    folder = tmp_path / "run"
    stale = tmp_path / ".run.k1ll3d00.tmp"
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"half")
    save_run(runs[0], folder)
    assert not stale.exists()
    assert _same(load_run(folder)[0], runs[0])


def test_a_folder_with_other_files_is_not_replaced(runs, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "thesis.txt").write_text("mine")
    with pytest.raises(RunFileError, match="other files"):
        save_run(runs[0], folder)
    assert (folder / "thesis.txt").read_text() == "mine"


SAVER = '''
import sys
from mha_explorer.core.lab import store
from mha_explorer.core.lab.model import LabModelSpec
from mha_explorer.core.lab.store import save_run
from mha_explorer.core.lab.train import TrainSettings, train

if __name__ == "__main__":
    seed = int(sys.argv[2])
    if sys.argv[3] == "no-exchange":  # as on a system without renameat2's exchange
        store._exchange = lambda a, b: False
    spec = LabModelSpec(task="copy", vocab=5, n=3, d_model=8, heads=2)
    run = train(spec, TrainSettings(steps=6, batch=4, eval_every=3, eval_size=8, seed=seed, device="cpu"))
    print("ready", flush=True)
    sys.stdin.readline()  # both start saving together
    for _ in range(15):
        save_run(run, sys.argv[1])
'''


@pytest.mark.slow
@pytest.mark.parametrize("swap", ["exchange", "no-exchange"])
def test_two_processes_saving_again_and_again_leave_a_run_that_loads(tmp_path, swap):
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    folder = tmp_path / "shared"
    procs = [subprocess.Popen([sys.executable, str(script), str(folder), str(seed), swap],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
             for seed in (1, 2)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    run, _extra = load_run(folder)  # the checksum matched: weights and JSON of one run
    assert run.settings.seed in (1, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saver.py", "shared"]
