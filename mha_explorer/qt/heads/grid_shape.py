"""How many columns a grid of head maps gets: the shape that makes each map largest in the
room it has, down to the smallest map that still reads."""

from __future__ import annotations

import math

from mha_explorer.qt.heads.focused_head import map_side

MIN_CELL_PX = 140  # below this a map with its axes and labels stops being readable
THUMB_MIN_PX = 48  # presentation: every head in sight, however small, beside the large one


def grid_columns(count: int, width: float, height: float, min_cell: float = MIN_CELL_PX,
                 spacing: float = 0.0, words: tuple[float, float] = (0.0, 0.0),
                 min_width: float = 0.0) -> int:
    """Columns that make the maps as large as the area allows.

    ``words``: the width and height of a cell that its title and footer take, not
    the map (presentation's small maps: two lines of large type over a thin strip
    read as nothing); ``min_width``: cells narrower than this cut their words
    (map_side). When even the best choice leaves cells below ``min_cell``, as many
    columns as fit at ``min_cell`` are used and the grid scrolls vertically.
    """
    if count <= 1:
        return 1
    best, best_side, best_cell = 1, -math.inf, -1.0
    for cols in range(1, count + 1):
        rows = math.ceil(count / cols)
        cell_w = (width + spacing) / cols - spacing
        cell_h = (height + spacing) / rows - spacing
        side = map_side(cell_w, cell_h, words, min_width)
        if side > best_side:
            best, best_side, best_cell = cols, side, min(cell_w, cell_h)
    if best_cell >= min_cell:
        return best
    return max(1, min(count, int((width + spacing) // (min_cell + spacing))))


def columns_and_scrolling(count: int, width: float, height: float, smallest: float, spacing: float,
                          bar_px: float, fit: dict) -> tuple[int, bool]:
    """Columns for ``count`` maps no smaller than ``smallest``, and whether the grid scrolls;
    a scroll bar takes ``bar_px`` of the width, so fewer columns may fit beside it."""
    cols = grid_columns(count, width, height, min_cell=smallest, spacing=spacing, **fit)
    rows = math.ceil(count / cols) if count else 0
    scrolls = rows * (smallest + spacing) - spacing > height
    if scrolls:
        cols = grid_columns(count, width - bar_px, height, min_cell=smallest, spacing=spacing, **fit)
    return cols, scrolls
