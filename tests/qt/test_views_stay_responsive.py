"""An edit or a large set of maps does not hold the window until every view has
caught up: input that arrives meanwhile is handled between the views' updates,
and every view then shows what it would have shown at once."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QTimer
from waits import UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.memory import format_bytes
from mha_explorer.qt.heads.heads_panel import HeatmapPanel
from mha_explorer.qt.panels.kv_compare import KVCompareTable
from mha_explorer.qt.panels.parameters import ParamsPanel


def handled_meanwhile(probe):
    """What ``probe`` read when the event loop next got to a timer: input pending
    at the moment of the edit is handled then."""
    seen = []
    QTimer.singleShot(0, lambda: seen.append(probe()))
    return seen


def test_input_is_handled_while_many_large_maps_are_drawn(qtbot, make_controller, settle):
    # 16 maps of 512 x 512: drawn and painted at once they held the window for a long moment
    ctrl = make_controller(MHAConfig(d_model=64, n_heads=16, batch=1, seq=512))
    panel = HeatmapPanel(ctrl)
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    qtbot.waitExposed(panel, timeout=UI_MS)
    weights = ctrl.trace.tensors["softmax"]["weights"][0]

    def maps_showing_weights() -> int:
        return sum(item.image is not None and item.image.shape == weights[h].shape
                   and np.array_equal(item.image, weights[h])
                   for h, item in enumerate(panel.image_items))

    seen = handled_meanwhile(maps_showing_weights)
    ctrl.set_stage("softmax")
    qtbot.waitUntil(lambda: bool(seen), timeout=UI_MS)
    assert 0 < seen[0] < 16  # the first maps at once, the rest after the input
    settle(ctrl)
    assert maps_showing_weights() == 16
    assert panel.color_bar.levels() == (0.0, 1.0)


def test_input_is_handled_before_the_slower_tables_follow_an_edit(qtbot, make_controller, settle):
    ctrl = make_controller(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6))
    params, kv = ParamsPanel(ctrl), KVCompareTable(ctrl)
    for widget in (params, kv):
        qtbot.addWidget(widget)
        widget.show()
    before = (params.total_label.text(), kv.caption.text())
    seen = handled_meanwhile(lambda: (params.total_label.text(), kv.caption.text()))
    ctrl.update(d_model=128)
    qtbot.waitUntil(lambda: bool(seen), timeout=UI_MS)
    assert seen[0] == before  # the input came first; the tables follow a moment later
    settle(ctrl)
    assert params.total_label.text() == f"{4 * 128 * 128 + 4 * 128:,}"
    assert params.kv_token_label.text() == format_bytes(2 * 128 * 4)
    assert kv.caption.text().startswith("KV cache for D = 128, H = 4")
