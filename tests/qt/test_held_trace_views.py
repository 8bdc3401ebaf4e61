"""The window draws a trace whose tensors stay where they were computed (a GPU's, or a
bfloat16 run's on the CPU): switching to another batch element copies that element, once,
and the maps show exactly the run's numbers."""

from __future__ import annotations

import numpy as np

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.engine.runner import run
from mha_explorer.core.kernels import host
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.qt.heads.heads_panel import HeatmapPanel

TRACE_TIMEOUT_MS = 60_000  # as tests/qt/conftest.py: torch may still be loading
HELD = MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, batch=3, seq=6, causal=True, device="cpu",
                 dtype="bfloat16")


def test_another_batch_element_is_copied_once_and_drawn_exactly(make_controller, qtbot, settle,
                                                                   monkeypatch):
    ctrl = make_controller(HELD)
    panel = HeatmapPanel(ctrl)
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    ctrl.set_stage(StageId.softmax)
    settle(ctrl)
    crossed: list[tuple[int, ...]] = []
    copy = host.copy_to_host
    monkeypatch.setattr(host, "copy_to_host", lambda t, wait=True: crossed.append(tuple(t.shape))
                        or copy(t, wait))

    panel.batch_spin.setValue(2)
    settle(ctrl)
    c = ctrl.config
    assert crossed == [(c.H, c.T, c.S)]  # the weights of element 2, once (its maps, their entropies)
    reference = np.asarray(run(HELD).tensors[StageId.softmax]["weights"])  # the run again, whole
    for h, item in enumerate(panel.image_items):
        np.testing.assert_array_equal(item.image, reference[2, h])

    crossed.clear()
    panel.batch_spin.setValue(0)  # back to the element the run copied: nothing crosses
    settle(ctrl)
    panel.batch_spin.setValue(2)  # nor for one already read
    settle(ctrl)
    assert crossed == []
