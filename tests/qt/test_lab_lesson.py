"""What the Lab page teaches, as a student sees it: the Induction circuit tab lines the
loss drop up with the induction head's prefix matching and names the previous-token
head it reads; a one-layer run is said to form none; pruning says it is measured on
fresh data beside Michel et al.'s share; and a bad saved run is said inline while
what was shown stays."""

from __future__ import annotations

import json
import os

import pytest

from mha_explorer.core.lab.analysis import ablate, find_circuit, prune
from mha_explorer.core.lab.model import LabModelSpec
from mha_explorer.core.lab.service import run_summary
from mha_explorer.core.lab.store import save_run
from mha_explorer.core.lab.train import TrainSettings, train
from mha_explorer.qt.lab.page import LabPage
from mha_explorer.qt.lab.phase import PhaseView

# the induction pair is trained once per run (tests/conftest.py), shared with tests/core
uses_the_pair = pytest.mark.xdist_group("induction")


@pytest.fixture(scope="module")
def summaries(induction_pair):
    return {layers: run_summary(run, ablate(run), prune(run), find_circuit(run))
            for layers, run in induction_pair.items()}


@pytest.fixture
def phase(qtbot):
    view = PhaseView()
    qtbot.addWidget(view)
    view.resize(1400, 800)
    view.show()
    return view


@uses_the_pair
def test_the_phase_change_lines_up_with_the_loss_drop(phase, summaries):
    s = summaries[2]
    phase.show_summary(s)
    phase.show_maps(s)
    story = phase.story.text()
    assert "formed at step" in story and "reads L1 h" in story and "down to" in story
    marker = phase.markers[0]
    assert marker.isVisible() and phase.markers[1].value() == marker.value()
    formed = int(story.split("formed at step ")[1].split(":")[0])
    assert marker.value() == formed
    # the marked step sits where the loss falls: later losses are far below earlier ones
    curve = s["curve"]
    before = curve[curve[:, 0] < formed, 1]
    after = curve[curve[:, 0] > formed + 100, 1]
    assert before.min() > 2 * after.max()
    names = set(phase.score_plot.curve_data())
    assert names == {"held-out accuracy", "prefix matching, best of L2 heads",
                     "previous token, best of L1 heads"}
    # the induction head and the previous-token head it reads, side by side
    titles = [c.full_title for c in phase.maps.cells()]
    assert len(titles) == 2 and "prefix matching" in titles[0] and titles[1].startswith("L1 ")


@uses_the_pair
def test_one_layer_is_said_to_form_no_induction_head_beside_the_paper(phase, summaries):
    phase.show_summary(summaries[1])
    assert phase.story.text().startswith("One layer")
    assert not phase.markers[0].isVisible()
    phase.show_summary(summaries[2])
    session = phase.session.text()
    assert "1 layer: held-out accuracy" in session and "2 layers: held-out accuracy" in session
    assert "Olsson et al. 2022" in phase.paper.text() and "one-layer" in phase.paper.text()


@pytest.fixture
def page(qtbot):
    p = LabPage()
    qtbot.addWidget(p)
    p.resize(1400, 900)
    qtbot.waitUntil(lambda: p.ready, timeout=60_000)
    yield p
    p.shutdown()


def _bad_runs(good, tmp_path) -> dict:
    cases = {}
    for name, change in {
        "NaN in the curve": lambda m: m["curve"].__setitem__(0, [m["curve"][0][0], float("nan"), 0.5]),
        "crafted huge model": lambda m: m["spec"].update(vocab=32_768, d_model=65_536),
        "curve rows of two": lambda m: m.__setitem__("curve", [[1, 2.0]]),
    }.items():
        folder = tmp_path / name.replace(" ", "-")
        save_run(good, folder)
        meta = json.loads((folder / "run.json").read_text())
        change(meta)
        (folder / "run.json").write_text(json.dumps(meta))
        cases[name] = folder
    fifo = tmp_path / "fifo"
    save_run(good, fifo)
    os.unlink(fifo / "model.safetensors")
    os.mkfifo(fifo / "model.safetensors")
    cases["a pipe for weights"] = fifo
    return cases


def test_a_bad_run_is_said_inline_and_what_was_shown_stays(page, qtbot, tmp_path):
    good = train(LabModelSpec(task="copy", vocab=5, n=3, d_model=8, heads=2),
                 TrainSettings(steps=6, batch=4, eval_every=3, eval_size=8))
    save_run(good, tmp_path / "good")
    page.load_folder(str(tmp_path / "good"))
    qtbot.waitUntil(lambda: not page.running and page.shown_run.count() == 1, timeout=60_000)
    assert page.error.text() == ""
    words = {"NaN in the curve": "NaN", "crafted huge model": "'spec.vocab'",
             "curve rows of two": "[step, loss, accuracy]", "a pipe for weights": "pipe"}
    for name, folder in _bad_runs(good, tmp_path).items():
        page.load_folder(str(folder))
        qtbot.waitUntil(lambda: not page.running, timeout=60_000)
        message = page.error.text()
        assert words[name] in message, (name, message)
        assert "Traceback" not in message and "\n" not in message
        # the run that was shown is still shown, and the page still works
        assert page.shown_run.count() == 1 and page.comparison.rowCount() == 1
        assert page.train_button.isEnabled()


def test_pruning_says_it_is_measured_on_fresh_data_beside_michel(page, qtbot):
    page.task.setCurrentText("copy")
    page.d_model.setValue(8)
    page.steps.setValue(20)
    page.sweep_heads.setText("2")
    page.sweep_button.click()
    qtbot.waitUntil(lambda: not page.running and page.shown_run.count() == 1, timeout=120_000)
    assert "measured on fresh data" in page.answer.text()
    note = page.views.pruning_note.text()
    assert "another, fresh one" in note and "Michel et al. 2019" in note
    x, _y = page.pruning_plot.curve_data()["h=2"]
    assert list(x) == [0.0, 50.0, 100.0]  # by share of heads, so runs of any size compare
