"""One head, large: zoomable, with the keys a chosen query attends to most.

Opened by clicking a map of the heatmap panel. It follows the controller like
the panel does (stage, batch element, new traces), so it can stay open while a
teacher steps through the stages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from mha_explorer.core.display.head_maps import StageMaps, top_keys
from mha_explorer.core.display.variant_maps import stage_maps
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.qt.heads.axis_words import AxisWords
from mha_explorer.qt.heads.color_bar import ColorBarView
from mha_explorer.qt.heads.head_cell import HeatmapCell
from mha_explorer.qt.nesting import nested

if TYPE_CHECKING:
    from mha_explorer.core.stages.trace import Trace
    from mha_explorer.qt.controller import Controller

DEFAULT_TOP_K = 5
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


class HeadDialog(QDialog):
    def __init__(self, controller: Controller, index: int, tensor: str = "Q", stretch: bool = False,
                 parent=None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.index = index
        self.tensor = tensor  # as the panel's selector: Q, K or V at project/view/transpose
        self.stretch = stretch  # as the panel's "stretch colours"
        self.maps: StageMaps | None = None
        self.setMinimumSize(820, 560)

        self.cell = HeatmapCell(zoomable=True)
        self.cell.setMinimumSize(520, 440)
        self.bar_view = ColorBarView()
        self.bar_view.set_items([self.cell.image])
        self.caption = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.hover_label = QLabel(  # plain: a token such as "<h1>" is a word, not markup
            " ", textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse,
            textFormat=Qt.TextFormat.PlainText)

        self.query_combo = QComboBox()
        self.k_spin = QSpinBox(minimum=1, maximum=DEFAULT_TOP_K, value=DEFAULT_TOP_K)
        self.query_combo.setAccessibleName("Query")
        self.query_combo.setToolTip("The query whose strongest keys are listed (or click a row)")
        self.k_spin.setAccessibleName("Keys listed")
        self.k_spin.setToolTip("How many of the strongest keys to list")
        self.top_table = QTableWidget(0, 3)
        self.top_table.setHorizontalHeaderLabels(["key", "position", "weight"])
        self.top_table.verticalHeader().setVisible(False)
        self.top_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.top_table.horizontalHeader().setStretchLastSection(True)
        self.top_table.setAccessibleName("Strongest keys")
        self.top_table.setToolTip("The keys this query attends to most, strongest first")
        for corner in self.top_table.findChildren(QAbstractButton):  # Qt's own, unnamed
            corner.setAccessibleName("Select all keys")
            corner.setToolTip("Select the whole list")
        self.top_box = QGroupBox("keys this query attends to most (softmax weights)")
        box = QVBoxLayout(self.top_box)
        form = nested(box, QFormLayout())
        form.addRow("&query", self.query_combo)
        form.addRow("&top k", self.k_spin)
        box.addWidget(self.top_table, 1)
        self.top_box.setMinimumWidth(260)

        self.axis_words = AxisWords()  # as over the panel's maps
        layout = QVBoxLayout(self)
        layout.addWidget(self.caption)
        layout.addWidget(self.axis_words)
        maps_row = nested(layout, QHBoxLayout(), 1)
        maps_row.addWidget(self.cell, 1)
        maps_row.addWidget(self.bar_view)
        maps_row.addWidget(self.top_box)
        layout.addWidget(self.hover_label)

        self.query_combo.currentIndexChanged.connect(self._update_top)
        self.k_spin.valueChanged.connect(self._update_top)
        self.cell.hovered.connect(self._on_hover)
        self.cell.clicked.connect(self._on_click)
        controller.trace_ready.connect(self.refresh)
        controller.stage_changed.connect(self.refresh)
        controller.batch_index_changed.connect(self.refresh)
        self.refresh()

    def set_view(self, index: int, tensor: str, stretch: bool) -> None:
        """Follow the panel: which map, which projection, which colour scale."""
        if (index, tensor, stretch) != (self.index, self.tensor, self.stretch):
            self.index, self.tensor, self.stretch = index, tensor, stretch
            self.refresh()

    def refresh(self, *_args) -> None:
        trace = self.controller.trace
        if trace is None:
            return
        try:
            maps = stage_maps(trace, self.controller.stage, self.controller.batch_index,
                              self.tensor, stretch_weights=self.stretch)
        except IndexError:  # that batch element is still being computed
            return
        self.maps = maps
        self.axis_words.set_axes(maps.axes if maps.maps else None)
        if not maps.maps:
            self.cell.clear(maps.empty_reason)
            self.caption.setText(maps.caption)
            return
        index = min(self.index, len(maps.maps) - 1)
        heatmap = maps.maps[index]
        self.setWindowTitle(f"{heatmap.title} at {maps.stage}")
        self.caption.setText(maps.caption)
        self.cell.show_map(heatmap, maps)
        self.bar_view.show_scale(maps)
        self._fill_queries(trace)

    def _fill_queries(self, trace: Trace) -> None:
        """Queries whose attention rows the trace keeps; the choice survives refreshes."""
        weights = trace.tensors.get(StageId.softmax, {}).get("weights")
        self.top_box.setVisible(weights is not None and self.maps.shows_query_heads)
        if weights is None:
            return
        queries = trace.shown_rows  # a window of rows, or rows spread over a long sequence
        labels = [f"{r} · {trace.tokens_q[r]}" for r in queries]
        current = self.query_combo.currentData()
        if [self.query_combo.itemText(i) for i in range(self.query_combo.count())] != labels:
            self.query_combo.blockSignals(True)
            self.query_combo.clear()
            for r, label in zip(queries, labels, strict=False):
                self.query_combo.addItem(label, r)
            found = self.query_combo.findData(current)
            # by default the last query: under a causal mask it sees the most keys
            self.query_combo.setCurrentIndex(found if found >= 0 else len(labels) - 1)
            self.query_combo.blockSignals(False)
        self.k_spin.setMaximum(trace.config.S)
        self._update_top()

    def selected_query(self) -> int | None:
        return self.query_combo.currentData()

    def top_k(self) -> list[tuple[int, float]]:
        """[(key position, weight)] for the chosen query of this head, largest first."""
        trace, query = self.controller.trace, self.selected_query()
        if trace is None or query is None or not self.maps or not self.maps.shows_query_heads:
            return []
        at = (trace.batch_slot(self.controller.batch_index), self.index, self._map_row(trace, query))
        weights = trace.tensors[StageId.softmax]["weights"][at]  # [S]
        scores = trace.tensors[StageId.scores].get("scores")
        visible = np.isfinite(scores[at]) if scores is not None else None  # -inf: masked
        return top_keys(weights, self.k_spin.value(), visible)

    def _update_top(self, *_args) -> None:
        trace = self.controller.trace
        pairs = self.top_k()
        self.top_table.setRowCount(len(pairs))
        for i, (key, weight) in enumerate(pairs):
            for j, text in enumerate((trace.tokens_kv[key], str(key), f"{weight:.4f}")):
                item = QTableWidgetItem(text)
                if j:  # numbers right-aligned
                    item.setTextAlignment(RIGHT)
                self.top_table.setItem(i, j, item)
        query = self.selected_query()
        self.cell.mark_row(self.maps.row_start + self._map_row(trace, query) if pairs else None)

    @staticmethod
    def _map_row(trace: Trace, query: int) -> int:
        """The stored row of query ``query``: its place among the rows the trace kept."""
        return trace.shown_rows.index(query)

    def _on_hover(self, row: int, col: int) -> None:
        if self.maps is not None and self.maps.maps:
            self.hover_label.setText(self.maps.describe(min(self.index, len(self.maps.maps) - 1),
                                                        row, col))

    def _on_click(self, row: int, _col: int) -> None:
        trace = self.controller.trace
        if trace is None or self.maps is None or self.maps.row_kind != "query":
            return
        at = row - self.maps.row_start  # the map's row among those kept
        shown = trace.shown_rows
        found = self.query_combo.findData(shown[at]) if 0 <= at < len(shown) else -1
        if found >= 0:
            self.query_combo.setCurrentIndex(found)
