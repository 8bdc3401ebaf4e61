"""Closing the window stops its torch work: a tiles job of a million 1 × 1 tiles is
cancelled between tiles, and the jobs thread ends with the window (not once the
tiles are done, minutes later). How long closing takes: benchmarks/quit_latency.py."""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.jobs import JobKind

WAIT_MS = 120_000


def test_closing_the_window_cancels_a_running_tiles_job_and_stops_the_thread(make_window, qtbot):
    window = make_window(MHAConfig(d_model=8, n_heads=1, batch=1, seq=1024, device="cpu"))
    jobs, gen = window.controller.jobs, window.generation_panel
    cancelled, done = [], []
    jobs.cancelled.connect(lambda job: cancelled.append((job.kind, job.id)))
    jobs.done.connect(lambda answer: done.append((answer.kind, answer.id)))
    window.docks["generation"].raise_()
    gen.tabs.setCurrentIndex(1)
    gen.br_spin.setValue(1)
    gen.bc_spin.setValue(1)
    # under way: the job that says how far it got is the one running (a newer request, queued
    # by the second spin box's edit meanwhile, never runs once the window closes)
    running: list[int] = []

    def tiles_progress(p) -> bool:
        if p.kind == JobKind.tiles:
            running.append(p.id)
        return bool(running)

    with qtbot.waitSignal(jobs.progressed, timeout=WAIT_MS, check_params_cb=tiles_progress):
        pass
    tiles = (JobKind.tiles, running[-1])
    window.close()
    assert not window.controller.is_running()
    # the answer crosses the event loop
    qtbot.waitUntil(lambda: tiles in cancelled or tiles in done, timeout=WAIT_MS)
    assert tiles in cancelled and tiles not in done, (tiles, cancelled, done)


def test_a_piece_of_work_that_cannot_hear_cancel_does_not_hold_the_shutdown(qtbot):
    """Importing torch at the start cannot be interrupted: the closing window lets the thread
    end it alone instead of waiting (the process waits for it only as it exits)."""
    import threading

    from mha_explorer.qt.jobs import Jobs

    jobs = Jobs()
    jobs.start()
    started, release, ended = threading.Event(), threading.Event(), threading.Event()
    still_working_at_shutdown = []

    def deaf():  # no cancel= : it cannot be stopped
        started.set()
        release.wait(60)
        ended.set()

    jobs.submit(JobKind.warm_up, deaf)
    assert started.wait(60)
    stopped = jobs.shutdown()
    still_working_at_shutdown.append(not ended.is_set())
    release.set()
    assert not stopped and still_working_at_shutdown == [True]
    qtbot.waitUntil(lambda: not jobs.thread.isRunning(), timeout=WAIT_MS)
