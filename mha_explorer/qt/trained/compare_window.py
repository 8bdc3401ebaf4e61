"""Every trained model side by side on one text, in a window of its own (View → Compare models).

The table holds each model's attention arithmetic as soon as the window opens (from the
descriptions alone) and, once the text has been read, its strongest induction head and its
sinks; below it, small multiples: one chosen depth's layer of each model, its heads side by
side and grouped by the key/value head they share, so MHA (MiniLM, 12 K/V heads), MQA (Gemma 3,
one) and GQA (SmolLM2, three) read apart at a glance. The models run on the jobs thread, with
progress and Cancel; this window only draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.display.compare import (
    COLUMNS,
    DEFAULT_TEXT,
    ModelComparison,
    cells,
    model_shape,
    notes,
)
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.qt.colormaps import lookup_table
from mha_explorer.qt.job_controls import JobControls
from mha_explorer.qt.jobs import JobDone, JobFailed, JobKind
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.scrolling import scroll_area
from mha_explorer.qt.trained.layer_grid import map_image

if TYPE_CHECKING:
    from mha_explorer.core.display.compare import Comparison
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

GROUP_GAP_PX = 10  # between the heads of two K/V heads
HEAD_GAP_PX = 3
LINE_GAP_PX = 4


def _compare(text: str, *, cancel, progress):
    from mha_explorer.core.display.compare import compare  # the models' torch, on the jobs thread

    return compare(text, cancel=cancel, progress=progress)


def layer_at(depth: float, layers: int) -> int:
    """The 1-based layer at ``depth`` (0: the first, 1: the last) of a model of ``layers``."""
    return 1 + round(depth * (layers - 1))


class HeadStrip(QWidget):
    """One model's heads of one layer side by side, grouped by the K/V head they read."""

    def __init__(self, key: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"compare_strip_{key}")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.title = ""
        self.note = ""  # said instead of maps (not installed, not read yet)
        self.images: list = []  # one QImage per head
        self.kv_heads = 1

    def show_maps(self, title: str, maps: np.ndarray, kv_heads: int) -> None:
        """``maps`` [H, T, T] of one layer, weights 0..1."""
        index = np.clip(np.rint(np.asarray(maps, dtype=np.float32) * 255), 0, 255).astype(np.uint8)
        self.title, self.note, self.kv_heads = title, "", kv_heads
        self.images = [map_image(index[h], lookup_table()) for h in range(index.shape[0])]
        self.setAccessibleName(title)
        self.updateGeometry()
        self.update()

    def show_note(self, title: str, note: str) -> None:
        self.title, self.note, self.images = title, note, []
        self.setAccessibleName(f"{title}: {note}")
        self.update()

    def _cell_px(self) -> int:
        heads = len(self.images)
        if not heads:
            return 0
        room = self.width() - (self.kv_heads - 1) * GROUP_GAP_PX - heads * HEAD_GAP_PX
        return max(8, min(room // heads, 96))

    def cell_rect(self, head: int) -> QRect:
        size = self._cell_px()
        group = head // max(len(self.images) // self.kv_heads, 1)
        top = 2 * self.fontMetrics().lineSpacing() + LINE_GAP_PX
        return QRect(head * (size + HEAD_GAP_PX) + group * GROUP_GAP_PX, top, size, size)

    def sizeHint(self) -> QSize:
        line = self.fontMetrics().lineSpacing()
        return QSize(640, 2 * line + LINE_GAP_PX + (self._cell_px() or 48) + line)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        p.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        line = self.fontMetrics().lineSpacing()
        p.drawText(QRect(0, 0, self.width(), line), Qt.AlignmentFlag.AlignLeft, self.title)
        if self.note:
            p.drawText(QRect(0, line, self.width(), line), Qt.AlignmentFlag.AlignLeft, self.note)
            return
        per_group = max(len(self.images) // self.kv_heads, 1)
        for h, image in enumerate(self.images):
            rect = self.cell_rect(h)
            p.drawText(QRect(rect.x(), line, rect.width(), line), Qt.AlignmentFlag.AlignCenter, f"h{h}")
            p.drawImage(rect, image)
            if h % per_group == 0 and self.kv_heads < len(self.images):  # each K/V head under its group
                last = self.cell_rect(min(h + per_group, len(self.images)) - 1)
                under = QRect(rect.x(), rect.bottom() + 2, last.right() - rect.x(), line)
                p.drawText(under, Qt.AlignmentFlag.AlignCenter, f"K/V {h // per_group}")


class CompareWindow(QWidget):
    """The text, Compare and Cancel, the table, the depth and the small multiples."""

    def __init__(self, controller: Controller, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("compare_window")
        self.setWindowTitle("Compare models — MHA Explorer")
        self._controller, self._jobs = controller, jobs
        self.models = tuple(MODELS.values())
        self.result: Comparison | None = None
        self.text_edit = QLineEdit(DEFAULT_TEXT, objectName="compare_text")
        self.text_edit.setAccessibleName("Text every model reads")
        self.text_edit.setToolTip("Repeat a phrase to find the heads that copy (induction heads)")
        self.run_button = QPushButton("Compare", objectName="compare_run")
        self.run_button.setToolTip("Read the text with every installed model")
        self.cancel_button = QPushButton("Cancel", objectName="compare_cancel")
        self.cancel_button.setToolTip("Stop reading; nothing is shown half done")
        self.progress = QProgressBar(objectName="compare_progress")
        self.summary = QLabel(objectName="compare_summary", wordWrap=True)
        self.table = QTableWidget(len(self.models), len(COLUMNS), objectName="compare_table")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        # as tall as its rows: the small multiples below get the rest
        self.table.setSizeAdjustPolicy(QTableWidget.SizeAdjustPolicy.AdjustToContents)
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Maximum)
        self.depth = QSlider(Qt.Orientation.Horizontal, objectName="compare_depth")
        self.depth.setRange(0, 100)
        self.depth.setValue(50)
        self.depth.setAccessibleName("Depth of the layer shown for each model")
        self.depth_label = QLabel(objectName="compare_depth_label")
        self.strips = {m.key: HeadStrip(m.key) for m in self.models}

        layout = QVBoxLayout(self)
        row = nested(layout, QHBoxLayout())
        row.addWidget(QLabel("Text:"))
        row.addWidget(self.text_edit, 1)
        for widget in (self.run_button, self.cancel_button, self.progress):
            row.addWidget(widget)
        layout.addWidget(self.summary)
        layout.addWidget(self.table)
        depth_row = nested(layout, QHBoxLayout())
        depth_row.addWidget(QLabel("Layer shown, by depth:"))
        depth_row.addWidget(self.depth, 1)
        depth_row.addWidget(self.depth_label)
        maps = QWidget(objectName="compare_maps")
        column = QVBoxLayout(maps)
        column.setContentsMargins(0, 0, 0, 0)
        for strip in self.strips.values():
            column.addWidget(strip)
        column.addStretch(1)
        layout.addWidget(scroll_area(maps), 1)  # a short screen scrolls the maps, not the table

        self.controls = JobControls(jobs, JobKind.compare, self.run_button, self.cancel_button, self.progress)
        self.run_button.clicked.connect(self.run)
        self.text_edit.returnPressed.connect(self.run)
        self.cancel_button.clicked.connect(self.cancel)
        self.depth.valueChanged.connect(self._show_depth)
        jobs.done.connect(self._on_done)
        jobs.failed.connect(self._on_failed)
        jobs.progressed.connect(self._on_progress)
        self._fill_shapes()
        self._show_depth()
        self.summary.setText("Each model's attention as arithmetic; Compare reads the text with all of them.")

    # requests -------------------------------------------------------------------------------
    def run(self) -> None:
        text = self.text_edit.text()
        if not text.split():
            self.summary.setText("Type a few words first (repeat a phrase to find induction heads).")
            return
        self.controls.started(self._jobs.submit(JobKind.compare, _compare, text, cancellable=True))
        self.summary.setText(f"Reading “{text}” with {len(self.models)} models…")

    def cancel(self) -> None:
        self.controls.cancel()
        self.summary.setText("Cancelled.")

    # answers ----------------------------------------------------------------------------------
    def _on_progress(self, progress) -> None:
        if progress.kind == JobKind.compare and progress.text:
            self.summary.setText(progress.text)

    def _on_done(self, done: JobDone) -> None:
        if done.kind != JobKind.compare:
            return
        self.controls.finish()
        self.result = done.result
        for row, model in enumerate(done.result.models):
            self._fill_row(row, model)
        read = sum(m.run is not None for m in done.result.models)
        self.summary.setText(f"“{done.result.text}”: {read} of {len(done.result.models)} models read it. KV "
                             "cache per token counts every layer, at the dtype the app holds the model in.")
        self._show_depth()

    def _on_failed(self, failed: JobFailed) -> None:
        if failed.kind == JobKind.compare:
            self.controls.finish()
            self.summary.setText(f"Not compared: {failed.message}")

    # drawing ------------------------------------------------------------------------------------
    def _fill_shapes(self) -> None:
        for row, model in enumerate(self.models):
            self._fill_row(row, ModelComparison(model_shape(model), None, None), read=False)

    def _fill_row(self, row: int, model: ModelComparison, read: bool = True) -> None:
        values, hovers = cells(model), notes(model)
        for column, (text, hover) in enumerate(zip(values, hovers, strict=True)):
            if not read and column >= len(values) - 2:
                text, hover = "—", "press Compare to read the text"
            item = QTableWidgetItem(text)
            item.setToolTip(f"{COLUMNS[column]}: {text}" + (f" — {hover}" if hover else ""))
            self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()

    def _show_depth(self) -> None:
        depth = self.depth.value() / 100
        self.depth_label.setText(f"{self.depth.value()} % of the way down")
        found = {m.shape.key: m for m in self.result.models} if self.result is not None else {}
        for model in self.models:
            layer = layer_at(depth, model.layers)
            title = (f"{model.name}: layer {layer} of {model.layers}, {model.heads} query heads on "
                     f"{model.kv_heads} K/V head{'s' if model.kv_heads > 1 else ''}")
            strip, compared = self.strips[model.key], found.get(model.key)
            if compared is None:
                strip.show_note(title, "press Compare to read the text")
            elif compared.run is None:
                strip.show_note(title, f"not installed: {compared.install}")
            else:
                strip.show_maps(title, compared.run.maps[layer - 1], model.kv_heads)
