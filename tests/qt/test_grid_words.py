"""The grids that paint their own words read at a glance in both themes: the Layers grid's
head names never run together and never sit on a map, the induction grid's scores read on
their cells, the Lab's maps follow a theme switch, Generation's caption says what its
colours do."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication
from waits import UI_MS

from mha_explorer.core.display.colors import (
    COLORMAP_ENDS,
    WEIGHTS_COLORMAP,
    contrast_ratio,
    relative_luminance,
    scale_words,
)
from mha_explorer.core.display.decoder import DecoderGeneration, DecoderStep, InductionData
from mha_explorer.qt.colormaps import lookup_table
from mha_explorer.qt.decode.decoder_panel import DecoderView
from mha_explorer.qt.lab.map_grid import MapGrid
from mha_explorer.qt.shell.theme import THEMES, apply_theme
from mha_explorer.qt.trained.induction_view import ScoreGrid
from mha_explorer.qt.trained.layer_grid import LayerGrid
from tests.qt.drawn_checks import CONTRAST, assert_nothing_collides, ink_contrast


@pytest.fixture(params=list(THEMES))
def theme(request, qapp):
    """The application dressed in each theme, and given its look back after."""
    look = (qapp.palette(), qapp.styleSheet())
    apply_theme(qapp, THEMES[request.param])
    yield THEMES[request.param]
    qapp.setStyleSheet(look[1])
    qapp.setPalette(look[0])


def shown(qtbot, widget, size):
    qtbot.addWidget(widget)
    widget.resize(*size)
    widget.show()
    qtbot.waitExposed(widget, timeout=UI_MS)
    return widget


def layer_maps(layers=6, heads=12, tokens=5) -> np.ndarray:
    a = np.random.default_rng(2).random((layers, heads, tokens, tokens))
    return a / a.sum(-1, keepdims=True)


# the Layers grid ------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(230, 170), (420, 260), (1400, 900)])
def test_the_layers_grid_names_heads_apart_and_never_on_a_map(qtbot, size):
    grid = shown(qtbot, LayerGrid(), size)
    grid.set_maps(layer_maps(), [[f"prev 0.{h}" for h in range(12)] for _ in range(6)])
    texts, shapes = grid.drawn_texts(), grid.drawn_shapes()
    assert len(shapes) == 6 * 12
    assert_nothing_collides(texts, shapes)
    heads = [t.text for t in texts if t.text.startswith("h")]
    # thinned to every k-th where a name is wider than a thumbnail, in order, the first always
    assert heads[0] == "h0" and heads == sorted(heads, key=lambda name: int(name[1:]))
    if grid.cell_rect(1, 0).width() >= grid.fontMetrics().horizontalAdvance("h11") + 6:
        assert heads == [f"h{h}" for h in range(12)]  # room for every name: every name
    assert all(t.rect.height() >= grid.fontMetrics().height() - 1 for t in texts)  # none cut


def test_a_deep_models_layer_names_stay_inside_a_short_grid(qtbot):
    grid = shown(qtbot, LayerGrid(), (230, 150))
    grid.set_maps(layer_maps(layers=18, heads=4))
    grid.resize(230, grid.minimumSizeHint().height())  # as short as a layout may make it
    inside = QRectF(grid.rect())
    texts = grid.drawn_texts()
    assert any(t.text.startswith("L18") for t in texts)  # the last layer is named
    for t in texts:
        box = QRectF(grid.mapFromGlobal(t.rect.topLeft().toPoint()), t.rect.size())
        assert inside.contains(box), (t.text, box, inside)
    for layer in (1, 18):  # and every row drawn inside it
        assert inside.contains(QRectF(grid.cell_rect(layer, 0)))


def test_the_layers_grid_writes_a_badge_under_its_map_where_there_is_room(qtbot):
    grid = shown(qtbot, LayerGrid(), (1400, 900))
    grid.set_maps(layer_maps(), [[f"prev 0.{h}" for h in range(12)] for _ in range(6)])
    badges = [t for t in grid.drawn_texts() if t.text.startswith("prev")]
    assert len(badges) == 6 * 12
    top = grid.cell_rect(1, 0)
    first = min(badges, key=lambda t: (t.rect.top(), t.rect.left()))
    assert first.rect.top() >= top.bottom()  # under the thumbnail, not on it


# the induction grid -------------------------------------------------------------------------
def test_every_score_reads_on_its_cell_in_both_themes(qtbot, theme):
    layers, heads = 6, 4
    scores = np.linspace(0.0, 1.0, layers * heads).reshape(layers, heads)  # every colour of the map
    grid = shown(qtbot, ScoreGrid(), (420, 320))
    grid.data = InductionData("gemma", 50, 7.0, 1.0, scores, (3, 2, float(scores[2, 2])),
                              ("local",) * (layers - 1) + ("global",))
    image = grid.grab().toImage()
    cells = grid.cells()
    assert [c.text for c in cells] == [f"{v:.2f}" for v in scores.ravel()]
    for cell in cells:
        assert ink_contrast(image, cell.box.adjusted(2, 2, -2, -2)) >= CONTRAST, cell.text
    for t in grid.drawn_texts():
        assert contrast_ratio(t.ink.name(), t.ground.name()) >= CONTRAST, t.text


# the Lab's maps -----------------------------------------------------------------------------
def test_the_labs_maps_take_the_new_text_colour_on_a_theme_switch(qtbot, theme):
    other = THEMES["dark" if theme.name == "light" else "light"]
    grid = shown(qtbot, MapGrid(), (700, 400))
    grid.show_maps(np.random.default_rng(3).random((4, 6, 6)), [f"head {i}" for i in range(4)],
                   list("abcdef"))
    qtbot.waitUntil(lambda: grid.cell_count() == 4 and grid.revealed(), timeout=5_000)
    apply_theme(QApplication.instance(), other)  # the switch, after the maps are drawn
    texts = grid.drawn_texts()
    assert {t.text for t in texts} >= {f"head {i}" for i in range(4)}
    image = grid.grab().toImage()
    for t in texts:
        assert t.ink.name() == QColor(other.window_text).name(), t.text
        assert contrast_ratio(t.ink.name(), other.window) >= CONTRAST, t.text
        assert ink_contrast(image, t.rect) >= CONTRAST, t.text


def test_the_labs_maps_switched_while_out_of_sight_show_the_new_colour_when_seen(qtbot, theme):
    other = THEMES["dark" if theme.name == "light" else "light"]
    grid = shown(qtbot, MapGrid(), (700, 400))
    rng = np.random.default_rng(4)
    grid.show_maps(rng.random((2, 6, 6)), ["head 0", "head 1"], list("abcdef"))
    qtbot.waitUntil(lambda: grid.cell_count() == 2 and grid.revealed(), timeout=UI_MS)
    grid.hide()  # behind another tab
    apply_theme(QApplication.instance(), other)
    grid.show()
    # and more maps than were placed: cells made or kept under the old theme come in too
    grid.show_maps(rng.random((6, 6, 6)), [f"head {i}" for i in range(6)], list("abcdef"))
    qtbot.waitUntil(lambda: grid.cell_count() == 6 and grid.revealed(), timeout=UI_MS)
    texts = grid.drawn_texts()
    assert {t.text for t in texts} >= {f"head {i}" for i in range(6)}
    for t in texts:
        assert t.ink.name() == QColor(other.window_text).name(), t.text


# Generation's caption -----------------------------------------------------------------------
def test_generations_caption_says_bright_is_more_weight(qtbot):
    weights = np.array([[0.1, 0.6, 0.3], [0.2, 0.2, 0.6]], dtype=np.float32)
    step = DecoderStep(1, 7, " cat", (4, 4), (10, 10), 20, 0.01, np.arange(3), weights)
    view = shown(qtbot, DecoderView(), (600, 300))
    view.set_generation(DecoderGeneration("gemma", 1, 2, "the cat", (step,), ("local", "global"), 4))
    caption = view.row_caption(step)
    dark, bright = COLORMAP_ENDS[WEIGHTS_COLORMAP]
    assert f"{dark} 0 → {bright} 0.6" in caption and "dark: more" not in caption


def test_the_words_for_a_colour_maps_ends_name_the_darker_and_the_brighter():
    for name, (dark, bright) in COLORMAP_ENDS.items():
        low, high = (QColor(*(int(c) for c in lookup_table(name)[i])).name() for i in (0, -1))
        assert relative_luminance(high) > relative_luminance(low), name
        assert scale_words(name, 0, 0.43) == f"{dark} 0 → {bright} 0.43"
