"""Presentation's large map of the chosen head: every query row named beside it and every key
name turned upright under its column (the axes' words are the panel's, over every map)."""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QBoxLayout, QVBoxLayout, QWidget

from mha_explorer.core.display.head_maps import StageMaps
from mha_explorer.qt.heads.cell_words import plain_text
from mha_explorer.qt.heads.head_cell import HeatmapCell
from mha_explorer.qt.heads.key_names import KeyNames

FOCUS_STRETCH, THUMBS_STRETCH = 2, 1  # everyday: the grid alone (the large map is hidden)
FOCUS_SHARES = tuple(0.5 + 0.025 * i for i in range(15))  # of the maps' room, tried for the large map
FOCUS_FLOOR = 0.41  # the large map at least this share of the screen's height
THUMB_GOAL_PX = 60  # small maps this large read as patterns; past it the large one's shape wins
ROOMY_THUMB_GOAL_PX = 110  # from ROOMY_SCREEN wide: a back row reads every small map's pattern
SQUARE_GOAL = 0.8  # the large map's short side over its long side, for a T×S grid to look square
ROOMY_SCREEN = 1600


def map_side(cell_w: float, cell_h: float, words: tuple[float, float] = (0.0, 0.0),
             min_width: float = 0.0) -> float:
    """The map's shorter side in a ``cell_w``×``cell_h`` cell whose words take ``words``;
    a cell narrower than ``min_width`` cuts them, which counts as half the map."""
    side = min(cell_w - words[0], cell_h - words[1])
    return side if cell_w >= min_width else min(side, 0.5 * (cell_w - words[0]))


