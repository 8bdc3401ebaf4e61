"""The Layers dock's What-if tab with a trained decoder: each job shows its progress and stops on
Cancel, its answer is drawn (pattern beside effect, the patching map, the lens and its bars),
a refused input is said on the page, and clicking a head opens that layer and head in the stage
view."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QScrollArea

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.gemma3 import files
from mha_explorer.core.stages.catalog import StageId

AVAILABLE, WHY = files.is_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=WHY)
GEMMA = MODELS["gemma3-270m"]
SMOLLM2 = MODELS["smollm2-135m"]
WAIT_MS = 180_000
LAYOUT_MS = 5_000  # a resized dock lays itself out again


def _open_what_if(make_window, model):
    pieces = runtime.as_pieces(model, ["The", "cat", "sat"])
    cfg = MHAConfig(**trained_fields(model, 2), weights=model.key, layer=2, tokens=pieces, seq=len(pieces),
                    batch=1)
    window = make_window(cfg)
    window.docks["layers"].show()
    window.docks["layers"].raise_()
    panel = window.layers_panel
    assert panel.tables.isTabEnabled(3)  # a decoder's tab
    panel.tables.setCurrentIndex(3)
    return window, panel.what_if


@pytest.fixture
def what_if(make_window):
    return _open_what_if(make_window, GEMMA)


def _progressed(jobs, kind) -> list[float]:
    seen: list[float] = []
    jobs.progressed.connect(lambda p: seen.append(p.fraction) if p.kind == kind else None)
    return seen


def _answered(qtbot, page) -> None:
    """Wait for the page's answer, or its refusal (said at once, not waited out)."""
    qtbot.waitUntil(lambda: page.result is not None or page.summary.text().startswith("Not computed"),
                    timeout=WAIT_MS)
    assert page.result is not None, page.summary.text()


def _click(qtbot, widget, rect) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton, pos=rect.center().toPoint())


def _opened(window, layer: int, head: int) -> bool:
    c = window.controller
    return c.config.layer == layer and c.head == head and c.stage == StageId.softmax


def test_switching_heads_off_shows_pattern_beside_effect_and_opens_a_head(qtbot, what_if):
    window, view = what_if
    page = view.effects
    page.n_spin.setValue(3)
    seen = _progressed(window.controller.jobs, page.KIND)
    page.run_button.click()
    assert not page.run_button.isEnabled() and page.cancel_button.isEnabled() and page.progress.isVisible()
    qtbot.waitUntil(lambda: page.result is not None, timeout=WAIT_MS)
    assert seen and seen == sorted(seen) and 0 < seen[-1] <= 1  # the bar moved forward
    assert page.run_button.isEnabled() and not page.progress.isVisible()
    r = page.result
    assert page.pattern.shape == page.effect.shape == (18, 4)
    np.testing.assert_allclose(page.pattern.values, r.induction)
    np.testing.assert_allclose(page.effect.values, r.ablated - r.loss_second)
    assert page.table.rowCount() == 72
    top = page.table.head_at(0)  # rank 1: the largest loss added
    assert r.ablated[top[0] - 1, top[1]] == r.ablated.max()
    assert f"{r.loss_first:.2f}" in page.summary.text() and f"{r.loss_second:.2f}" in page.summary.text()
    layer, head = 5, 3
    _click(qtbot, page.effect, page.effect.cell_rect(layer, head))
    qtbot.waitUntil(lambda: _opened(window, layer, head), timeout=WAIT_MS)
    page.table.selectRow(0)
    _click(qtbot, page.table.viewport(), page.table.visualItemRect(page.table.item(0, 1)).toRectF())
    qtbot.waitUntil(lambda: _opened(window, *top), timeout=WAIT_MS)


def test_cancel_stops_patching_and_draws_nothing(qtbot, what_if):
    window, view = what_if
    page = view.patching
    view.setCurrentWidget(page)
    jobs = window.controller.jobs
    seen = _progressed(jobs, page.KIND)
    page.run_button.click()
    qtbot.waitUntil(lambda: bool(seen), timeout=WAIT_MS)  # under way, its bar moving
    with qtbot.waitSignal(jobs.cancelled, timeout=WAIT_MS, check_params_cb=lambda job: job.kind == page.KIND):
        page.cancel_button.click()
        assert page.run_button.isEnabled() and not page.cancel_button.isEnabled()
    assert page.result is None and page.grid.values is None
    assert page.summary.text().startswith("Cancelled")


