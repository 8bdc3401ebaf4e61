"""The lab's map grid as a student sees it while a sweep trains: every head's map, square,
query rows down and keys across, token names on the outer maps only, and no new
cells made when a later run needs no more than an earlier one had."""

from __future__ import annotations

import numpy as np
import pytest
from waits import UI_MS

from mha_explorer.qt.lab.map_grid import MAX_COLUMNS, MapGrid, grid_columns
from mha_explorer.qt.lab.reflow import WIDE_PX, Reflow

LABELS = list("abcdefgh")


@pytest.fixture
def grid(qtbot):
    g = MapGrid()
    qtbot.addWidget(g)
    g.resize(900, 420)
    g.show()
    qtbot.waitExposed(g, timeout=UI_MS)
    return g


def _maps(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((n, len(LABELS), len(LABELS)))


def _show(qtbot, grid, maps):
    grid.show_maps(maps, [f"head {i}" for i in range(len(maps))], LABELS)
    # cells that moved are painted a few per event-loop turn: wait until all are shown
    qtbot.waitUntil(lambda: grid.cell_count() == len(maps) and grid.revealed(), timeout=UI_MS)
    assert all(cell.isVisible() for cell in grid.cells())


def test_each_head_gets_its_own_map_with_queries_down_and_keys_across(qtbot, grid):
    maps = _maps(4)
    _show(qtbot, grid, maps)
    for cell, data in zip(grid.cells(), maps, strict=True):
        # ImageItem's first index runs across: keys; the second down: queries
        np.testing.assert_array_equal(cell.image.image, data.T.astype(np.float32))
    assert [c.title.text for c in grid.cells()] == [f"head {i}" for i in range(4)]


def test_token_names_sit_on_the_left_column_and_the_bottom_row_only(qtbot, grid):
    _show(qtbot, grid, _maps(16))
    columns = grid_columns(16, grid.width(), grid.height())
    for i, cell in enumerate(grid.cells()):
        left, bottom = cell.token_names
        assert bool(left) == (i % columns == 0), i
        assert bool(bottom) == (i + columns >= 16), i
        for names in (left, bottom):
            assert set(names) <= set(LABELS) and names == sorted(names, key=LABELS.index)


def test_maps_are_square_and_inside_the_grid(qtbot, grid):
    _show(qtbot, grid, _maps(8))

    def laid_out() -> bool:
        return all(c.view.width() > 20 for c in grid.cells())

    qtbot.waitUntil(laid_out, timeout=UI_MS)
    for cell in grid.cells():
        assert abs(cell.view.width() - cell.view.height()) <= 3, (cell.view.width(), cell.view.height())
        box = cell.mapRectToScene(cell.boundingRect())
        assert box.right() <= grid.width() + 1 and box.bottom() <= grid.height() + 1


def test_on_a_small_grid_every_map_stays_inside_and_is_titled_by_its_number(qtbot, grid):
    grid.resize(300, 320)  # the Lab's map area at 1024×768
    qtbot.waitUntil(lambda: grid.width() == 300, timeout=UI_MS)
    _show(qtbot, grid, _maps(16))

    def inside() -> bool:
        return all(c.mapRectToScene(c.boundingRect()).right() <= grid.width() + 1 for c in grid.cells())

    qtbot.waitUntil(inside, timeout=UI_MS)
    assert [c.title.text for c in grid.cells()] == [str(i) for i in range(16)]
    grid.resize(900, 420)  # room again: the full titles come back
    qtbot.waitUntil(lambda: grid.cells()[0].title.text == "head 0", timeout=UI_MS)


def test_a_smaller_run_then_a_larger_one_reuses_the_cells(qtbot, grid):
    _show(qtbot, grid, _maps(16))
    first = grid.cells()
    _show(qtbot, grid, _maps(4, seed=1))
    assert grid.cells() == first[:4]
    _show(qtbot, grid, _maps(16, seed=2))
    assert grid.cells() == first  # the same 16 objects: nothing was built again


def test_the_grid_shape_gives_each_map_the_most_room():
    assert grid_columns(1, 800, 400) == 1
    assert grid_columns(16, 1600, 400) == MAX_COLUMNS  # two rows of eight on a wide strip
    assert grid_columns(4, 400, 1600) == 1  # a tall column
    assert grid_columns(4, 600, 600) == 2


def test_the_training_tab_puts_three_plots_in_a_row_when_wide_and_two_by_two_when_not(qtbot):
    from PySide6.QtWidgets import QLabel

    plots, view = (QLabel("loss"), QLabel("accuracy"), QLabel("entropy")), QLabel("maps")
    flow = Reflow(plots, view)
    qtbot.addWidget(flow)
    flow.resize(WIDE_PX + 200, 600)
    flow.show()
    qtbot.waitUntil(lambda: flow.wide, timeout=UI_MS)
    qtbot.waitUntil(lambda: len({p.y() for p in plots}) == 1 and view.y() > plots[0].y(), timeout=UI_MS)
    assert view.width() > 2 * plots[0].width()  # the maps get the whole width
    flow.resize(WIDE_PX - 200, 600)
    qtbot.waitUntil(lambda: not flow.wide, timeout=UI_MS)
    qtbot.waitUntil(lambda: plots[2].y() == view.y() > plots[0].y() == plots[1].y(), timeout=UI_MS)


def test_the_entropy_legend_names_heads_only_while_each_has_its_own_colour(qtbot):
    from mha_explorer.qt.lab.plots import PALETTE, CurvePlot, color_for

    plot = CurvePlot("Attention entropy per head", "step", "bits")
    qtbot.addWidget(plot)
    x = np.arange(5.0)

    def family(n: int) -> None:
        while not plot.set_family(x, np.ones((n, 5)), [f"head {i}" for i in range(n)],
                                  [color_for(i) for i in range(n)]):
            pass

    family(len(PALETTE))
    assert plot.plotItem.legend.isVisible()
    family(len(PALETTE) + 8)
    assert len(plot.curve_data()) == len(PALETTE) + 8 and not plot.plotItem.legend.isVisible()
