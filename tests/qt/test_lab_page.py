"""The Lab page as a person uses it: a task with its sample, a tiny sweep that fills
the comparison, pruning answer and survivors, inline errors, cancel, export."""

import pytest
from teardown import gone
from waits import TRACE_MS, wait_until

from mha_explorer.core.lab.tasks import TASKS
from mha_explorer.qt.lab.page import LabPage


def _ready_page() -> LabPage:
    p = LabPage()
    p.show()
    wait_until(lambda: p.ready, timeout=TRACE_MS, what="the training process ready")
    return p


@pytest.fixture(scope="module")
def page(qapp):
    """One page, and so one training process, for the tests that only use the page; a test
    about the process itself (stopped, killed, cancelled) has its own: ``own_page``."""
    p = _ready_page()
    yield p
    p.shutdown()
    gone(p)


@pytest.fixture
def own_page(qtbot):
    p = _ready_page()
    qtbot.addWidget(p)
    yield p
    p.shutdown()


def _tiny(page, heads="1,2", steps=20):
    page.task.setCurrentText("reverse")  # the page's first task
    page.d_model.setValue(8)
    page.steps.setValue(steps)
    page.sweep_heads.setText(heads)


def test_choosing_a_task_shows_its_explanation_and_sample(page):
    page.task.setCurrentText("sort")
    assert page.explanation.text() == TASKS["sort"].explanation
    source, answer = page.sample.text().split("->")
    assert answer.split() == sorted(source.split()[:6])


def test_a_sweep_fills_the_table_the_pruning_answer_and_the_survivors(page, qtbot, tmp_path):
    _tiny(page)
    page.sweep_button.click()
    assert page.running
    # waits on the page, not on the worker's signals: a test's slot on those would run on its thread
    qtbot.waitUntil(lambda: not page.running, timeout=120_000)
    assert page.comparison.rowCount() == 2
    assert [page.comparison.item(r, 0).text() for r in range(2)] == ["1", "2"]
    assert page.shown_run.count() == 2
    assert page.ranking.rowCount() == 2  # the 2-head run is shown: both heads ranked
    assert page.answer.text().startswith("2 heads:")
    survivors = page.answer.text().split("survivors: ")[1]
    assert page.survivors.cell_count() == (0 if survivors == "none" else len(survivors.split(", ")))
    # the Comparison tab reads the trade-off off this sweep: d_k per count, each run's outcome
    tradeoff = page.tradeoff.text()
    assert "d_model 8" in tradeoff and "1 head (d_k 8)" in tradeoff and "2 heads" in tradeoff
    if page.comparison.item(0, 1).text() == "not reached":
        assert "1 head (d_k 8) ended at" in tradeoff
    written = page.export_to(str(tmp_path / "out"))
    names = {p.name for p in written}
    assert {"lab-comparison.csv", "lab-pruning.csv", "lab-loss.png", "lab-pruning.svg"} <= names
    rows = (tmp_path / "out" / "lab-comparison.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[0].startswith("heads,steps_to_95")


def test_bad_head_counts_are_said_inline_and_nothing_starts(page):
    page.d_model.setValue(8)
    page.sweep_heads.setText("1,3")
    page.sweep_button.click()
    assert "3 heads do not divide d_model 8" in page.error.text()
    assert not page.running


def test_cancel_stops_a_long_run_and_the_buttons_come_back(own_page, qtbot):
    page = own_page  # a page, and a training process, of its own
    _tiny(page, heads="2", steps=100_000)
    page.analyse.setChecked(False)
    page.sweep_button.click()
    qtbot.waitUntil(lambda: page.progress.text().startswith("h=2: step"), timeout=60_000)
    assert page.running and not page.train_button.isEnabled()
    page.cancel_button.click()
    qtbot.waitUntil(lambda: not page.running, timeout=60_000)
    assert page.train_button.isEnabled() and "cancelled" in page.progress.text()


@pytest.mark.slow
def test_a_training_process_that_dies_is_said_inline_and_the_next_run_starts_afresh(own_page, qtbot):
    page = own_page  # a page, and a training process, of its own
    _tiny(page, heads="2", steps=100_000)
    page.analyse.setChecked(False)
    page.sweep_button.click()
    qtbot.waitUntil(lambda: page.progress.text().startswith("h=2: step"), timeout=60_000)
    page.worker.kill()  # as the system would end it when out of memory
    qtbot.waitUntil(lambda: not page.running, timeout=60_000)
    assert "training process stopped" in page.error.text()
    assert page.train_button.isEnabled()
    _tiny(page, heads="1", steps=10)
    page.sweep_button.click()
    qtbot.waitUntil(lambda: not page.running, timeout=120_000)
    assert page.error.text() == "" and page.comparison.rowCount() == 1


@pytest.mark.slow
def test_cancel_ends_a_trainer_that_does_not_answer(own_page, qtbot):
    """A training process stuck where it cannot look at the cancel (stopped here, as a
    blocked read would hold it): after a short grace it is ended, the page comes back,
    and the next run starts a fresh one."""
    import os
    import signal

    page = own_page  # a page, and a training process, of its own
    _tiny(page, heads="2", steps=100_000)
    page.analyse.setChecked(False)
    page.sweep_button.click()
    qtbot.waitUntil(lambda: page.progress.text().startswith("h=2: step"), timeout=60_000)
    stuck = page.worker.process_id
    os.kill(stuck, signal.SIGSTOP)
    page.cancel_button.click()
    qtbot.waitUntil(lambda: not page.running, timeout=60_000)
    assert "cancelled" in page.progress.text() and page.error.text() == ""
    assert page.train_button.isEnabled() and page.load_button.isEnabled()
    _tiny(page, heads="1", steps=10)
    page.sweep_button.click()
    qtbot.waitUntil(lambda: not page.running, timeout=120_000)
    assert page.comparison.rowCount() == 1 and page.worker.process_id != stuck
