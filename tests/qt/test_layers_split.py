"""The Layers panel's grid and tables share the dock's room along its longer side: a dock taller
than wide (a side column at 1024×768) stacks the tables under the grid, a wide one sets them
side by side, half each either way, and a split the person dragged stays as they left it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter
from waits import UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.trained.layers_panel import LayersPanel

WAIT_MS = 5_000


def _halves(split: QSplitter) -> bool:
    sizes = split.sizes()
    return min(sizes) >= 0.4 * sum(sizes)


def test_the_tables_go_under_the_grid_in_a_tall_dock_and_beside_it_in_a_wide_one(qtbot):
    controller = Controller(MHAConfig(d_model=64, n_heads=4, seq=6))  # never started
    panel = LayersPanel(controller, controller.jobs)
    qtbot.addWidget(panel)
    split = panel.tables.parentWidget()
    assert isinstance(split, QSplitter)
    panel.resize(320, 40)  # a dock's first few pixels, as a tab behind another
    panel.show()
    qtbot.waitExposed(panel, timeout=UI_MS)
    panel.resize(320, 700)
    qtbot.waitUntil(lambda: split.orientation() == Qt.Orientation.Vertical and _halves(split),
                    timeout=WAIT_MS)
    panel.resize(900, 400)
    qtbot.waitUntil(lambda: split.orientation() == Qt.Orientation.Horizontal and _halves(split),
                    timeout=WAIT_MS)
    split.moveSplitter(200, 1)  # the person gives the grid less room
    qtbot.waitUntil(lambda: not _halves(split), timeout=WAIT_MS)
    dragged = split.sizes()
    panel.resize(920, 400)
    qtbot.waitUntil(lambda: sum(split.sizes()) > sum(dragged), timeout=WAIT_MS)
    assert not _halves(split)  # wider, and still as they left it
