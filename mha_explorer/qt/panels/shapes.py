"""Every stage's tensors as a table: named dims, shapes, strides, FLOPs, new memory.

All text is prepared once per config from ``controller.plan`` into plain rows, so
``data()`` is a lookup and a config edit costs one ``dataChanged``. Coloured dims
are painted as chips by one delegate on two columns: no per-cell widgets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QRect, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QStyledItemDelegate,
    QTableView,
    QWidget,
)

from mha_explorer.core.display.colors import ink_on, relative_dim_color
from mha_explorer.core.plan.build import Plan
from mha_explorer.core.text.tables import SHAPE_COLUMNS, shape_table
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.shell.theme import LIGHT, Theme, theme_of
from mha_explorer.qt.whole_rows import WholeCells

COLUMNS = SHAPE_COLUMNS
COL = {name: i for i, name in enumerate(COLUMNS)}
RICH_COLUMNS = (COL["Dims"], COL["Shape"])

CHIPS_ROLE = Qt.ItemDataRole.UserRole + 1  # ((label, background, text colour), ...) per dim
BAR_ROLE = Qt.ItemDataRole.UserRole + 2  # (fraction of the largest tensor, colour)

# the current stage's rows take the theme's current_row colours (a warm yellow in the
# light theme: readable on a washed-out projector)
QUADRATIC_BAR = QColor(213, 94, 0, 110)  # the T·S term, in T's vermillion
PLAIN_BAR = QColor(0, 114, 178, 55)
CELL_PAD = 6  # pixels either side of a cell's content
CHIP_GAP = 3


def chips(dims: tuple[str, ...], labels: tuple[str, ...]) -> tuple:
    """Each label on a chip in its dim's colour, so names and sizes line up by colour; a
    variant's own dim (latent attention's d_v) in its MHA relative's, as the diagram draws it."""
    out = []
    for d, label in zip(dims, labels, strict=True):
        background = QColor(relative_dim_color(d))
        out.append((label, background, QColor(ink_on(background.name()))))
    return tuple(out)


@dataclass(frozen=True)
class Row:
    stage_index: int
    first_in_stage: bool
    texts: tuple[str, ...]
    tooltips: tuple[str, ...]
    chips: dict[int, tuple] = field(default_factory=dict)
    bar: float = 0.0
    quadratic: bool = False


def plan_rows(plan: Plan) -> list[Row]:
    """The shared table's rows (core.tables), with the dims and sizes as coloured chips."""
    return [Row(r.stage_index, r.first_in_stage, r.texts, r.tooltips,
                {COL["Dims"]: chips(r.dims, r.dims), COL["Shape"]: chips(r.dims, r.sizes)},
                r.memory_fraction, r.quadratic)
            for r in shape_table(plan)]


DISPLAY = Qt.ItemDataRole.DisplayRole
RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
NUMBER_COLUMNS = (COL["FLOPs"], COL["New memory"])


