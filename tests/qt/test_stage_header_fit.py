"""On a laptop's window the stage's words above the diagram show whole, never a
half-cut last line, and the diagram keeps the height its attention grid needs."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QLabel, QScrollArea

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.stages.catalog import STAGE_IDS

WORDS = ("the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired")
CLASS = MHAConfig(d_model=512, n_heads=8, batch=1, seq=len(WORDS), tokens=WORDS, device="cpu")
LAPTOPS = [(1280, 720), (1024, 768)]
GRID_FLOOR_PX = 120  # the softmax weights of 10 words: 12 px a cell and more


def _laid_out(qtbot, make_window, size):
    window = make_window(CLASS, size=size)
    window.apply_default_layout()
    window.set_reduced_motion(True, remember=False)
    qtbot.waitUntil(lambda: window.stage_view.compact)  # the header above the diagram
    return window


def _shown_labels(view) -> list[QLabel]:
    return [label for label in view.header.findChildren(QLabel) if label.isVisibleTo(view.header)]


@pytest.mark.parametrize("size", LAPTOPS, ids=[f"{w}x{h}" for w, h in LAPTOPS])
def test_every_line_of_the_stage_header_shows_whole(qtbot, make_window, size):
    window = _laid_out(qtbot, make_window, size)
    view = window.stage_view
    box = view.findChild(QScrollArea, "stageHeaderBox")
    for stage in STAGE_IDS:  # the explanations differ in length from stage to stage
        window.controller.set_stage(stage)

        def whole(stage: str = stage) -> None:
            assert box.verticalScrollBar().maximum() == 0, (stage, box.height())
            for label in _shown_labels(view):  # each label as tall as its wrapped text
                assert label.height() >= label.heightForWidth(label.width()), (stage, label.text())

        qtbot.waitUntil(whole)
        plan = window.controller.plan.stage(stage)
        if view.explanation.text() != plan.explanation:  # cut at a whole line, the rest on hover
            assert view.explanation.text().endswith("…"), stage
            assert view.explanation.toolTip() == plan.explanation, stage


@pytest.mark.parametrize("size", LAPTOPS, ids=[f"{w}x{h}" for w, h in LAPTOPS])
def test_the_softmax_grid_keeps_a_readable_size(qtbot, make_window, size):
    window = _laid_out(qtbot, make_window, size)
    diagram = window.stage_view.diagram
    window.controller.set_stage("softmax")

    def large() -> None:
        grid = diagram.items_by_key()["grid"]
        shown = diagram.mapFromScene(grid.sceneBoundingRect()).boundingRect()
        assert min(shown.width(), shown.height()) >= GRID_FLOOR_PX, shown

    qtbot.waitUntil(large)
