"""Tiled mode: FlashAttention's tiles, one at a time (no torch here).

Fed plain data: the tile states of ``core.tile_plan.tile_states`` (int8 [row
blocks, column blocks]: 0 skipped, 1 cut by the mask, 2 whole), the
``TilePlan.to_dict()`` numbers, and optionally the tiles in visiting order as
dicts (``dataclasses.asdict`` of ``core.tiled.TileRecord``: row_block,
col_block, rows, cols, state, m, l, output) for one batch element and head.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from mha_explorer.core.display.colors import dim_color
from mha_explorer.core.plan.tile_kinds import FULL, PARTIAL, SKIPPED, TILE_STATE_NAMES
from mha_explorer.core.units import format_bytes, format_count
from mha_explorer.qt.decode.paint import hatched, ink, normalised, ramp, size_bars, text
from mha_explorer.qt.decode.stepping import SteppedView

if TYPE_CHECKING:
    import numpy as np  # the data's type; numpy itself loads with the first data (not at start-up)

STATE_COLORS = {FULL: "#0072B2", PARTIAL: "#56B4E9"}
LISTED_ROWS = 8  # m and l are written out for up to this many rows of the tile
OUTPUT_COLUMNS = 64  # the rescaled output's first columns drawn
HATCH_MIN_PX = 8  # tiles at least this big show the skipped ones hatched


class TilesView(SteppedView):
    """The grid of tiles, which are computed and which a mask skips, the current
    tile's running m, l and rescaled output, and peak memory O(T·d) vs O(T·S)."""

    tile_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._states: np.ndarray | None = None  # int8 [n_r, n_c] once set_data has run
        self._plan: Mapping = {}
        self._records: list[Mapping] = []
        self._index = 0
        self.setAccessibleName("Tiles: attention computed block by block")

    def set_data(self, states: np.ndarray, plan: Mapping, records: Sequence[Mapping] | None = None) -> None:
        import numpy as np  # with the first data, not at start-up

        self._states = np.asarray(states, dtype=np.int8)
        self._plan = dict(plan)
        self._records = list(records or [])
        self._index = min(self._index, max(0, self.tile_count - 1))
        self._changed()

    @property
    def tile_count(self) -> int:
        if self._records:
            return len(self._records)
        return 0 if self._states is None else int(self._states.size)

    def tile_index(self) -> int:
        return self._index

    def current_tile(self) -> tuple[int, int] | None:
        """(row block, column block) of the tile shown, in the loop's order."""
        if not self.tile_count:
            return None
        if self._records:
            rec = self._records[self._index]
            return int(rec["row_block"]), int(rec["col_block"])
        return divmod(self._index, self._states.shape[1])

    def current_record(self) -> Mapping | None:
        return self._records[self._index] if self._records else None

    def item_count(self) -> int:
        return self.tile_count

    def set_tile(self, index: int) -> None:
        self.go_to(index)

    def next_tile(self) -> bool:
        return self.move(1)

    def previous_tile(self) -> bool:
        return self.move(-1)

    def _announce(self, index: int) -> None:
        self.tile_changed.emit(index)

    def summary(self) -> str:
        tile = self.current_tile()
        if tile is None or not self._plan:
            return "no tiles"
        d = self._plan
        state = TILE_STATE_NAMES[int(self._states[tile])]
        lines = [f"tile {self._index + 1} of {self.tile_count}: row block {tile[0]}, key block {tile[1]} "
                 f"({state})",
                 f"{d['blocks_computed']:,} of {d['blocks_total']:,} tiles computed, "
                 f"{d['blocks_total'] - d['blocks_computed']:,} skipped by the mask",
                 f"peak {format_bytes(d['peak_bytes'])} tiled vs {format_bytes(d['full_matrix_bytes'])} "
                 f"for the full matrix; {format_count(d['flops'])} FLOPs either way"]
        return "\n".join(lines)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(900, 560)

    # painting ----------------------------------------------------------
    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        p.setPen(ink(self))
        if self.current_tile() is None:
            text(p, QRectF(self.rect()), "no tiles", Qt.AlignmentFlag.AlignCenter)
            return
        r = QRectF(self.rect()).adjusted(12, 8, -12, -8)
        line_h = p.fontMetrics().height() * 1.3
        lines = self.summary().splitlines()
        for i, line in enumerate(lines):
            text(p, QRectF(r.left(), r.top() + i * line_h, r.width(), line_h), line)
        top = r.top() + len(lines) * line_h + 6
        bars_h = 2 * line_h  # both bars and their words, always: the comparison is the point
        body = QRectF(r.left(), top, r.width(), max(0.0, r.bottom() - top - bars_h - 6))
        grid_w = min(body.width() * 0.55, body.height() * self._aspect())
        self._paint_grid(p, QRectF(body.left(), body.top(), grid_w, body.height()))
        p.save()
        p.setClipRect(body)  # the tile's numbers stop where the bars begin
        self._paint_tile(p, QRectF(body.left() + grid_w + 16, body.top(),
                                   body.width() - grid_w - 16, body.height()))
        p.restore()
        d = self._plan
        size_bars(p, QRectF(r.left(), r.bottom() - bars_h, r.width(), bars_h), [
            ("tiled peak, O(T·d)", int(d["peak_bytes"]), QColor(dim_color("d_k"))),
            ("full matrix, O(T·S)", int(d["full_matrix_bytes"]), QColor(dim_color("S"))),
        ], ink(self))
        p.end()

    def _aspect(self) -> float:
        n_r, n_c = self._states.shape
        return n_c / max(1, n_r)

    def _visited(self) -> np.ndarray:
        """Bool grid: tiles the loop has reached up to the current one."""
        import numpy as np  # loaded with the data (set_data)

        seen = np.zeros(self._states.shape, bool)
        if self._records:
            for rec in self._records[: self._index + 1]:
                seen[int(rec["row_block"]), int(rec["col_block"])] = True
        else:
            seen.flat[: self._index + 1] = True
        return seen

    def _grid_image(self) -> QImage:
        """One pixel per tile: solid when reached, faint when not yet, grey when skipped."""
        import numpy as np  # loaded with the data (set_data)

        rgba = np.zeros(self._states.shape + (4,), np.uint8)  # [n_r, n_c, RGBA]
        visited = self._visited()
        for state, color in STATE_COLORS.items():
            c = QColor(color)
            where = self._states == state
            rgba[where] = (c.red(), c.green(), c.blue(), 255)
            rgba[where & ~visited, 3] = 80  # not reached yet
        rgba[self._states == SKIPPED] = (150, 150, 150, 60)
        n_r, n_c = self._states.shape
        self._rgba = np.ascontiguousarray(rgba)  # the image reads this memory while painting
        return QImage(self._rgba.data, n_c, n_r, 4 * n_c, QImage.Format.Format_RGBA8888)

    def _paint_grid(self, p: QPainter, rect: QRectF) -> None:
        import numpy as np  # loaded with the data (set_data)

        n_r, n_c = self._states.shape
        cell = min(rect.width() / max(1, n_c), rect.height() / max(1, n_r))
        grid = QRectF(rect.left(), rect.top(), cell * n_c, cell * n_r)
        p.drawImage(grid, self._grid_image())
        if cell >= HATCH_MIN_PX:  # big enough to mark the skipped tiles as hidden
            for i, j in zip(*np.nonzero(self._states == SKIPPED), strict=True):
                hatched(p, QRectF(rect.left() + j * cell, rect.top() + i * cell, cell, cell), ink(self))
        i, j = self.current_tile()
        p.setPen(QPen(QColor(dim_color("T")), max(2.0, min(cell / 8, 4.0))))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(QRectF(rect.left() + j * cell, rect.top() + i * cell, max(cell, 3.0), max(cell, 3.0)))

    def _paint_tile(self, p: QPainter, rect: QRectF) -> None:
        rec = self.current_record()
        p.setPen(ink(self))
        line_h = p.fontMetrics().height() * 1.25
        if rec is None:
            text(p, QRectF(rect.left(), rect.top(), rect.width(), line_h), "m, l: computed tiles not loaded")
            return
        import numpy as np  # loaded with the data (set_data)

        (r0, r1), (c0, c1) = rec["rows"], rec["cols"]
        head = [f"rows {r0}–{r1 - 1} × keys {c0}–{c1 - 1}",
                "skipped: m, l and the output are unchanged" if rec["state"] == SKIPPED else
                "online softmax after this tile:"]
        m, l_sum, out = np.asarray(rec["m"]), np.asarray(rec["l"]), np.asarray(rec["output"])
        for k in range(min(LISTED_ROWS, len(m))):
            head.append(f"row {r0 + k}: m = {m[k]:.3g}   l = {l_sum[k]:.4g}")
        if len(m) > LISTED_ROWS:
            head.append(f"… {len(m) - LISTED_ROWS} more rows")
        for i, line in enumerate(head):
            text(p, QRectF(rect.left(), rect.top() + i * line_h, rect.width(), line_h), line)
        top = rect.top() + len(head) * line_h + 6
        text(p, QRectF(rect.left(), top, rect.width(), line_h), "rescaled output (accumulator / l)")
        area = QRectF(rect.left(), top + line_h, rect.width(), rect.bottom() - top - line_h)
        shown = out[:, :OUTPUT_COLUMNS]
        if shown.size == 0 or area.height() <= 0:
            return
        cw = area.width() / shown.shape[1]
        ch = min(area.height() / shown.shape[0], cw * 4)
        for (i, j), t in np.ndenumerate(normalised(shown)):
            p.fillRect(QRectF(area.left() + j * cw, area.top() + i * ch, cw, ch), ramp(t))