class ShapesModel(QAbstractTableModel):
    """The plan's rows; the current stage's rows are highlighted.

    Each cell's roles are prepared as a small dict when the plan or the stage
    changes, because views ask ``data()`` for half a dozen roles per cell on
    every paint, and a dict lookup is the cheapest answer Python can give.
    """

    def __init__(self, plan: Plan, stage_index: int = 0, parent=None, *,
                 theme: Theme = LIGHT) -> None:
        super().__init__(parent)
        self._stage = stage_index
        self._bold = QFont()
        self._bold.setBold(True)
        self._current_brush = QBrush(theme.q("current_row"))
        self._current_text = QBrush(theme.q("current_row_text"))
        self._rows = plan_rows(plan)
        self._stage_ids = plan.stage_ids  # the list varies: positions, RoPE, latent attention
        self._cells = [self._row_cells(row) for row in self._rows]

    def _row_cells(self, row: Row) -> list[dict]:
        current = row.stage_index == self._stage
        cells = []
        for col in range(len(COLUMNS)):
            roles = {DISPLAY: row.texts[col]}
            if row.tooltips[col]:
                roles[Qt.ItemDataRole.ToolTipRole] = row.tooltips[col]
            if col in row.chips:
                roles[CHIPS_ROLE] = row.chips[col]
            if col in NUMBER_COLUMNS:
                roles[Qt.ItemDataRole.TextAlignmentRole] = RIGHT
            if col == COL["New memory"]:
                if row.bar > 0:
                    roles[BAR_ROLE] = (row.bar, QUADRATIC_BAR if row.quadratic else PLAIN_BAR)
                if row.quadratic:
                    roles[Qt.ItemDataRole.FontRole] = self._bold
            if current:
                roles[Qt.ItemDataRole.BackgroundRole] = self._current_brush
                roles[Qt.ItemDataRole.ForegroundRole] = self._current_text
                roles[Qt.ItemDataRole.FontRole] = self._bold
            cells.append(roles)
        return cells

    def rowCount(self, parent: QModelIndex | None = None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | None = None) -> int:
        return 0 if parent is not None and parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=DISPLAY):
        if orientation == Qt.Orientation.Horizontal and role == DISPLAY:
            return COLUMNS[section]
        return None

    def data(self, index, role=DISPLAY):
        return self._cells[index.row()][index.column()].get(role) if index.isValid() else None

    def cell(self, row: int, column: int) -> dict:
        """All roles of one cell, for the delegate (no QModelIndex round trips)."""
        return self._cells[row][column]

    # updates -------------------------------------------------------------------------
    def set_plan(self, plan: Plan) -> None:
        rows = plan_rows(plan)
        self._stage_ids = plan.stage_ids
        if len(rows) == len(self._rows):
            self._rows = rows  # same structure (the usual edit): repaint in place
            self._cells = [self._row_cells(row) for row in rows]
            self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(COLUMNS) - 1))
        else:
            self.beginResetModel()  # cross-attention adds or removes X_kv
            self._rows = rows
            self._cells = [self._row_cells(row) for row in rows]
            self.endResetModel()

    def set_theme(self, theme: Theme) -> None:
        """The current stage's colours from another theme; repaints the rows that use them."""
        self._current_brush = QBrush(theme.q("current_row"))
        self._current_text = QBrush(theme.q("current_row_text"))
        self.set_stage(self._stage)

    def set_stage(self, stage_index: int) -> None:
        old, self._stage = self._stage, stage_index
        for index in (old, stage_index):
            rows = self.stage_rows(index)
            for r in rows:
                self._cells[r] = self._row_cells(self._rows[r])
            if rows:
                self.dataChanged.emit(self.index(rows[0], 0),
                                      self.index(rows[-1], len(COLUMNS) - 1))

    def row(self, r: int) -> Row:
        return self._rows[r]

    def stage_starts(self) -> list[int]:
        return [r for r, row in enumerate(self._rows) if row.first_in_stage and r > 0]

    def stage_rows(self, stage_index: int) -> list[int]:
        return [r for r, row in enumerate(self._rows) if row.stage_index == stage_index]

    def row_of(self, stage_id: str, tensor: str) -> int:
        """The row of a stage's tensor, e.g. row_of(StageId.view, 'Q')."""
        stage_index = self._stage_ids.index(stage_id)
        for r, row in enumerate(self._rows):
            if row.stage_index == stage_index and row.texts[COL["Tensor"]] == tensor:
                return r
        raise KeyError(f"{stage_id}/{tensor}")


def chip_width(metrics: QFontMetrics, chips) -> int:
    pad = metrics.averageCharWidth() // 2 + 2
    return sum(metrics.horizontalAdvance(label) + 2 * pad for label, _, _ in chips) \
        + CHIP_GAP * max(0, len(chips) - 1)


class ShapesDelegate(QStyledItemDelegate):
    """Paints the coloured dim chips and the memory bars, straight with QPainter.

    Only the Dims, Shape and New memory columns use it; the rest keep Qt's own
    (C++) painting. It reads the model's prepared cell directly and skips
    initStyleOption, which would ask data() for every role again: together that
    keeps a repaint of the whole table well inside a frame.
    """

    def paint(self, painter: QPainter, option, index) -> None:
        cell = index.model().cell(index.row(), index.column())
        background = cell.get(Qt.ItemDataRole.BackgroundRole)
        if background is not None:
            painter.fillRect(option.rect, background)
        rect = option.rect.adjusted(CELL_PAD, 0, -CELL_PAD, 0)
        painter.save()
        chips = cell.get(CHIPS_ROLE)
        if chips:
            bold = QFont(option.font)
            bold.setBold(True)
            painter.setFont(bold)
            metrics = QFontMetrics(bold)
            pad = metrics.averageCharWidth() // 2 + 2
            height = metrics.height() + 2
            x, y = rect.left(), rect.top() + (rect.height() - height) // 2
            for label, chip_background, chip_text in chips:
                width = metrics.horizontalAdvance(label) + 2 * pad
                chip = QRect(x, y, width, height)
                painter.fillRect(chip, chip_background)
                painter.setPen(chip_text)
                painter.drawText(chip, Qt.AlignmentFlag.AlignCenter, label)
                x += width + CHIP_GAP
        else:
            bar = cell.get(BAR_ROLE)
            if bar:
                fraction, colour = bar
                painter.fillRect(QRectF(rect.left(), rect.top() + 3, rect.width() * fraction,
                                        rect.height() - 6), colour)
            font = cell.get(Qt.ItemDataRole.FontRole)
            if font is not None:
                font = QFont(option.font)
                font.setBold(True)
                painter.setFont(font)
            else:
                painter.setFont(option.font)
            foreground = cell.get(Qt.ItemDataRole.ForegroundRole)
            painter.setPen(foreground.color() if foreground is not None
                           else option.palette.color(QPalette.ColorRole.Text))
            painter.drawText(rect, cell.get(Qt.ItemDataRole.TextAlignmentRole,
                                            int(Qt.AlignmentFlag.AlignVCenter)), cell[DISPLAY])
        painter.restore()


