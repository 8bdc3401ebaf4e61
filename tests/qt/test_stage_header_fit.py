"""On a laptop's window the stage's words above the diagram show whole, never a
half-cut last line, and the diagram keeps the height its attention grid needs."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QApplication, QLabel, QScrollArea

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import get_preset
from mha_explorer.core.stages.catalog import STAGE_IDS

WORDS = ("the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired")
CLASS = MHAConfig(d_model=512, n_heads=8, batch=1, seq=len(WORDS), tokens=WORDS, device="cpu")
LAPTOPS = [(1280, 720), (1024, 768)]
GRID_FLOOR_PX = 120  # the softmax weights of 10 words: 12 px a cell and more


def _laid_out(qtbot, make_window, size, cfg=CLASS):
    window = make_window(cfg, size=size)
    window.apply_default_layout()
    window.set_reduced_motion(True, remember=False)
    qtbot.waitUntil(lambda: window.stage_view.compact)  # the header above the diagram
    return window


def _shown_labels(view) -> list[QLabel]:
    """The header's labels that show words: one folded into the title's hover has no height."""
    return [label for label in view.header.findChildren(QLabel)
            if label.isVisibleTo(view.header) and label.maximumHeight() > 0]


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
        if view.explanation.maximumHeight() == 0:  # folded away whole: on the title's hover
            assert plan.explanation in view.title.toolTip(), stage
        elif view.explanation.text() != plan.explanation:  # cut at a whole line, the rest on hover
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


# latent attention's RoPE stage: the q·k plot under the diagram leaves the header least room
DEEPSEEK = get_preset("deepseek-v3").apply(MHAConfig(batch=1, seq=6, device="cpu"))
SMALL_MLA = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu", mla=True, kv_lora_rank=16,
                      q_lora_rank=24, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=12,
                      positions="rope")
ROPE_CASES = [(DEEPSEEK, (1280, 720)), (SMALL_MLA, (1024, 768))]


@pytest.mark.parametrize(("cfg", "size"), ROPE_CASES, ids=["deepseek-v3-1280x720", "mla-1024x768"])
def test_the_rope_stage_title_shows_whole_above_its_plot(qtbot, make_window, settle, cfg, size):
    window = _laid_out(qtbot, make_window, size, cfg)
    view = window.stage_view
    box = view.findChild(QScrollArea, "stageHeaderBox")
    window.controller.set_stage("rope")
    settle(window.controller)
    for _ in range(3):  # the layouts' own requests, posted turn by turn
        QApplication.processEvents()
    title = view.title
    assert title.text() == window.controller.plan.stage("rope").title
    shown = title.visibleRegion().boundingRect()  # what the box's viewport lets through
    assert shown.height() >= title.heightForWidth(title.width()), (shown, title.size())
    assert shown.width() >= min(title.width(), title.fontMetrics().horizontalAdvance(title.text()))
    corner = title.mapTo(box.viewport(), QPoint(0, 0))
    assert box.viewport().rect().contains(QRect(corner, title.size())), (corner, box.height())
    assert view.rope_plot is not None and view.rope_plot.isVisible()
    caption = view.rope_plot.caption  # the plot that gave the room shows whole lines
    assert caption.height() >= caption.heightForWidth(caption.width()), (caption.size(), caption.text())
    assert window.height() == size[1]  # the title's room came from inside the window
