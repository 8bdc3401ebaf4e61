"""What-if, page three: the logit lens and the last token's logit in parts.

A layers × tokens table: row k is the residual stream after k layers (0: the embedding alone)
read through the final norm and the unembedding, each cell the likeliest next token there,
coloured by its probability (viridis, 0 to 1). The last row is the model's own output. Beside
it, bars: the model's top token's logit at the last position split into the embedding's, each
head's and each MLP's direct parts, which add up to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from mha_explorer.core.display.colors import ink_on
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.qt.colormaps import lookup_table
from mha_explorer.qt.jobs import JobKind
from mha_explorer.qt.trained.attribution_bars import AttributionBars
from mha_explorer.qt.trained.job_page import JobPage, SideBySide

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

SHOWN_ROWS = 8  # the table's rows always in sight, header included
DEFAULT_TEXT = next(m.default_sentence for m in MODELS.values() if m.causal)


def _lens(model_key, text, *, cancel, progress):
    from mha_explorer.core.models.causal.report import lens  # torch, on the jobs thread

    return lens(model_key, text, progress=progress, cancel=cancel)


class LensTable(QTableWidget):
    """Rows "after k", columns the text's tokens, cells the top token coloured by probability."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("lens_table")
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setAccessibleName("The top token after every layer at every position")

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """Room for a few layers' rows, however the page splits its height."""
        hint = super().minimumSizeHint()
        return QSize(hint.width(), max(hint.height(), SHOWN_ROWS * (self.fontMetrics().height() + 8)))

    def set_lens(self, pieces, top_texts, top_probs) -> None:
        from mha_explorer.core.display.what_if import shown_token

        lut = lookup_table()
        depth, T = top_probs.shape
        self.clear()
        self.setRowCount(depth)
        self.setColumnCount(T)
        self.setHorizontalHeaderLabels(list(pieces))
        self.setVerticalHeaderLabels(["embedding" if k == 0 else f"after L{k}" for k in range(depth)])
        for k in range(depth):
            for t in range(T):
                prob = float(top_probs[k, t])
                item = QTableWidgetItem(shown_token(top_texts[k][t]))
                color = QColor(*(int(c) for c in lut[int(round(255 * min(max(prob, 0.0), 1.0)))]))
                item.setBackground(QBrush(color))
                item.setForeground(QBrush(QColor(ink_on(color.name()))))
                item.setToolTip(f"after {k} layers, position {t} ({pieces[t]}): "
                                f"{shown_token(top_texts[k][t])} with probability {prob:.3f}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                self.setItem(k, t, item)
        self.scrollToItem(self.item(depth - 1, T - 1))  # the model's own answer, at the end


class LensView(JobPage):
    KIND = JobKind.lens
    RUN_TEXT = "Read every layer"
    BUSY_TEXT = "Reading the text, then every layer's stream through the unembedding…"

    def __init__(self, controller: Controller, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(controller, jobs, parent)
        self.run_button.setToolTip("Read the residual stream after every layer as if it were the last")
        self.text_field = QLineEdit(DEFAULT_TEXT, objectName="lens_text")
        self.text_field.setAccessibleName("Text to read")
        self.text_field.returnPressed.connect(self.run)
        self.inputs.addWidget(QLabel("Text", buddy=self.text_field))
        self.inputs.addWidget(self.text_field, 1)
        self.table = LensTable()
        self.bars = AttributionBars()
        split = SideBySide(self.table, self.bars)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([300, 200])  # the table three fifths, the bars two, at any width
        self.body.addWidget(split, 1)
        self.bars.head_chosen.connect(self.head_chosen)

    def request(self, model_key: str) -> tuple[Any, tuple]:
        return _lens, (model_key, self.text_field.text())

    def accepts(self, result: Any) -> bool:
        from mha_explorer.core.models.causal.results import LensResult  # numpy: with the answer

        return isinstance(result, LensResult)

    def show(self, result: Any) -> None:  # noqa: A003
        from mha_explorer.core.display.what_if import lens_summary

        self.result = result
        self.table.set_lens(result.pieces, result.top_texts, result.top_probs)
        a = result.attribution
        self.bars.set_parts(a.names, a.values, a.heads)
        self.summary.setText(lens_summary(result))
