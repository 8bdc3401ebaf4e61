"""The window fits a 1280×720 laptop, and on a 1920×1080 screen the default layout
leaves the stage diagram room to draw its labels at 14 pt and up."""

from __future__ import annotations

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.qt.stage import diagram_style as style

LONG = MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, batch=3, seq=7, kv_seq=5, causal=True,
                 causal_alignment="bottom-right", tokens=None, device="cpu")


@pytest.mark.parametrize("config", [None, LONG], ids=["mha", "gqa-cross-causal"])
def test_the_minimum_size_fits_1280_by_720_on_every_stage(qtbot, make_window, config):
    window = make_window(config)
    for stage in STAGE_IDS:  # the explanations differ in length from stage to stage
        window.controller.set_stage(stage)
        hint = window.minimumSizeHint()
        assert hint.width() <= 1280 and hint.height() <= 720, (stage, hint)
    assert window.height() == 720  # shown at 1280×720, it stays that size


def test_the_minimum_size_fits_in_the_dark_theme_too(qtbot, make_window):
    window = make_window()
    window.set_theme("dark", remember=False)
    hint = window.minimumSizeHint()
    assert hint.width() <= 1280 and hint.height() <= 720, hint


def test_at_1920_the_diagram_labels_reach_14_points(qtbot, make_window):
    window = make_window(size=(1920, 1080))
    window.apply_default_layout()

    def settled() -> None:  # the layout finishes in deferred steps; on a busy machine later
        assert window.stage_view.diagram.width() > 900
        scale = window.stage_view.diagram.transform().m11()
        assert style.LABEL_PT * scale >= 14, scale
        assert window.stage_view.code_panel.horizontalScrollBar().maximum() == 0

    qtbot.waitUntil(settled)


def test_presentation_draws_every_diagram_label_at_20_points_or_more(qtbot, make_window):
    window = make_window(size=(1280, 720))
    window.set_presentation(True)  # on the tests' 1920×1080 screen
    qtbot.waitUntil(lambda: window.isFullScreen())
    for stage in STAGE_IDS:
        window.controller.set_stage(stage)
        assert window.stage_view.diagram.smallest_text_points() >= 20, stage
    window.set_presentation(False)
