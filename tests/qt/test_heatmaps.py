"""The heatmap panel draws the engine's numbers, one map per head, as a person
drives it: stage steps, the batch selector, hovering and clicking a head."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QFont, QFontMetrics, QImage, QWheelEvent
from PySide6.QtWidgets import QApplication
from waits import TRACE_MS, UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.display.colors import DIVERGING_COLORMAP, WEIGHTS_COLORMAP
from mha_explorer.core.display.head_maps import build_stage_maps, top_keys
from mha_explorer.core.models.patterns import row_entropy_bits
from mha_explorer.core.plan.memory import estimate
from mha_explorer.qt.heads.cell_grid import POOL_KEEP
from mha_explorer.qt.heads.grid_shape import MIN_CELL_PX, grid_columns
from mha_explorer.qt.heads.head_cell import HeatmapCell
from mha_explorer.qt.heads.heads_panel import CELLS_PER_TURN, HeatmapPanel
from mha_explorer.qt.heads.map_image import MapImage
from mha_explorer.qt.heads.token_axis import TokenAxis

SENTENCE = ("the", "cat", "sat", "on", "the", "mat")


@pytest.fixture
def make_panel(qtbot, make_controller):
    def make(config: MHAConfig | None = None, **kwargs) -> HeatmapPanel:
        ctrl = make_controller(config, **kwargs)
        panel = HeatmapPanel(ctrl)
        qtbot.addWidget(panel)
        panel.resize(900, 700)
        panel.show()
        return panel

    return make


def shown(panel: HeatmapPanel) -> list[np.ndarray]:
    return [item.image for item in panel.image_items]


def test_one_map_per_head_in_head_order(make_panel, settle):
    panel = make_panel(MHAConfig(d_model=48, n_heads=6, batch=2, seq=5))
    panel.controller.set_stage("softmax")
    settle(panel.controller)  # a few maps per event-loop turn
    assert len(panel.cells) == 6
    # each title names its head (the entropy may sit beside it, after a "·")
    assert [c.title.text().split(" · ")[0] for c in panel.cells] == [f"<b>head {h}</b>"
                                                                     for h in range(6)]
    weights = panel.controller.trace.tensors["softmax"]["weights"]
    for h, image in enumerate(shown(panel)):
        np.testing.assert_array_equal(image, weights[0, h])


def test_images_are_row_major_contiguous_float32_with_explicit_levels(make_panel, settle):
    panel = make_panel()
    panel.controller.set_stage("scores")
    settle(panel.controller)  # the cells are built a few per event-loop turn
    for item in panel.image_items:
        assert item.axisOrder == "row-major"
        assert item.image.dtype == np.float32 and item.image.flags.c_contiguous
        assert item.lut.shape[0] == 256
        np.testing.assert_array_equal(item.getLevels(), panel.color_bar.levels())


def test_scores_use_symmetric_diverging_levels_and_softmax_zero_to_one(make_panel, settle):
    panel = make_panel()
    ctrl = panel.controller
    ctrl.set_stage("scores")
    settle(ctrl)  # the cells are built a few per event-loop turn
    scores = ctrl.trace.tensors["scores"]["scores"][0]
    peak = float(np.abs(scores[np.isfinite(scores)]).max())
    assert panel.color_bar.levels() == pytest.approx((-peak, peak))
    assert panel.maps.colormap == DIVERGING_COLORMAP
    for item in panel.image_items:
        np.testing.assert_allclose(item.getLevels(), (-peak, peak))

    ctrl.set_stage("softmax")
    assert panel.color_bar.levels() == (0.0, 1.0)
    assert panel.maps.colormap == WEIGHTS_COLORMAP
    for item in panel.image_items:
        np.testing.assert_array_equal(item.getLevels(), (0.0, 1.0))


def test_masked_scores_are_drawn_as_nan_not_as_extremes(make_panel):
    panel = make_panel(MHAConfig(d_model=32, n_heads=2, batch=1, seq=5, causal=True))
    panel.controller.set_stage("scores")
    scores = panel.controller.trace.tensors["scores"]["scores"][0]
    for h, image in enumerate(shown(panel)):
        expected = np.where(np.isneginf(scores[h]), np.nan, scores[h])
        np.testing.assert_array_equal(image, expected)  # NaN == NaN here
        assert np.isnan(image[0, 1]) and not np.isnan(image[1, 1])
    low, high = panel.color_bar.levels()
    assert np.isfinite(low) and low == -high
    assert "masked" in panel.hover_text(0, 0, 4)


def test_hover_text_names_query_key_and_exact_value(make_panel):
    panel = make_panel(MHAConfig(d_model=32, n_heads=4, batch=1, seq=6, tokens=SENTENCE))
    panel.controller.set_stage("softmax")
    value = panel.controller.trace.tensors["softmax"]["weights"][0, 2, 3, 1]
    text = panel.hover_text(2, 3, 1)
    assert text == "head 2 · query 'on' (3) → key 'cat' (1) · weight " + str(np.float32(value))


def test_hovering_a_cell_updates_the_line_under_the_grid(make_panel, qtbot):
    panel = make_panel(MHAConfig(d_model=32, n_heads=4, batch=1, seq=6, tokens=SENTENCE))
    panel.controller.set_stage("softmax")
    cell = panel.cells[1]
    qtbot.waitExposed(cell, timeout=UI_MS)
    # the scene reports where the mouse is; the cell maps it to (row 4, key 2)
    cell.view.scene().sigMouseMoved.emit(cell.vb.mapViewToScene(QPointF(2.2, 3.8)))
    assert panel.hover_label.text() == panel.hover_text(1, 4, 2)
    assert "query 'the' (4) → key 'sat' (2)" in panel.hover_label.text()


def test_batch_selector_switches_the_shown_element(make_panel):
    panel = make_panel()
    ctrl = panel.controller
    ctrl.set_stage("softmax")
    assert panel.batch_spin.maximum() == ctrl.config.batch - 1
    panel.batch_spin.setValue(1)
    assert ctrl.batch_index == 1
    weights = ctrl.trace.tensors["softmax"]["weights"]
    assert not np.array_equal(weights[0], weights[1])
    for h, image in enumerate(shown(panel)):
        np.testing.assert_array_equal(image, weights[1, h])


def test_batch_selector_recomputes_a_windowed_trace(make_panel, qtbot, settle):
    cfg = MHAConfig(d_model=32, n_heads=4, batch=3, seq=64)
    est = estimate(cfg)
    budget = (est.windowed_bytes + est.full_bytes) // 2  # full does not fit, windowed does
    panel = make_panel(cfg, budget_bytes=budget)
    ctrl = panel.controller
    assert ctrl.trace.mode == "windowed"
    ctrl.set_stage("softmax")
    settle(ctrl)  # the stage's maps drawn, over a few event-loop turns
    with qtbot.waitSignal(panel.images_updated, timeout=TRACE_MS):
        panel.batch_spin.setValue(2)
    assert ctrl.trace.batch_index == 2
    weights = ctrl.trace.tensors["softmax"]["weights"]  # [1, H, rows, S]
    for h, image in enumerate(shown(panel)):
        np.testing.assert_array_equal(image, weights[0, h])
    r0, r1 = ctrl.trace.rows
    assert f"rows {r0}–{r1 - 1} of 64" in panel.caption.text()


def test_entropy_under_each_map_is_in_bits(make_panel):
    panel = make_panel()
    panel.controller.set_stage("softmax")
    weights = panel.controller.trace.tensors["softmax"]["weights"][0]
    for h, cell in enumerate(panel.cells):
        p = weights[h].astype(np.float64)
        bits = float(np.mean(-(p * np.log2(np.where(p > 0, p, 1))).sum(axis=1)))
        # random weights: the entropy alone, no pattern badge that would read as meaning
        # on a line of its own, or after the title where both fit on one
        said = cell.footer.text() if not cell.footer.isHidden() else cell.title.text().split(" · ")[-1]
        assert said == f"entropy {bits:.2f} bits"
    assert "bits" in panel.caption.text()


def test_gqa_heads_carry_their_kv_head(make_panel, settle):
    panel = make_panel(MHAConfig(d_model=64, n_heads=4, n_kv_heads=2, batch=1, seq=4))
    panel.controller.set_stage("scores")
    settle(panel.controller)  # the cells are built a few per event-loop turn
    assert [m.kv_group for m in panel.maps.maps] == [0, 0, 1, 1]
    assert "kv 1" in panel.cells[3].title.text()

    panel.controller.set_stage("view")
    panel.tensor_combo.setCurrentText("K")
    assert len(panel.cells) == 2  # K has one map per key/value head
    k = panel.controller.trace.tensors["view"]["K"][0]  # [S, Hkv, d_k]
    np.testing.assert_array_equal(panel.image_items[1].image, k[:, 1])
    assert panel.maps.maps[1].footer == "read by heads 2–3"


@pytest.mark.parametrize("stage,tensor,lines", [
    ("input", "X", 0), ("merge", "merged", 3), ("output", "Y", 0)])
def test_whole_matrix_stages_show_one_map(make_panel, stage, tensor, lines):
    panel = make_panel()  # d_model 64, 4 heads: d_k 16
    panel.controller.set_stage(stage)
    trace = panel.controller.trace
    assert len(panel.cells) == 1
    np.testing.assert_array_equal(panel.image_items[0].image, trace.tensors[stage][tensor][0])
    assert panel.maps.column_lines == tuple(c - 0.5 for c in range(16, 64, 16))[:lines]
    low, high = panel.color_bar.levels()
    assert low == -high


def test_clicking_a_head_opens_it_large_with_top_k(make_panel, qtbot):
    panel = make_panel(MHAConfig(d_model=32, n_heads=4, batch=1, seq=6, tokens=SENTENCE,
                                 causal=True))
    ctrl = panel.controller
    ctrl.set_stage("softmax")
    panel.cells[2].activated.emit()
    dialog = panel.dialog
    assert dialog is not None and dialog.isVisible() and dialog.index == 2
    np.testing.assert_array_equal(dialog.cell.image.image, panel.image_items[2].image)
    weights = ctrl.trace.tensors["softmax"]["weights"][0, 2]

    dialog.query_combo.setCurrentIndex(dialog.query_combo.findData(3))
    dialog.k_spin.setValue(2)
    expected = sorted(range(4), key=lambda j: -weights[3, j])[:2]  # query 3 sees keys 0..3
    assert [key for key, _ in dialog.top_k()] == expected
    assert dialog.top_table.rowCount() == 2
    assert dialog.top_table.item(0, 0).text() == SENTENCE[expected[0]]

    dialog.k_spin.setValue(6)
    assert len(dialog.top_k()) == 4  # masked keys are not "attended to"


def test_layout_stays_usable_with_many_heads(make_panel, settle):
    panel = make_panel(MHAConfig(d_model=128, n_heads=128, batch=1, seq=3))
    columns = panel.columns
    panel.controller.set_stage("softmax")
    # the grid takes its final shape at once, but the maps' cells are built a few per event-loop
    # turn, as they are drawn: building 128 in the stage's own turn held the loop for 0.6 s
    assert panel.columns != columns and len(panel.cells) <= CELLS_PER_TURN
    settle(panel.controller)
    assert len(panel.cells) == 128
    assert 1 <= panel.columns <= 128
    assert all(c.minimumWidth() >= MIN_CELL_PX for c in panel.cells)


def test_the_colour_table_is_computed_once_for_all_the_maps(make_panel, settle, monkeypatch):
    """Each map takes the colour bar's table: computing it again for each (an interpolation
    each) held one event-loop turn for about 120 ms with 128 maps."""
    computed = []
    real = pg.ColorMap.getLookupTable

    def counting(self, *args, **kwargs):
        computed.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pg.ColorMap, "getLookupTable", counting)
    panel = make_panel(MHAConfig(d_model=64, n_heads=16, batch=1, seq=3))
    panel.controller.set_stage("softmax")
    settle(panel.controller)
    colours = real(pg.colormap.get(panel.maps.colormap), nPts=256)
    assert len(panel.image_items) == 16
    for item in panel.image_items:
        np.testing.assert_array_equal(item.lut, colours)
    # the bar's own picture of the table (with alpha) and the maps' one, whatever the count
    assert len(computed) <= 2 * len(set(computed))


def test_grid_columns_fill_the_area_then_scroll():
    assert grid_columns(1, 800, 600) == 1
    assert grid_columns(4, 800, 800) == 2
    assert grid_columns(12, 1600, 600) == 6  # wide area: a wide grid
    assert grid_columns(128, 900, 700) == 900 // MIN_CELL_PX  # scrolls vertically


def test_a_trace_without_attention_rows_is_explained(controller):
    trace = controller.trace
    trace.tensors["scores"] = {}  # as a windowed run that kept no rows would leave it
    maps = build_stage_maps(trace, "scores", 0)
    assert maps.maps == () and "kept no scores" in maps.empty_reason


def test_entropy_and_top_keys_helpers():
    uniform = np.full((2, 8), 1 / 8, dtype=np.float32)
    assert row_entropy_bits(uniform, np.array([True, True])) == pytest.approx(3.0)
    one_hot = np.eye(4, dtype=np.float32)
    assert row_entropy_bits(one_hot, np.ones(4, bool)) == pytest.approx(0.0)
    row = np.array([0.1, 0.4, 0.4, 0.1], dtype=np.float32)
    assert top_keys(row, 3) == [(1, pytest.approx(0.4)), (2, pytest.approx(0.4)),
                                (0, pytest.approx(0.1))]
    assert top_keys(row, 9, visible=np.array([True, False, True, False])) == [
        (2, pytest.approx(0.4)), (0, pytest.approx(0.1))]


def test_stretched_weights_keep_bar_and_items_in_step(make_panel):
    panel = make_panel()
    panel.controller.set_stage("softmax")
    assert panel.stretch_check.isVisible()
    panel.stretch_check.setChecked(True)
    top = max(float(image.max()) for image in shown(panel))
    assert panel.color_bar.levels() == pytest.approx((0.0, top))
    for item in panel.image_items:
        np.testing.assert_allclose(item.getLevels(), (0.0, top))
    assert "stretched" in panel.caption.text()


def test_moving_the_window_recomputes_exact_rows(make_panel, qtbot, settle):
    cfg = MHAConfig(d_model=16, n_heads=2, batch=2, seq=1024)  # windowed: 512 rows shown
    est = estimate(cfg)
    panel = make_panel(cfg, budget_bytes=(est.windowed_bytes + est.full_bytes) // 2)
    ctrl = panel.controller
    assert ctrl.trace.mode == "windowed"
    ctrl.set_stage("scores")
    settle(ctrl)
    assert panel.rows_spin.isVisible() and ctrl.trace.rows == (0, 512)
    with qtbot.waitSignal(panel.images_updated, timeout=TRACE_MS):
        panel.rows_spin.setValue(300)
    assert ctrl.trace.rows == (300, 812) and panel.maps.row_start == 300
    assert "rows 300–811 of 1,024" in panel.caption.text()
    scores = ctrl.trace.tensors["scores"]["scores"][0]
    np.testing.assert_array_equal(panel.image_items[1].image, scores[1])
    assert panel.hover_text(1, 300, 7).startswith("head 1 · query 't300' (300) → key 't7' (7)")


def test_hover_on_merged_columns_names_the_head(make_panel):
    panel = make_panel()  # d_k 16
    panel.controller.set_stage("merge")
    assert ", dim 37 (head 2, d_k index 5) · merged " in panel.hover_text(0, 1, 37)
    panel.controller.set_stage("project")
    panel.tensor_combo.setCurrentText("K")
    assert "(kv head 1, d_k index 0)" in panel.hover_text(0, 0, 16)


def wheel(view, towards: QPointF) -> None:
    """One notch of the mouse wheel over ``towards`` (view coordinates)."""
    at = QPointF(view.mapFromScene(towards))
    port = view.viewport()
    QApplication.sendEvent(port, QWheelEvent(
        at, QPointF(port.mapToGlobal(at.toPoint())), QPoint(), QPoint(0, 120),
        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase,
        False))


def test_cells_are_light_and_the_pool_stays_bounded(make_panel, qtbot, settle):
    panel = make_panel(MHAConfig(d_model=128, n_heads=64, batch=1, seq=3))
    panel.controller.set_stage("softmax")
    settle(panel.controller)  # the cells are built a few per event-loop turn
    assert len(panel.cells) == 64
    for cell in panel.cells:
        assert not isinstance(cell.view, pg.PlotWidget)  # no PlotItem and its menus
        assert cell.vb.menu is None
        assert cell.view.scene().items().count(cell.image) == 1
    panel.controller.set_stage("input")  # one map: the cells beyond the pool go
    assert len(panel.cells) == 1
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert len(panel.findChildren(HeatmapCell)) == POOL_KEEP + 1  # and presentation's large one


def test_only_the_large_view_zooms(make_panel, qtbot):
    panel = make_panel(MHAConfig(d_model=32, n_heads=4, batch=1, seq=6, tokens=SENTENCE))
    panel.controller.set_stage("softmax")
    cell = panel.cells[0]
    qtbot.waitExposed(cell, timeout=UI_MS)
    before = cell.vb.viewRange()
    wheel(cell.view, cell.vb.mapViewToScene(QPointF(2, 2)))
    assert cell.vb.viewRange() == before  # the grid leaves the wheel to the scroll area

    dialog = panel.open_head(0)
    qtbot.waitExposed(dialog, timeout=UI_MS)
    big = dialog.cell
    (x0, x1), _ = big.vb.viewRange()
    wheel(big.view, big.vb.mapViewToScene(QPointF(2, 2)))
    (z0, z1), _ = big.vb.viewRange()
    assert z1 - z0 < x1 - x0


@pytest.mark.parametrize("nan", [False, True])
def test_fast_image_format_keeps_pyqtgraphs_colours(qtbot, nan):
    rng = np.random.default_rng(0)
    image = rng.standard_normal((24, 40)).astype(np.float32)
    if nan:
        image[np.triu_indices(24, 1)] = np.nan  # masked cells stay transparent
    lut = pg.colormap.get(DIVERGING_COLORMAP).getLookupTable(nPts=256)
    items = [cls(image, levels=(-2.0, 2.0), lut=lut, axisOrder="row-major")
             for cls in (pg.ImageItem, MapImage)]
    for item in items:
        item.render()
    # compared as Qt draws them: premultiplied (a transparent pixel is just transparent)
    reference, fast = (item.qimage.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
                       for item in items)
    assert items[1].qimage.format() in (QImage.Format.Format_RGB32,
                                        QImage.Format.Format_ARGB32_Premultiplied)
    assert reference.size() == fast.size()
    assert all(reference.pixel(x, y) == fast.pixel(x, y)
               for y in range(fast.height()) for x in range(fast.width()))


def test_token_axis_names_every_token_when_they_fit_and_thins_them_otherwise(qtbot):
    axis = TokenAxis("left")
    axis.set_labels(SENTENCE)
    names = axis.tickValues(-0.5, 5.5, 400)
    assert names == [(1.0, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])]
    assert axis.tickStrings(names[0][1], 1.0, 1.0) == list(SENTENCE)
    line_px = QFontMetrics(axis.style["tickFont"] or QFont()).height()
    rng = np.random.default_rng(1)
    for _ in range(300):
        first = int(rng.choice([0, 300]))
        count = int(rng.choice([2, 6, 16, 100, 512, 4096]))
        lo = first - 0.5 + rng.random() * count / 3
        hi = first + count - 0.5 - rng.random() * count / 3
        size = float(rng.uniform(30, 1500))
        labels = [f"t{i}" for i in range(count)]
        axis.set_labels(labels, first)
        levels = axis.tickValues(lo, hi, size)
        if not any(float(v).is_integer() for v in np.arange(np.ceil(lo), hi + 1e-9)):
            assert levels == []  # no whole position in view
            continue
        (spacing, ticks), = levels
        shown = axis.tickStrings(ticks, 1.0, spacing)
        assert shown == [labels[int(v) - first] for v in ticks]  # words, never positions
        assert all(lo <= v <= hi for v in ticks)
        # never overprinted: neighbouring names sit at least a line apart on screen
        px_per_position = size / (hi - lo)
        assert spacing * px_per_position >= line_px or len(ticks) <= 1, (spacing, size, hi - lo)
        assert np.all(np.diff(ticks) == spacing)


def test_every_map_is_laid_out_before_its_first_paint(make_panel, qtbot, monkeypatch, settle):
    """Axes that resize after their first paint repaint every map of the grid twice."""
    panel = make_panel(MHAConfig(d_model=128, n_heads=32, batch=1, seq=16))
    qtbot.waitExposed(panel, timeout=UI_MS)
    drawn: dict[int, int] = {}
    generate = pg.AxisItem.generateDrawSpecs

    def counted(axis, painter):
        drawn[id(axis)] = drawn.get(id(axis), 0) + 1
        return generate(axis, painter)

    monkeypatch.setattr(pg.AxisItem, "generateDrawSpecs", counted)
    panel.controller.set_stage("softmax")
    settle(panel.controller)  # the maps are set a few per event-loop turn, each turn painted
    for _ in range(3):  # paint, and whatever a paint sets off
        QApplication.processEvents()
        panel.grab()
    axes = [id(a) for c in panel.cells for a in (c.left_axis, c.bottom_axis)]
    painted = [drawn[a] for a in axes if a in drawn]
    assert painted and max(painted) == 1
    widths = {c.left_axis.width() for c in panel.cells}
    assert len(widths) == 1  # the same room for the same labels in every map
