"""Presentation's large map of the chosen head: the axes named in words above it, every
query row named beside it and every key name turned upright under its column."""

from __future__ import annotations

from PySide6.QtWidgets import QBoxLayout, QLabel, QVBoxLayout, QWidget

from mha_explorer.core.display.head_maps import StageMaps
from mha_explorer.qt.heads.head_cell import HeatmapCell
from mha_explorer.qt.heads.key_names import KeyNames

FOCUS_WORDS = "rows: query ↓    columns: key →"
FOCUS_STRETCH, THUMBS_STRETCH = 2, 1  # presentation: the focused head's share of the maps' room
STACKED_FOCUS_STRETCH = 3  # and when the maps are stacked (a narrow panel)
WIDE_RATIO = 0.85  # a panel at least this wide for its height puts the small maps beside


class FocusedHead(QWidget):
    """``cell`` (the HeatmapCell drawn large), ``words`` (the axes in words), ``keys``
    (KeyNames under the map); ``show_map(maps, index)`` draws map ``index`` of ``maps``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cell = HeatmapCell(parent=self)
        self.cell.setObjectName("focused_head")
        self.words = QLabel(FOCUS_WORDS, objectName="focused_head_axes")
        self.keys = KeyNames(self.cell)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.words)
        column.addWidget(self.cell, 1)
        column.addWidget(self.keys)

    def show_map(self, maps: StageMaps, index: int, total_rows: int = 0) -> None:
        """``total_rows``: the sequence's query rows, named when the map's rows are picked."""
        named = maps.col_kind == "key"
        picked = maps.row_positions and total_rows > len(maps.row_positions)
        # short: the projector's line has no room for the caption's list of rows
        self.words.setText(f"rows: {len(maps.row_positions):,} of {total_rows:,} queries, spread "
                           "evenly, each exact ↓    columns: key →" if picked else FOCUS_WORDS)
        self.cell.view.set_axes_shown(True)
        self.cell.view.set_bottom_shown(not named)  # the names go under it, turned
        self.keys.set_names(maps.col_labels if named else ())
        self.cell.show_map(maps.maps[index], maps)
        self.cell.show()
        self.keys.update()

    def clear(self, message: str) -> None:
        self.keys.set_names(())
        self.cell.clear(message)


class PresentingMaps:
    """The heads panel's presentation part: the chosen head large (``focus_box``, a
    FocusedHead), every head small beside or under it in ``_pair``; mixed into the panel,
    which has ``controller``, ``maps``, ``caption``, ``scroll``, ``_layout_grid`` and ``refresh``."""

    def _make_pair(self, row) -> None:
        """The grid's scroll area in ``row``, and before it the large map (hidden until
        presentation)."""
        self.focus_box = FocusedHead(self)
        self.focus, self.focus_words, self.focus_keys = (self.focus_box.cell, self.focus_box.words,
                                                         self.focus_box.keys)
        self.focus_box.hide()
        self._pair = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        row.addLayout(self._pair, 1)
        self._pair.addWidget(self.focus_box, FOCUS_STRETCH)
        self._pair.addWidget(self.scroll, THUMBS_STRETCH)

    @property
    def presenting(self) -> bool:
        return self._presenting

    def set_presenting(self, on: bool) -> None:
        """Projector: the chosen head's map large with every row and column named, every
        head's map small beside (or under) it, all in sight without scrolling; the long
        caption gives way to them."""
        self._presenting = bool(on)
        self.focus_box.setVisible(self._presenting)
        self.caption.setVisible(not self._presenting)
        self._show_weights_note(self.controller.config)
        self._orient()
        self._layout_grid(force=True)
        self.refresh()

    def focus_index(self) -> int:
        """The map of the chosen head (its K/V head's map where maps are per K/V head)."""
        if self.maps is None or not self.maps.maps:
            return 0
        return min(self.head_map_index(self.controller.head), len(self.maps.maps) - 1)

    def head_map_index(self, head: int) -> int:
        if self.maps is not None and not self.maps.shows_query_heads:
            return head // self.controller.config.group_size
        return head

    def _show_focus(self) -> None:
        if self._presenting and self.maps is not None and self.maps.maps:
            self.focus_box.show_map(self.maps, self.focus_index(), self.controller.config.T)
        elif self._presenting:
            self.focus_box.clear("no maps at this stage")

    def _orient(self) -> None:
        """Side by side in a wide panel, one above the other in a tall one."""
        wide = self.width() >= WIDE_RATIO * self.height() or not self._presenting
        self._pair.setDirection(QBoxLayout.Direction.LeftToRight if wide
                                else QBoxLayout.Direction.TopToBottom)
        # one above the other, the large map needs most of the height: its names take some
        self._pair.setStretchFactor(self.focus_box, FOCUS_STRETCH if wide else STACKED_FOCUS_STRETCH)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._presenting:
            self._orient()

