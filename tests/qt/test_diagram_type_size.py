"""In the everyday window on a laptop the stage diagram's words read: no text it draws is
smaller than 11 px on screen, at any stage; and over a long sequence computed at picked
rows, the words down the grid name rows the maps really show."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QGraphicsItem
from waits import UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.qt.stage.diagram_items import BlockItem
from mha_explorer.qt.stage.stage_view import StageView

WORDS = ("the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired")
CLASS = MHAConfig(d_model=512, n_heads=8, batch=1, seq=len(WORDS), tokens=WORDS, device="cpu")
LAPTOPS = [(1280, 720), (1024, 768)]
READABLE_PX = 11.0


def _text_fonts(item: QGraphicsItem) -> list:
    """The fonts ``item`` draws text in (a block draws its tag only where it fits)."""
    if isinstance(item, BlockItem):
        return [item._tag_font] if item._tag else []
    font = getattr(item, "font", None)
    if not callable(font):
        return []
    text = item.text() if callable(getattr(item, "text", None)) else ""
    return [font()] if text else []


def smallest_text_px(diagram) -> float:
    """The smallest drawn text's height on screen: its font's pixel size times the view's scale."""
    dpi = diagram.logicalDpiY()
    scale = diagram.transform().m11()
    sizes = [f.pointSizeF() * dpi / 72 * scale
             for item in diagram.items_by_key().values() for f in _text_fonts(item)]
    assert sizes, "the stage drew no text"
    return min(sizes)


@pytest.mark.parametrize("size", LAPTOPS, ids=[f"{w}x{h}" for w, h in LAPTOPS])
def test_every_stage_draws_its_words_readably_in_the_window(qtbot, make_window, size):
    window = make_window(CLASS, size=size)
    window.apply_default_layout()
    window.set_reduced_motion(True, remember=False)
    qtbot.waitUntil(lambda: window.stage_view.compact, timeout=UI_MS)  # the laptop layout, header above
    diagram = window.stage_view.diagram
    for stage in STAGE_IDS:
        window.controller.set_stage(stage)
        assert diagram.generic.isHidden(), stage  # the scene's drawing, not the generic one
        small = smallest_text_px(diagram)
        assert small >= READABLE_PX, (stage, round(small, 1), diagram.width(), diagram.height())
        # the whole picture is in the pane: none of it cut by the view's edges
        shown = diagram.mapToScene(diagram.viewport().rect()).boundingRect()
        for key, item in diagram.items_by_key().items():
            rect = item.sceneBoundingRect()
            assert shown.adjusted(-2, -2, 2, 2).contains(rect), (stage, key, rect, shown)


def test_the_words_down_a_long_grid_name_the_rows_its_maps_show(qtbot, make_controller):
    # 1,500 rows counted as long (0 s): the maps show 512 picked rows, about every third
    ctrl = make_controller(MHAConfig(d_model=16, n_heads=2, batch=1, seq=1500, device="cpu"),
                           rows_after_s=0.0)
    assert ctrl.trace.row_ids is not None
    view = StageView(ctrl)
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    ctrl.set_stage("softmax")
    picked = {ctrl.trace.tokens_q[r] for r in ctrl.trace.row_ids}
    words = [item for key, item in view.diagram.items_by_key().items() if key.startswith("tok.q")]
    named = [item.text() for item in words]
    assert len(named) >= 3  # the first, some between, the last
    assert all(word in picked for word in named), named
    assert ctrl.trace.tokens_q[ctrl.trace.row_ids[-1]] in named
    # one under the other, none written over its neighbour
    rects = sorted((item.sceneBoundingRect() for item in words), key=lambda r: r.top())
    assert all(a.bottom() <= b.top() + 1 for a, b in zip(rects, rects[1:], strict=False)), rects
