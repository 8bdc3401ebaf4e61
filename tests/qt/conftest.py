"""Fixtures for driving the Qt part offscreen: a started controller that is
always shut down, and a check that no compute thread outlives its test."""

from __future__ import annotations

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.controller import Controller

TRACE_TIMEOUT_MS = 60_000  # torch's first import on a slow CI machine


@pytest.fixture
def make_controller(qtbot):
    made: list[Controller] = []

    def make(config: MHAConfig | None = None, *, wait: bool = True, **kwargs) -> Controller:
        ctrl = Controller(config or MHAConfig(d_model=64, n_heads=4, batch=2, seq=6), **kwargs)
        made.append(ctrl)
        if wait:
            with qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_TIMEOUT_MS):
                ctrl.start()
        else:
            ctrl.start()
        return ctrl

    yield make
    for ctrl in made:
        ctrl.shutdown()
        assert not ctrl._thread.isRunning(), "the compute thread outlived the test"


@pytest.fixture
def controller(make_controller):
    return make_controller()
