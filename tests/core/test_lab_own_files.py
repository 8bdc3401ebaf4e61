"""A lab save removes only what the app made: a person's folder named like a save's
temporary folder stays, and a run folder holding a person's file, hidden or not, is
never replaced (the old folder is removed once a new one takes its place)."""

from __future__ import annotations

import pytest

from mha_explorer.core.lab.files import RunFileError
from mha_explorer.core.lab.model import LabModelSpec
from mha_explorer.core.lab.store import load_run, save_run
from mha_explorer.core.lab.train import TrainSettings, train


@pytest.fixture(scope="module")
def run():
    spec = LabModelSpec(task="copy", vocab=5, n=3, d_model=8, heads=2)
    return train(spec, TrainSettings(steps=4, batch=4, eval_every=2, eval_size=8, device="cpu"))


@pytest.mark.parametrize("name", [".run.notes.tmp", ".run.abcd1234.tmp", ".run.x.y.tmp"])
def test_a_person_s_folder_named_like_a_temporary_stays(run, tmp_path, name):
    mine = tmp_path / name
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    save_run(run, tmp_path / "run")
    save_run(run, tmp_path / "run")  # a second save sweeps up what killed saves left
    assert (mine / "notes.txt").read_text() == "mine"
    assert load_run(tmp_path / "run")[0].curve == run.curve


def test_a_killed_save_s_own_temporary_is_still_removed(run, tmp_path):
    save_run(run, tmp_path / "first")
    left = tmp_path / ".run.abcd1234.tmp"  # as a save killed after writing both files leaves it
    (tmp_path / "first").rename(left)
    save_run(run, tmp_path / "run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


@pytest.mark.parametrize("name", [".notes", "notes.txt"])
def test_a_run_folder_holding_a_person_s_file_is_not_replaced(run, tmp_path, name):
    folder = tmp_path / "run"
    save_run(run, folder)
    (folder / name).write_text("mine")
    with pytest.raises(RunFileError, match="other files"):
        save_run(run, folder)
    assert (folder / name).read_text() == "mine"
