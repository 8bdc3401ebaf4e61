"""The KV cache of this model size under each attention variant, side by side, for the
Parameters & memory dock: MHA, GQA, MQA, the latent family's cache and the config's sliding window
(when it has one), in bytes per token, per sequence and per batch (and for the whole model when
the trained model or a preset gives the layer count).

The numbers are core/kv_compare.py's; this widget only lays them out. A bar in each row
shows the per-sequence bytes against MHA's, so the saving reads at a glance.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.plan.kv_cache import KVRow, kv_compare_rows, model_layers
from mha_explorer.core.units import format_bytes
from mha_explorer.qt.whole_rows import WholeTable

COLUMNS = ("Variant", "Setting", "Per token (formula)", "Per token", "Tokens cached", "Per sequence",
           "Per batch", "Whole model", "vs MHA", "Per sequence vs MHA")
BAR_CELLS = 10  # characters of the text bar at 100 %
EIGHTHS = " ▏▎▍▌▋▊▉"


def row_texts(row: KVRow, mha: KVRow) -> tuple[str, ...]:
    share = row.per_sequence / mha.per_sequence if mha.per_sequence else 0.0
    return (row.variant, row.setting, row.formula, format_bytes(row.per_token), f"{row.tokens:,}",
            format_bytes(row.per_sequence), format_bytes(row.per_batch), format_bytes(row.whole_model),
            f"{row.ratio(mha):.3g}×", f"{text_bar(share)} {share:.3g}×")


def text_bar(share: float, cells: int = BAR_CELLS) -> str:
    """A bar of block characters, in eighths of a character: readable in any theme and font."""
    eighths = round(max(0.0, min(1.0, share)) * cells * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(cells)


class KVCompareTable(QWidget):
    """Public: ``table`` (QTableWidget), ``caption`` (QLabel), ``rows`` (the KVRow list shown),
    ``layers`` (int), ``refresh()`` (re-read the controller's config; on config_changed)."""

    def __init__(self, controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setObjectName("kv_compare")
        self.caption = QLabel(objectName="kv_compare_caption")
        self.caption.setWordWrap(True)
        self.table = WholeTable(0, len(COLUMNS), objectName="kv_compare_table")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)  # the bar column keeps its bar and its number on one line
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setAccessibleName("KV cache by variant")
        # every row in sight, no scroll bar of its own down: the page it is on scrolls
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.table)
        self.rows: list[KVRow] = []
        self.layers = 1
        # in a turn of its own: refilling and re-measuring the table costs tens of ms
        controller.later.on(controller.config_changed, self.refresh)
        self.refresh()

    def refresh(self) -> None:
        cfg = self.controller.config
        self.layers = model_layers(cfg)
        self.rows = kv_compare_rows(cfg, self.layers)
        mha = self.rows[0]
        self.caption.setText(
            f"KV cache for D = {cfg.d_model:,}, H = {cfg.H}, S = {cfg.S:,}, B = {cfg.batch}, {cfg.dtype}; "
            + (f"whole model: {self.layers} layers" if self.layers > 1 else "one layer")
            + ". The last column is the cache per sequence against MHA's.")
        header = self.table.horizontalHeader()
        # sized once after the fill: sizing to contents on every setItem measured every cell
        # again each time (about 0.1 s an edit, the most of what an edit cost)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.setRowCount(len(self.rows))
        for r, row in enumerate(self.rows):
            exact = (None, None, None, row.per_token, row.tokens, row.per_sequence, row.per_batch,
                     row.whole_model, None, None)
            for c, text in enumerate(row_texts(row, mha)):
                item = QTableWidgetItem(text + (" (current)" if c == 0 and row.current else ""))
                if exact[c] is not None:
                    item.setToolTip(f"{exact[c]:,}" + (" bytes" if c != 4 else " tokens"))
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if row.current:
                    font = QFont(item.font())
                    font.setBold(True)
                    item.setFont(font)
                if c == len(COLUMNS) - 1:
                    item.setFont(QFont("monospace", item.font().pointSize()))
                    item.setToolTip("bytes per sequence against MHA's "
                                    "(a window and a latent cache save here)")
                self.table.setItem(r, c, item)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setCurrentCell(-1, -1)  # nothing to select or edit: no focus frame on a cell
        self._fit_rows()

    def _fit_rows(self) -> None:
        """As tall as the header, every row and the sideways scroll bar its ten columns need."""
        table = self.table
        table.resizeRowsToContents()
        rows = sum(table.rowHeight(r) for r in range(table.rowCount()))
        bar = table.horizontalScrollBar().sizeHint().height()
        table.setFixedHeight(table.horizontalHeader().sizeHint().height() + rows
                             + 2 * table.frameWidth() + bar)

    def changeEvent(self, event) -> None:  # Qt's API
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # presentation's type: taller rows
            self._fit_rows()
