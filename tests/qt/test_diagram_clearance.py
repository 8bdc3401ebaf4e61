"""The project stage on a laptop: the input's width chip ('D=512') keeps clear of the '×'
signs and of the lines that carry the input to them, so the number reads whole."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF

from mha_explorer.core.config import MHAConfig

CFG = MHAConfig(d_model=512, n_heads=8, batch=2, seq=6, device="cpu")
LAPTOPS = [(1024, 768), (1280, 720)]
CLEAR_PX = 4  # scene pixels of page between the chip and any line or sign


def _points(item, steps: int = 200) -> list[QPointF]:
    """Points along a connector, in scene coordinates."""
    path = item.mapToScene(item.path())
    return [path.pointAtPercent(i / steps) for i in range(steps + 1)]


@pytest.mark.parametrize("size", LAPTOPS, ids=[f"{w}x{h}" for w, h in LAPTOPS])
def test_the_inputs_width_chip_keeps_clear_of_the_times_signs(qtbot, make_window, size):
    window = make_window(CFG, size=size)
    window.set_reduced_motion(True, remember=False)
    window.controller.set_stage("project")
    items = window.stage_view.diagram.items_by_key()
    chip = items["X.top.D"]
    assert chip.text() == f"D={CFG.d_model:,}"
    around = chip.sceneBoundingRect().adjusted(-CLEAR_PX, -CLEAR_PX, CLEAR_PX, CLEAR_PX)
    signs = [k for k in items if k.startswith("op.times.")]
    feeds = [k for k in items if k.startswith("feed.X.")]
    assert len(signs) == 3 and len(feeds) == 3
    for key in signs:
        assert not around.intersects(items[key].sceneBoundingRect()), key
    for key in feeds:
        assert not any(around.contains(p) for p in _points(items[key])), key