def _thumb_side(count: int, width: float, height: float, words: tuple[float, float],
                min_width: float, spacing: float = 4.0) -> float:
    """The largest small-map side ``count`` maps reach in ``width``×``height``."""
    best = 0.0
    for cols in range(1, max(count, 1) + 1):
        rows = -(-count // cols)
        best = max(best, map_side((width + spacing) / cols - spacing,
                                  (height + spacing) / rows - spacing, words, min_width))
    return best


class FocusedHead(QWidget):
    """``cell`` (the HeatmapCell drawn large), ``keys`` (KeyNames under the map);
    ``show_map(maps, index)`` draws map ``index`` of ``maps``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cell = HeatmapCell(parent=self)
        self.cell.setObjectName("focused_head")
        self.keys = KeyNames(self.cell)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.cell, 1)
        column.addWidget(self.keys)

    def show_map(self, maps: StageMaps, index: int) -> None:
        named = maps.col_kind == "key"
        self.cell.view.set_axes_shown(True)
        self.cell.view.set_bottom_shown(not named)  # the names go under it, turned
        self.keys.set_names(maps.col_labels if named else ())
        self.cell.show_map(maps.maps[index], maps)
        self.cell.show()
        self.keys.update()

    def clear(self, message: str) -> None:
        self.keys.set_names(())
        self.cell.clear(message)


class ThumbCell(HeatmapCell):
    """A map of the heads' grid: in presentation its footer, when it cannot sit beside
    the title, may give its line to the map and wait on hover (``set_footer_line``)."""

    footer_line = True

    def set_footer_line(self, on: bool) -> None:
        self.footer_line = bool(on)
        if self._footer_text:
            self._place_footer()

    def _place_footer(self) -> None:
        super()._place_footer()
        if not self.footer_line and not self.footer.isHidden():
            self.footer.hide()
            self.title.setToolTip(" · ".join(filter(None, [plain_text(self._title_forms[0]),
                                                            self._footer_text])))


class PresentingMaps:
    """The heads panel's presentation part: the chosen head large (``focus_box``, a
    FocusedHead), every head small beside or under it in ``_pair``; mixed into the panel,
    which has ``controller``, ``maps``, ``caption``, ``axis_words``, ``scroll``, ``_layout_grid``
    and ``refresh``."""

    def _make_pair(self, row) -> None:
        """The grid's scroll area in ``row``, and before it the large map (hidden until
        presentation)."""
        self.focus_box = FocusedHead(self)
        self.focus, self.focus_keys = self.focus_box.cell, self.focus_box.keys
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

    def _thumb_words(self, footers: bool | None = None) -> dict:
        """What a small map's words take in presentation's type, for grid_columns: the
        title's line and (``footers``, else as now) the footer's under it, the frame
        around them, and the width the words need uncut."""
        footers = self._thumb_footers if footers is None else footers
        cell = self.focus
        bold = QFont(cell.title.font())
        bold.setBold(True)
        metrics = QFontMetricsF(bold)
        margins = cell.layout().contentsMargins()
        frame = 2 * cell.frameWidth()
        across = margins.left() + margins.right() + frame
        lines = 2 if footers else 1
        down = lines * metrics.height() + margins.top() + margins.bottom() + 2 * cell.layout().spacing()
        widest = metrics.horizontalAdvance(f"head {max(self._shown - 1, 0)}")
        if footers:
            widest = max(widest, cell.footer.fontMetrics().horizontalAdvance("0.00 bits"))
        return {"words": (across, down + frame), "min_width": widest + across}

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
            self.focus_box.show_map(self.maps, self.focus_index())
            self._orient()  # the key names' height is known now
        elif self._presenting:
            self.focus_box.clear("no maps at this stage")

    def _orient(self) -> None:
        """Side by side or one above the other, and the large map's share: of the ways
        tried, the one whose large map reaches FOCUS_FLOOR of the screen's height and
        whose small maps and large map's shape come closest to their goals (a narrow
        panel gave thin strips for small maps beside a tall, narrow large one)."""
        wide, share, footers = True, FOCUS_STRETCH / (FOCUS_STRETCH + THUMBS_STRETCH), True
        if self._presenting:  # every screen: a fixed 2 : 1 drew 1920×1080's large map tall and narrow
            wide, share, footers = self._best_arrangement()
        self._pair.setDirection(QBoxLayout.Direction.LeftToRight if wide
                                else QBoxLayout.Direction.TopToBottom)
        self._pair.setStretchFactor(self.focus_box, round(100 * share))
        self._pair.setStretchFactor(self.scroll, round(100 * (1 - share)))
        if footers != self._thumb_footers:
            self._thumb_footers = footers
            for cell in self._pool:
                cell.set_footer_line(footers)
            self._layout_grid(force=True)

    def _best_arrangement(self) -> tuple[bool, float, bool]:
        """(side by side, the large map's share, the small maps' footers on lines of
        their own): the bits of every head are worth a line where the maps keep
        their size without it, and left to hover where they would not."""
        outer = self.layout().contentsMargins()
        spacing = self.layout().spacing()
        room_w = (self.width() - outer.left() - outer.right() - self.bar_view.sizeHint().width()
                  - 2 * spacing)
        # the controls' row and the axes' words above the maps (the caption is hidden in
        # presentation)
        room_h = (self.height() - outer.top() - outer.bottom() - self.batch_spin.sizeHint().height()
                  - self.axis_words.heightForWidth(self.width()) - 3 * spacing)
        # the large map's own words: its title, the names beside and under
        names_w = max(self.focus.left_axis.width(), self.focus.title.fontMetrics().averageCharWidth() * 8)
        names_h = (self.focus.title.sizeHint().height()
                   + self.focus_keys.minimumHeight() + 12)  # the turned key names: a fixed height
        least_w = self.focus_box.minimumSizeHint().width()  # the axes' words above it
        floor = FOCUS_FLOOR * (self.window().height() if self.window() is not self else room_h)
        thumb_goal = THUMB_GOAL_PX if self.window().width() < ROOMY_SCREEN else ROOMY_THUMB_GOAL_PX
        best_key, best = None, (True, FOCUS_SHARES[len(FOCUS_SHARES) // 2], True)
        for footers in (True, False):
            thumbs = self._thumb_words(footers)
            for wide in (True, False):
                for share in FOCUS_SHARES:
                    box_w = max(share * room_w, least_w) if wide else room_w
                    focus_w = box_w - names_w - 12
                    focus_h = (room_h if wide else share * room_h) - names_h
                    rest = (room_w - box_w, room_h) if wide else (room_w, (1 - share) * room_h)
                    side = _thumb_side(max(self._shown, 1), *rest, **thumbs)
                    square = min(focus_w, focus_h) / max(focus_w, focus_h, 1.0)
                    goals = min(side / thumb_goal, square / SQUARE_GOAL, 1.0)
                    key = (focus_h >= floor, round(goals, 2), footers, min(focus_w, focus_h))
                    if best_key is None or key > best_key:
                        best_key, best = key, (wide, share, footers)
        return best

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._presenting:
            self._orient()

