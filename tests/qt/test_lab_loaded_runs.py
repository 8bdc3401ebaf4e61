"""Opening a saved run in the Lab: one whose rows disagree is refused inline, and what
was shown stays; a good one fills the phase plots with as many points as it has."""

from __future__ import annotations

import json

import pytest

from mha_explorer.core.lab.model import LabModelSpec
from mha_explorer.core.lab.store import save_run
from mha_explorer.core.lab.train import TrainSettings, train
from mha_explorer.qt.lab.page import LabPage


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    spec = LabModelSpec(task="induction", vocab=8, n=8, d_model=8, heads=2, layers=2)
    folder = tmp_path_factory.mktemp("runs") / "run"
    save_run(train(spec, TrainSettings(steps=9, batch=4, eval_every=3, eval_size=8, seed=1)), folder)
    return folder


@pytest.fixture
def page(qtbot):
    p = LabPage()
    qtbot.addWidget(p)
    qtbot.waitUntil(lambda: p.ready, timeout=60_000)
    yield p
    p.shutdown()


def test_a_run_whose_scores_miss_a_curve_row_is_refused_inline_and_a_good_one_then_opens(
        page, qtbot, saved, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    meta = json.loads((saved / "run.json").read_text())
    meta["scores"].pop()
    (bad / "run.json").write_text(json.dumps(meta))
    (bad / "model.safetensors").write_bytes((saved / "model.safetensors").read_bytes())
    page.load_folder(str(bad))
    qtbot.waitUntil(lambda: not page.running, timeout=60_000)
    assert "scores" in page.error.text()  # said inline, not drawn half and called finished
    assert page.progress.text() == "loading stopped"
    page.load_folder(str(saved))
    qtbot.waitUntil(lambda: not page.running, timeout=60_000)
    assert page.error.text() == "" and page.progress.text() == "loading finished"
    curves = page.views.phase.score_plot.curve_data()
    assert curves and all(len(x) == len(y) == 3 for x, y in curves.values())  # steps 3, 6 and 9