def test_patching_refuses_prompts_of_different_lengths_on_the_page(qtbot, what_if):
    _, view = what_if
    page = view.patching
    page.fields["corrupt"].setText("When Mary and John went to the store, Mary went to")
    page.run_button.click()
    qtbot.waitUntil(lambda: page.summary.text().startswith("Not computed"), timeout=WAIT_MS)
    assert "tokens" in page.summary.text() and "'▁went'" in page.summary.text()
    assert page.run_button.isEnabled() and page.grid.values is None
    page.fields["corrupt"].setText(page.fields["clean"].text())  # same length, and nothing to patch
    page.fields["answer"].setText(" Maryanne")
    page.run_button.click()
    qtbot.waitUntil(lambda: "Not computed" in page.summary.text() and "Maryanne" in page.summary.text(),
                    timeout=WAIT_MS)


def test_the_lens_table_and_the_logit_in_bars(qtbot, what_if):
    window, view = what_if
    page = view.lens
    view.setCurrentWidget(page)
    page.text_field.setText("The cat sat on the")
    page.run_button.click()
    qtbot.waitUntil(lambda: page.result is not None, timeout=WAIT_MS)
    r = page.result
    T = len(r.token_ids)
    assert (page.table.rowCount(), page.table.columnCount()) == (19, T)
    assert [page.table.horizontalHeaderItem(t).text() for t in range(T)] == list(r.pieces)
    # in a 1280×720 window the dock is short: the page scrolls, and the answer keeps a dozen rows
    dock = window.docks["layers"]  # made short, as beside another dock on a projector
    dock.setFloating(True)
    dock.resize(dock.width(), 360)
    qtbot.waitUntil(lambda: dock.height() <= 400, timeout=LAYOUT_MS)
    area = page.table.parentWidget()
    while not isinstance(area, QScrollArea):  # the area the answer scrolls in
        area = area.parentWidget()
    # the page scrolls in the dock rather than leaving the answer a slit of a row or two
    qtbot.waitUntil(lambda: area.viewport().height() >= 10 * page.table.rowHeight(0), timeout=LAYOUT_MS)
    dock.setFloating(False)
    last = page.table.item(18, T - 1)  # the model's own answer
    assert last.text() == r.top_texts[18][T - 1].replace(" ", "▁")
    assert f"{r.top_probs[18, T - 1]:.3f}" in last.toolTip()
    a = r.attribution
    assert abs(a.total - a.logit) <= 1e-3
    bars = page.bars
    assert len(bars.names) == 16 and abs(bars.values[0]) == np.abs(a.values).max()
    row = next(i for i, h in enumerate(bars.heads) if h is not None)
    _click(qtbot, bars, bars.row_rect(row))
    qtbot.waitUntil(lambda: _opened(window, *bars.heads[row]), timeout=WAIT_MS)


@pytest.mark.skipif(not runtime.is_available(SMOLLM2)[0], reason=runtime.is_available(SMOLLM2)[1])
def test_a_decoder_with_grouped_query_heads_is_read_and_patched_in_the_tab(qtbot, make_window):
    window, view = _open_what_if(make_window, SMOLLM2)
    lens = view.lens
    view.setCurrentWidget(lens)
    lens.text_field.setText("The cat sat on the")
    lens.run_button.click()
    _answered(qtbot, lens)
    T = len(lens.result.token_ids)
    assert (lens.table.rowCount(), lens.table.columnCount()) == (SMOLLM2.layers + 1, T)
    names = lens.result.attribution.names
    assert f"L{SMOLLM2.layers} h{SMOLLM2.heads - 1}" in names  # every query head is a part, not only 3
    patching = view.patching
    view.setCurrentWidget(patching)
    patching.run_button.click()
    _answered(qtbot, patching)
    assert patching.grid.shape == (SMOLLM2.layers, SMOLLM2.heads)
    grid = patching.grid  # every layer's row in sight at once, the strongest heads near the bottom
    area = grid.parentWidget()
    while not isinstance(area, QScrollArea):
        area = area.parentWidget()
    last = grid.mapTo(area.viewport(), grid.cell_rect(SMOLLM2.layers, 0).bottomLeft().toPoint())
    assert last.y() <= area.viewport().height()
    r = patching.result
    top = np.unravel_index(np.argmax(r.recovered), r.recovered.shape)
    assert f"layer {top[0] + 1}, head {top[1]}" in patching.summary.text()