class ShapesTable(WholeCells, QTableView):
    """The shapes of every stage, following the controller's config and stage."""

    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("shapes_table")
        self.setAccessibleName("Shapes of every stage")
        self._controller = controller
        self._theme = theme_of(self)
        self.shapes_model = ShapesModel(controller.plan, self._plan_index(), self,
                                        theme=self._theme)
        self.setModel(self.shapes_model)
        self._delegate = ShapesDelegate(self)
        for column in (COL["Dims"], COL["Shape"], COL["New memory"]):
            self.setItemDelegateForColumn(column, self._delegate)
        # a read-only display: no selection to compete with the current-stage highlight,
        # and no focus, so arrow keys and Space stay with the window's stage shortcuts
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setShowGrid(False)
        self.setWordWrap(False)
        self.setCornerButtonEnabled(False)
        self.whole_cells()  # a column or row at the edge is shown whole or not at all
        self.verticalHeader().hide()
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        header = self.horizontalHeader()
        # widths are measured here from the prepared rows: ResizeToContents would ask
        # every cell for a size hint on every edit, several times slower than a frame
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self._fit()

        controller.config_changed.connect(self._on_config_changed)
        controller.stage_changed.connect(self._on_stage_changed)

    def _fit(self) -> None:
        """Row height from the font; column widths from the widest text, set in bold
        so that stepping (which bolds the current rows) never moves a column."""
        self.verticalHeader().setDefaultSectionSize(int(self.fontMetrics().height() * 1.7))
        bold = QFont(self.font())
        bold.setBold(True)
        metrics = QFontMetrics(bold)
        header = self.horizontalHeader()
        model = self.shapes_model
        for col, title in enumerate(COLUMNS[:-1]):  # the last column stretches
            widest = metrics.horizontalAdvance(title)
            for r in range(model.rowCount()):
                row = model.row(r)
                if col in RICH_COLUMNS:
                    widest = max(widest, chip_width(metrics, row.chips[col]))
                else:
                    widest = max(widest, metrics.horizontalAdvance(row.texts[col]))
            header.resizeSection(col, widest + 2 * CELL_PAD + 8)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.FontChange:  # presentation mode: larger type
            self._fit()
        elif event.type() == event.Type.PaletteChange and theme_of(self) is not self._theme:
            self._theme = theme_of(self)
            self.shapes_model.set_theme(self._theme)

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        # one line above each stage's first row, across the whole width
        painter = QPainter(self.viewport())
        painter.setPen(self._theme.q("border"))
        right = self.viewport().width()
        for r in self.shapes_model.stage_starts():
            y = self.rowViewportPosition(r)
            if 0 <= y <= self.viewport().height():
                painter.drawLine(0, y, right, y)
        painter.end()

    def _plan_index(self) -> int:
        """The current stage's place in this plan's list (which may hold more than the nine)."""
        ids = self._controller.plan.stage_ids
        return ids.index(self._controller.stage) if self._controller.stage in ids else -1

    def _on_config_changed(self, _cfg) -> None:
        self.shapes_model.set_plan(self._controller.plan)
        self.shapes_model.set_stage(self._plan_index())
        self._fit()

    def _on_stage_changed(self, _stage_id: str) -> None:
        self.shapes_model.set_stage(self._plan_index())
        rows = self.shapes_model.stage_rows(self._plan_index())
        if rows:  # last row first, so the stage's first row wins when both cannot fit
            self.scrollTo(self.shapes_model.index(rows[-1], 0))
            self.scrollTo(self.shapes_model.index(rows[0], 0))

    # for tests and export ------------------------------------------------------------
    def cell_text(self, stage_id: str, tensor: str, column: str) -> str:
        """What the table shows, e.g. cell_text(StageId.view, 'Q', 'Shape') -> '2 × 6 × 4 × 16'."""
        row = self.shapes_model.row_of(stage_id, tensor)
        return self.shapes_model.index(row, COL[column]).data()

    def highlighted_rows(self) -> list[int]:
        return [r for r in range(self.shapes_model.rowCount())
                if self.shapes_model.index(r, 0).data(Qt.ItemDataRole.BackgroundRole) is not None]
