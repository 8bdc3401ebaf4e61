"""The first trace of a launch comes from a process that loaded torch beside the window's
start-up: it is the same trace the window computes itself, the window still gets one when
that process fails, a cancel stops it, and it never outlives the window."""

from __future__ import annotations

import os
import pickle
import pickletools
import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.errors import Cancelled
from mha_explorer.qt import early_engine
from mha_explorer.qt.compute import ComputeRequest, run_engine
from mha_explorer.qt.early_engine import EarlyEngine, FirstRunEarly
from mha_explorer.qt.jobs import JobKind
from mha_explorer.qt.shell.app import build_window

SMALL = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu")
WAIT_S = 120  # the child imports torch first: seconds on a busy two-core machine
TRACE_TIMEOUT_MS = WAIT_S * 1000


def _never() -> bool:
    return False


def _quiet(*_args) -> None:
    pass


def _assert_same_trace(got, want) -> None:
    assert got.config == want.config and got.mode == want.mode and got.rows == want.rows
    assert set(got.tensors) == set(want.tensors)
    for stage, tensors in want.tensors.items():
        for name, array in tensors.items():
            np.testing.assert_array_equal(got.tensors[stage][name], array, err_msg=f"{stage}/{name}")
    assert set(got.weights) == set(want.weights)
    for name in want.weights:
        np.testing.assert_array_equal(got.weights[name], want.weights[name])
    np.testing.assert_array_equal(got.output, want.output)


@pytest.fixture
def early():
    engine = EarlyEngine.start()
    if engine is None:
        pytest.skip("one usable core: the early engine is not used there")
    yield engine
    engine.close()


def test_a_trace_crosses_a_pipe_as_plain_numpy():
    trace = run_engine(ComputeRequest(SMALL), _never, _quiet)
    data = pickle.dumps(trace)
    names = {arg for op, arg, _pos in pickletools.genops(data) if isinstance(arg, str)}
    assert not any(name.startswith("torch") for name in names)  # the window reads it without torch
    _assert_same_trace(pickle.loads(data), trace)


def test_the_early_trace_is_the_one_the_window_computes(early):
    request = ComputeRequest(SMALL)
    said: list[str] = []
    got = early.run(request, _never, lambda _f, words="": said.append(words))
    _assert_same_trace(got, run_engine(request, _never, _quiet))
    assert said[0].startswith("PyTorch loaded in")  # the status line says what it waited for
    assert early._process.poll() is not None  # one answer, then it is gone


def test_a_dead_early_process_still_gives_the_window_its_trace(early):
    early._process.kill()
    early._process.wait(timeout=WAIT_S)
    run = FirstRunEarly(early, run_engine)
    request = ComputeRequest(SMALL)
    _assert_same_trace(run(request, _never, _quiet), run_engine(request, _never, _quiet))
    assert not run.first_elsewhere


def test_cancel_stops_the_early_process(early):
    with pytest.raises(Cancelled):
        early.run(ComputeRequest(SMALL), lambda: True, _quiet)
    assert early._process.poll() is not None  # killed, not left computing


def test_the_early_process_leaves_when_the_window_is_gone(early):
    early._process.stdin.close()  # what a window killed before asking looks like to it
    assert early._process.wait(timeout=WAIT_S) == 0


def test_a_first_trace_too_large_for_the_pipe_is_computed_by_the_window(early, monkeypatch):
    monkeypatch.setattr(early_engine, "EARLY_MAX_BYTES", 1)
    asked: list[ComputeRequest] = []
    run = FirstRunEarly(early, lambda request, cancel, progress: asked.append(request) or "own")
    assert run(ComputeRequest(SMALL), _never, _quiet) == "own"
    assert asked and early._process.wait(timeout=WAIT_S) is not None


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux scheduling policies")
def test_it_takes_only_spare_cpu_until_the_window_asks(early):
    """While the window starts, the early process's torch import takes only CPU time nothing
    else wants: on two busy cores it delayed the window by about 0.4 s. Once the window asks
    for its trace it runs as any process does (where the system lets it change back)."""
    assert os.sched_getscheduler(early.pid) == os.SCHED_IDLE
    policies: list[int] = []

    def progress(_fraction, words=""):
        if not policies:  # its first message comes after it read the request
            policies.append(os.sched_getscheduler(early.pid))

    early.run(ComputeRequest(SMALL), _never, progress)
    if os.geteuid() == 0 or _may_leave_idle():
        assert policies == [os.SCHED_OTHER]


def _may_leave_idle() -> bool:
    """Whether this user may turn a process of theirs from SCHED_IDLE back to the ordinary
    policy (RLIMIT_NICE allows it, or privilege)."""
    import resource

    return resource.getrlimit(resource.RLIMIT_NICE)[0] >= 20


def _reading_stdin(pid: int) -> bool:
    """Blocked in read(0, ...): waiting for GO, or for the request."""
    return Path(f"/proc/{pid}/syscall").read_text().split()[:2] == ["0", "0x0"]


def _loaded_torch(pid: int) -> bool:
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"the early process never got to {what}"
        time.sleep(0.05)


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="reads Linux's /proc")
def test_on_two_cores_torch_loads_once_the_window_is_shown(monkeypatch):
    """Begun at launch, the child's torch import slowed the window's own imports by a quarter
    on two cores; it waits for GO, which the window sends once it is shown. With cores to
    spare it begins at launch."""
    monkeypatch.setattr(early_engine, "usable_cores", lambda: 2)
    engine = EarlyEngine.start()
    try:
        _wait_for(lambda: _reading_stdin(engine.pid), "wait for GO")
        assert not _loaded_torch(engine.pid)
        engine.go()
        _wait_for(lambda: _loaded_torch(engine.pid) and _reading_stdin(engine.pid), "load torch")
    finally:
        engine.close()
    monkeypatch.setattr(early_engine, "usable_cores", lambda: early_engine.GO_AT_LAUNCH_CORES)
    engine = EarlyEngine.start()
    try:
        _wait_for(lambda: _loaded_torch(engine.pid), "load torch without GO")
    finally:
        engine.close()


def test_one_core_starts_no_early_process(monkeypatch):
    monkeypatch.setattr(early_engine, "usable_cores", lambda: 1)
    assert EarlyEngine.start() is None


def test_a_window_started_with_it_shows_its_trace_then_loads_its_own_torch(qtbot, early):
    window = build_window(SMALL, early=early)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    c = window.controller
    began: list[str] = []
    def note(job) -> None:  # the torch jobs, in the order the jobs' thread began them
        if job.kind in (JobKind.trace, JobKind.warm_up):
            began.append(job.kind)

    c.jobs._runner.began.connect(note, Qt.ConnectionType.DirectConnection)
    try:
        with qtbot.waitSignal(c.trace_ready, timeout=TRACE_TIMEOUT_MS) as got:
            window.compute_gate.start()
        assert began == [JobKind.trace]  # the window's own torch waited for the first answer
        _assert_same_trace(got.args[0], run_engine(ComputeRequest(SMALL), _never, _quiet))
        result_line = window.status_view.message
        with qtbot.waitSignal(c.engine_loaded, timeout=TRACE_TIMEOUT_MS):
            pass
        assert began == [JobKind.trace, JobKind.warm_up]
        assert window.status_view.message == result_line  # the result's line stays
        assert early._process.poll() is not None
        with qtbot.waitSignal(c.trace_ready, timeout=TRACE_TIMEOUT_MS):
            c.update(n_heads=8)  # later runs are the window's own
    finally:
        window.close()
