"""The trained-heads views: the layers × heads grid, the pattern table, the ablation ranking.

They are fed numpy arrays and dicts made here by hand, so these tests need
neither the trained package nor torch.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from mha_explorer.core.display.pattern_columns import pattern_columns
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.qt.trained.ablation_ranking import AblationRanking
from mha_explorer.qt.trained.layer_grid import LayerGrid
from mha_explorer.qt.trained.patterns_table import PatternsTable


def _maps(layers=6, heads=12, T=5) -> np.ndarray:
    rng = np.random.default_rng(1)
    a = rng.random((layers, heads, T, T))
    return a / a.sum(-1, keepdims=True)


def test_clicking_a_thumbnail_names_its_layer_and_head(qtbot):
    grid = LayerGrid()
    qtbot.addWidget(grid)
    grid.resize(900, 500)
    grid.set_maps(_maps(), [[f"prev 0.{h}" for h in range(12)] for _ in range(6)])
    grid.show()
    assert grid.shape == (6, 12)
    for layer, head in [(1, 0), (1, 2), (4, 7), (6, 11)]:
        with qtbot.waitSignal(grid.head_chosen) as signal:
            qtbot.mouseClick(grid, Qt.MouseButton.LeftButton, pos=grid.cell_rect(layer, head).center())
        assert signal.args == [layer, head]
        assert grid.current() == (layer, head)
    # thumbnails are laid out as rows of layers: layer 2 is below layer 1, head 1 right of head 0
    assert grid.cell_rect(2, 0).top() > grid.cell_rect(1, 0).bottom()
    assert grid.cell_rect(1, 1).left() > grid.cell_rect(1, 0).right()
    assert grid.cell_at(QPoint(2, 2)) is None  # the label margin is no cell


def test_keyboard_moves_and_opens_a_cell(qtbot):
    grid = LayerGrid()
    qtbot.addWidget(grid)
    grid.resize(600, 400)
    grid.set_maps(_maps())
    grid.set_current(1, 0)
    qtbot.keyClick(grid, Qt.Key.Key_Down)
    qtbot.keyClick(grid, Qt.Key.Key_Right)
    with qtbot.waitSignal(grid.head_chosen) as signal:
        qtbot.keyClick(grid, Qt.Key.Key_Return)
    assert signal.args == [2, 1]


def test_thumbnail_colours_follow_the_weights(qtbot):
    grid = LayerGrid()
    qtbot.addWidget(grid)
    maps = np.zeros((1, 2, 2, 2))
    maps[0, 0] = [[1, 0], [0, 1]]  # a strong diagonal
    maps[0, 1] = 0.5
    grid.set_maps(maps)
    diagonal = grid._images[0][0]
    assert diagonal.pixelColor(0, 0) == diagonal.pixelColor(1, 1)  # both weight 1
    assert diagonal.pixelColor(0, 0) != diagonal.pixelColor(1, 0)  # 1 and 0 differ
    with pytest.raises(ValueError, match="layers, heads"):
        grid.set_maps(np.zeros((2, 2)))


def _scores(prev: list[float]) -> list[dict[str, float]]:
    return [{"previous_token": p, "next_token": 0.1, "self": 0.2, "first_token": 1 - p, "sep": 0.0,
             "broad": 0.5} for p in prev]


def test_pattern_table_sorts_heads_by_a_score(qtbot):
    table = PatternsTable()
    qtbot.addWidget(table)
    table.set_columns(pattern_columns(MODELS["minilm-l6"]))
    table.set_scores(1, _scores([0.1, 0.3, 0.99, 0.2]))
    assert table.heads_in_order() == [0, 1, 2, 3]
    table.sort_by("previous_token")
    assert table.heads_in_order() == [2, 1, 3, 0]
    table.sort_by("first_token")
    assert table.heads_in_order() == [0, 3, 1, 2]
    with qtbot.waitSignal(table.head_selected) as signal:
        table.selectRow(3)  # the bottom row after sorting: head 2
    assert signal.args == [2]
    assert table.item(3, 1).text() == "0.99" and table.item(0, 1).text() == "0.10"


def test_ablation_ranking_puts_the_biggest_change_first(qtbot):
    view = AblationRanking()
    qtbot.addWidget(view)
    rows = [{"head": 0, "embedding_cosine": 0.999, "layer_output_cosine": 0.99},
            {"head": 1, "embedding_cosine": 0.95, "layer_output_cosine": 0.9},
            {"head": 2, "embedding_cosine": 0.98}]
    view.set_ranking(3, rows)
    assert view.heads_in_order() == [1, 2, 0]
    assert [view.item(r, 0).text() for r in range(3)] == ["1", "2", "3"]
    assert view.item(1, 3).text() == "–"  # no layer cosine given
    view.sortItems(2, Qt.SortOrder.DescendingOrder)
    assert view.heads_in_order() == [0, 2, 1]


def test_the_views_never_import_torch():
    code = ("import sys; import mha_explorer.qt.trained.layer_grid, mha_explorer.qt.trained.patterns_table, "
            "mha_explorer.qt.trained.ablation_ranking, mha_explorer.core.models.patterns, "
            "mha_explorer.core.models.minilm.info, mha_explorer.core.models.minilm.files; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_every_row_label_fits_left_of_the_maps(qtbot):
    """18 layers, local and global: "L18·G" must not be cut, even where the grid is narrow."""
    grid = LayerGrid()
    qtbot.addWidget(grid)
    grid.resize(160, 400)
    kinds = tuple("global" if (layer + 1) % 6 == 0 else "local" for layer in range(18))
    grid.set_maps(_maps(layers=18, heads=4), layer_kinds=kinds)
    metrics = grid.fontMetrics()
    for layer in range(1, 19):
        label = f"L{layer}·{'G' if kinds[layer - 1] == 'global' else 'w'}"
        assert metrics.horizontalAdvance(label) < grid.cell_rect(layer, 0).left()
