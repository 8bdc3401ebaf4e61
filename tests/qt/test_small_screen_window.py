"""The everyday window on a classroom's small screens: the diagram keeps the height its picture
needs, Parameters & memory scrolls as one page (no scroll area inside another), an invalid
d_model's message stays whole where the person is looking, and a K/V choice the weights fix
still reads on its button in both themes."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QPoint, QRectF, QTimer
from PySide6.QtWidgets import QAbstractScrollArea, QGraphicsView

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.qt.shell.layouts import bring_to_front
from tests.qt.drawn_checks import CONTRAST, ink_contrast

SCREENS = [(1024, 768), (1280, 720), (1366, 768)]
IDS = [f"{w}x{h}" for w, h in SCREENS]
DIAGRAM_PX = 300  # at 1280×720 the stage's picture, not its words, has most of the centre


def settle_layout() -> None:
    QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)


def test_at_1280_by_720_the_diagram_keeps_300_rows_at_every_stage(make_window, settle):
    words = ("the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired")
    window = make_window(MHAConfig(d_model=512, n_heads=8, batch=2, seq=len(words), tokens=words,
                                   device="cpu"), size=(1280, 720))
    for stage in STAGE_IDS:  # each stage's words differ in length: the header yields, not the picture
        window.controller.set_stage(stage)
        settle(window.controller)
        settle_layout()
        assert window.stage_view.diagram.height() >= DIAGRAM_PX, (stage, window.stage_view.diagram.size())
    assert window.height() == 720


@pytest.mark.parametrize("size", SCREENS, ids=IDS)
def test_parameters_and_memory_scroll_as_one_page(qtbot, make_window, size):
    window = make_window(size=size)
    window.params  # noqa: B018 - built on first need
    dock = window.docks["params"]
    bring_to_front(dock)
    qtbot.waitUntil(lambda: not dock.visibleRegion().isEmpty(), timeout=5_000)
    settle_layout()
    page = dock.widget()
    assert isinstance(page, QAbstractScrollArea)
    inner = [a for a in page.widget().findChildren(QAbstractScrollArea)
             if a.isVisible() and not isinstance(a, QGraphicsView)]
    for area in inner:  # whatever sits on the page shows all it holds: only the page scrolls down
        assert area.verticalScrollBar().maximum() == 0, (area.objectName(), type(area).__name__)
    table = window.kv_table.table
    rows = sum(table.rowHeight(r) for r in range(table.rowCount()))
    assert table.rowCount() >= 4 and table.viewport().height() >= rows


@pytest.mark.parametrize("size", SCREENS, ids=IDS)
def test_an_invalid_d_models_message_stays_whole_beside_its_field(qtbot, make_window, size):
    window = make_window(size=size, wait=False)
    controls = window.controls
    controls.d_model_spin.setValue(4097)  # not divisible: fixes with four-digit widths
    label = controls.error_label("d_model")
    qtbot.waitUntil(label.isVisible, timeout=5_000)
    settle_layout()
    viewport = controls.form_scroll.viewport()
    seen = QRectF(viewport.rect())
    for widget in (label, *controls.suggestion_buttons()):
        box = QRectF(widget.rect()).translated(QPoint(widget.mapTo(viewport, QPoint(0, 0))))
        assert seen.left() <= box.left() and box.right() <= seen.right(), (widget.text(), box, seen)
    assert "4097" in label.text() and len(controls.suggestion_buttons()) == 4


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_kv_choice_the_weights_fix_reads_on_its_button(make_window, theme):
    window = make_window(wait=False)
    window.set_theme(theme)
    window.controls.boxes["n_kv_heads"].setEnabled(False)  # as a trained model's weights lock it
    button = window.controls.kv_buttons["MHA"]
    assert button.isChecked() and not button.isEnabled()
    image = button.grab().toImage()
    w, h = image.width(), image.height()
    words = QRectF(0.2 * w, 0.25 * h, 0.6 * w, 0.5 * h)  # the label, inside the frame's border
    assert ink_contrast(image, words) >= CONTRAST


def test_the_tables_give_back_generations_room_while_layers_is_open_beside_the_form(qtbot, make_window):
    window = make_window(size=(1280, 720))
    docks = window.docks
    window.layers_panel  # noqa: B018 - built on first need
    window.generation_panel  # noqa: B018
    settle_layout()
    before = docks["shapes"].height()
    bring_to_front(docks["layers"])  # a tab beside the configuration on a screen this narrow
    qtbot.waitUntil(lambda: not docks["layers"].visibleRegion().isEmpty(), timeout=5_000)
    bring_to_front(docks["generation"])  # a roomy view: the row under the stage grows for it
    qtbot.waitUntil(lambda: docks["generation"].height() > before + 50, timeout=5_000)
    bring_to_front(docks["shapes"])  # and gives the stage its rows back after it
    qtbot.waitUntil(lambda: abs(docks["shapes"].height() - before) <= 2, timeout=5_000)
    assert window.stage_view.diagram.height() >= DIAGRAM_PX


def test_a_tab_chosen_at_once_after_reset_layout_gets_its_room(qtbot, make_window):
    window = make_window(size=(1280, 720))
    docks = window.docks
    window.generation_panel  # noqa: B018 - built on first need
    settle_layout()
    before = docks["shapes"].height()
    window.actions["reset_layout"].trigger()
    turned = []
    QTimer.singleShot(0, lambda: turned.append(True))  # the layout's own next turn has run
    qtbot.waitUntil(lambda: bool(turned), timeout=5_000)
    bring_to_front(docks["generation"])  # the person's choice, not the layout's
    qtbot.waitUntil(lambda: docks["generation"].height() > before + 50, timeout=5_000)
