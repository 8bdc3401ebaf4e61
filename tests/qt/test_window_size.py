"""The window fits a 1280×720 laptop, and on a 1920×1080 screen the default layout
leaves the stage diagram room to draw its labels at 14 pt and up."""

from __future__ import annotations

import pytest
from waits import UI_MS

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

    qtbot.waitUntil(settled, timeout=UI_MS)


def test_presentation_draws_every_diagram_label_at_20_points_or_more(qtbot, make_window):
    window = make_window(size=(1280, 720))
    window.set_presentation(True)  # on the tests' 1920×1080 screen
    qtbot.waitUntil(lambda: window.isFullScreen(), timeout=UI_MS)
    for stage in STAGE_IDS:
        window.controller.set_stage(stage)
        assert window.stage_view.diagram.smallest_text_points() >= 20, stage
    window.set_presentation(False)


def drawn_share(diagram) -> tuple[float, float]:
    """How much of the diagram's pane the stage's picture covers, across and down."""
    from PySide6.QtCore import QRectF

    rect = QRectF()
    for item in diagram.items_by_key().values():
        rect = rect.united(item.sceneBoundingRect())
    shown = diagram.mapFromScene(rect).boundingRect()
    pane = diagram.viewport().rect()
    return shown.width() / pane.width(), shown.height() / pane.height()


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_every_stage_fills_its_pane_and_its_type_grows_with_it(qtbot, make_window, size):
    window = make_window(size=size)
    window.set_reduced_motion(True, remember=False)
    diagram = window.stage_view.diagram
    for stage in STAGE_IDS:
        window.controller.set_stage(stage)
        across, down = drawn_share(diagram)
        assert max(across, down) >= 0.8, (stage, across, down)
        assert min(across, down) >= 0.35, (stage, across, down)
    window.controller.set_stage("input")
    x = diagram.items_by_key()["X"]
    box = diagram.mapFromScene(x.sceneBoundingRect()).boundingRect()
    assert box.width() >= 0.25 * diagram.viewport().width(), box


def test_a_first_launch_takes_the_whole_free_screen(qtbot, tmp_path):
    from mha_explorer.qt.shell.app import build_window
    from mha_explorer.qt.shell.settings import Preferences

    window = build_window(MHAConfig(d_model=64, n_heads=4, batch=1, seq=6, device="cpu"),
                          Preferences(str(tmp_path / "settings.ini")))
    qtbot.addWidget(window)
    window.show()  # no saved place, no size asked for
    qtbot.waitExposed(window, timeout=UI_MS)
    area = window.screen().availableGeometry()
    assert window.isMaximized() or window.geometry() == area
    assert area.contains(window.geometry())
    assert window.width() * window.height() >= 0.9 * area.width() * area.height()
    window.close()


def test_a_narrow_centre_gives_the_code_s_width_to_the_diagram(qtbot, make_window):
    window = make_window(size=(1280, 720))
    view = window.stage_view
    qtbot.waitUntil(lambda: view.width() < 760 and view.code_panel.isHidden(), timeout=UI_MS)
    assert view.diagram.width() >= 0.9 * view.width()
    assert view.code_visible and window.actions["toggle_code"].isChecked()  # still wanted
    window.resize(1920, 1080)
    window.apply_default_layout()
    qtbot.waitUntil(lambda: view.code_panel.isVisible(), timeout=UI_MS)  # room again: the code is back
