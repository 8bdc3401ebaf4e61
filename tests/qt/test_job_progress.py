"""Work besides the trace says what it is, how far it is, and stops on Cancel: a person
waiting on the tiles or a model writing sees it in the status bar, not a frozen dock."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtWidgets import QProgressBar, QPushButton
from waits import TRACE_MS

from mha_explorer.core.errors import Cancelled
from mha_explorer.qt.job_controls import JobControls
from mha_explorer.qt.jobs import JobKind, Jobs
from mha_explorer.qt.shell.job_progress import SHOW_AFTER_MS, JobProgressView, words_for


@pytest.fixture
def own_jobs(qtbot):
    """A jobs thread of the test's own, so nothing else the window runs shows beside it."""
    jobs = Jobs()
    jobs.start()
    view = JobProgressView(jobs)
    qtbot.addWidget(view)
    view.show()  # as in the status bar: shown when it has something to say
    view.hide()
    yield jobs, view
    jobs.shutdown()


def long_work(release: threading.Event, *, cancel, progress):
    """Runs until released or cancelled, saying it is a third of the way."""
    progress(1 / 3)
    while not release.wait(0.005):
        if cancel():
            raise Cancelled()
    return "finished"


def test_a_long_job_shows_its_words_and_progress_and_cancel_stops_it(own_jobs, qtbot):
    jobs, view = own_jobs
    release = threading.Event()
    try:
        with qtbot.waitSignal(jobs.cancelled, timeout=10_000) as stopped:
            jobs.submit(JobKind.tiles, long_work, release, cancellable=True)
            qtbot.waitUntil(lambda: view.isVisible(), timeout=SHOW_AFTER_MS + 10_000)
            assert view.kinds == (JobKind.tiles,)
            assert view.label.text() == words_for(JobKind.tiles) == "computing the tiles…"
            qtbot.waitUntil(lambda: view.bar.value() == 33, timeout=TRACE_MS)
            assert view.cancel_button.isVisible()
            view.cancel_button.click()
        assert stopped.args[0].kind == JobKind.tiles
        assert not view.isVisible()
    finally:
        release.set()


def layer_by_layer(release: threading.Event, *, cancel, progress):
    """Reads six layers, naming each; waits at the third until released or cancelled."""
    for layer in range(1, 7):
        progress(layer / 6, f"reading layer {layer} of 6…")
        while layer == 3 and not release.wait(0.005):
            if cancel():
                raise Cancelled()
    return "read"


def test_a_job_that_names_its_step_shows_it_in_place_of_its_kind(own_jobs, qtbot):
    jobs, view = own_jobs
    release = threading.Event()
    try:
        jobs.submit(JobKind.layers, layer_by_layer, release, cancellable=True)
        qtbot.waitUntil(lambda: view.isVisible(), timeout=SHOW_AFTER_MS + 10_000)
        qtbot.waitUntil(lambda: view.label.text() == "reading layer 3 of 6…", timeout=TRACE_MS)
        assert view.bar.value() == 50  # the fraction still moves the bar
        with qtbot.waitSignal(jobs.done, timeout=10_000):
            release.set()
        assert not view.isVisible()
        # the next run starts with the kind's own words, not the last run's step
        again = threading.Event()
        jobs.submit(JobKind.layers, again.wait, 30)
        qtbot.waitUntil(lambda: view.isVisible(), timeout=SHOW_AFTER_MS + 10_000)
        assert view.label.text() == "reading every layer…"
        with qtbot.waitSignal(jobs.done, timeout=10_000):
            again.set()
    finally:
        release.set()


def test_the_layers_dock_s_job_names_each_layer_it_reads(own_jobs, qtbot):
    from mha_explorer.core.models.catalog import model_named
    from mha_explorer.core.models.minilm.files import is_available
    from mha_explorer.qt.trained.layers_panel import _all_layers

    ok, why = is_available()
    if not ok:
        pytest.skip(why)
    jobs, _view = own_jobs
    said = []
    jobs.progressed.connect(lambda p: said.append(p.text))
    with qtbot.waitSignal(jobs.done, timeout=60_000):
        jobs.submit(JobKind.layers, _all_layers, "minilm-l6", ("[CLS]", "the", "cat", "[SEP]"),
                    cancellable=True)
    layers = model_named("minilm-l6").layers
    assert [t for t in said if t] == [f"reading layer {k} of {layers}…" for k in range(1, layers + 1)]


def test_a_quick_job_is_never_announced(own_jobs, qtbot):
    jobs, view = own_jobs
    with qtbot.waitSignal(jobs.done, timeout=10_000, check_params_cb=lambda d: d.kind == JobKind.decode):
        jobs.submit(JobKind.decode, lambda: 42)
    assert not view.isVisible()
    qtbot.wait(SHOW_AFTER_MS + 100)  # past the moment it would have appeared
    assert not view.isVisible()


def test_a_job_that_cannot_stop_has_no_cancel_button(own_jobs, qtbot):
    jobs, view = own_jobs
    release = threading.Event()
    try:
        jobs.submit(JobKind.layers, release.wait, 30)
        qtbot.waitUntil(lambda: view.isVisible(), timeout=SHOW_AFTER_MS + 10_000)
        assert view.label.text() == "reading every layer…"
        assert view.bar.maximum() == 0  # busy: it says nothing of how far it is
        assert not view.cancel_button.isVisible()
        with qtbot.waitSignal(jobs.done, timeout=10_000):
            release.set()
        assert not view.isVisible()
    finally:
        release.set()


def test_the_window_announces_its_docks_work(make_window, qtbot):
    window = make_window()
    view = window.status_view.job_progress
    release = threading.Event()
    try:
        window.controller.jobs.submit(JobKind.induction, long_work, release, cancellable=True)
        qtbot.waitUntil(lambda: JobKind.induction in view.kinds, timeout=SHOW_AFTER_MS + 20_000)
        assert words_for(JobKind.induction) in view.label.text()
        assert view.isVisibleTo(window)
        view.cancel_button.click()
        qtbot.waitUntil(lambda: JobKind.induction not in view.kinds, timeout=10_000)
    finally:
        release.set()


def test_a_views_run_button_comes_back_when_the_status_bar_cancels_its_job(own_jobs, qtbot):
    """The status bar's Cancel stops a dock's job without the dock's own button: the dock must
    still give its Run button back and hide its bar."""
    jobs, status = own_jobs
    run, cancel, bar = QPushButton("Run"), QPushButton("Cancel"), QProgressBar()
    for widget in (run, cancel, bar):
        qtbot.addWidget(widget)
    controls = JobControls(jobs, JobKind.induction, run, cancel, bar)
    release = threading.Event()
    try:
        controls.started(jobs.submit(JobKind.induction, long_work, release, cancellable=True))
        assert not run.isEnabled() and cancel.isEnabled()
        qtbot.waitUntil(lambda: JobKind.induction in status.kinds, timeout=SHOW_AFTER_MS + 10_000)
        with qtbot.waitSignal(jobs.cancelled, timeout=10_000):
            status.cancel_button.click()
        assert run.isEnabled() and not cancel.isEnabled() and bar.isHidden()
    finally:
        release.set()
