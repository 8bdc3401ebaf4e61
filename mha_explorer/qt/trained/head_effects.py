"""What-if, page one: every head switched off in turn, on random tokens shown twice.

Two layers × heads maps side by side — each head's induction score (its *pattern*: weight on the
token after the earlier occurrence) and how much switching it off raises the second copy's loss
(its *effect*) — and the heads ranked by effect, with their score beside it. The strongest
pattern is seldom the largest effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QSpinBox,
    QTableWidget,
    QWidget,
)

from mha_explorer.core.display.colors import DIVERGING_COLORMAP
from mha_explorer.qt.jobs import JobKind
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.trained.head_grid import HeadGrid
from mha_explorer.qt.trained.job_page import JobPage, SideBySide
from mha_explorer.qt.trained.number_item import NumberItem
from mha_explorer.qt.whole_rows import WholeCells

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

REPEATED = 40  # random tokens shown twice: 81 with <bos>
# short names, two words on two lines: the ranking keeps its columns whole in a narrow dock
# (the loss with the head off is the loss added's hover: the summary gives the loss it is added to)
COLUMNS = ("rank", "layer", "head", "loss\nadded", "induction")
TIPS = ("1: the head whose removal raises the loss most", "", "",
        "how much the second copy's loss rises with this head switched off (nats)",
        "the head's prefix-matching score on the same tokens: its pattern")


def _head_effects(model_key, n, seed, mean, *, cancel, progress):
    from mha_explorer.core.models.causal.report import repeat_ablation  # torch, on the jobs thread

    return repeat_ablation(model_key, n, seed, ablate=True, mean=mean, progress=progress, cancel=cancel)


class EffectTable(WholeCells, QTableWidget):
    """The heads ranked by what switching them off costs; a click on a row opens that head."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.setObjectName("effect_table")
        self.setHorizontalHeaderLabels(list(COLUMNS))
        for col, tip in enumerate(TIPS):
            self.horizontalHeaderItem(col).setToolTip(tip)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setAccessibleName("Heads ranked by the loss they add when switched off")
        self.whole_cells()  # a narrow dock scrolls a whole column at a time, none drawn half

    def set_rows(self, rows) -> None:
        self.setSortingEnabled(False)
        self.setRowCount(len(rows))
        for i, row in enumerate(rows):
            added = NumberItem(row.added, 2)
            added.setToolTip(f"the second copy's mean loss with this head off: {row.loss_off:.2f} nats")
            for col, item in enumerate((NumberItem(row.rank), NumberItem(row.layer), NumberItem(row.head),
                                        added, NumberItem(row.induction, 2))):
                self.setItem(i, col, item)
        self.horizontalHeader().setSortIndicator(0, Qt.SortOrder.AscendingOrder)
        self.setSortingEnabled(True)
        self.resizeColumnsToContents()  # now, so the width it asks for holds them
        self.updateGeometry()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """Every column whole, beside the scroll bar."""
        columns = self.horizontalHeader().length()
        return QSize(columns + 2 * self.frameWidth() + self.verticalScrollBar().sizeHint().width(),
                     super().sizeHint().height())

    def head_at(self, row: int) -> tuple[int, int]:
        return int(self.item(row, 1).value), int(self.item(row, 2).value)


class HeadEffects(JobPage):
    KIND = JobKind.head_effects
    RUN_TEXT = "Switch each head off"
    BUSY_TEXT = "Reading the repeated tokens, then each head switched off…"

    def __init__(self, controller: Controller, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(controller, jobs, parent)
        from mha_explorer.core.models.causal.report import MAX_REPEAT

        self.run_button.setToolTip("Zero each head's output in turn (its slice of W_O's input, at every "
                                   "position) and measure the loss on the repeated tokens")
        self.n_spin = QSpinBox(objectName="head_effects_n", minimum=2, maximum=MAX_REPEAT, value=REPEATED)
        self.n_spin.setAccessibleName("Random tokens, each shown twice")
        self.seed_spin = QSpinBox(objectName="head_effects_seed", minimum=0, maximum=2**31 - 1, value=0)
        self.seed_spin.setAccessibleName("Seed of the random tokens")
        self.mean_check = QCheckBox("set to its mean, not zero", objectName="head_effects_mean")
        self.mean_check.setToolTip("Mean-ablation: the head keeps adding its average output over the "
                                   "text; only what it adds for each token is gone")
        # one above the other: side by side, with a seed of ten digits, they made the page wider
        # than the Layers dock in presentation at 1024×768
        form = nested(self.inputs, QFormLayout())
        form.addRow("random tokens", self.n_spin)
        form.addRow("seed", self.seed_spin)
        self.inputs.addStretch(1)
        self.layout_.insertWidget(1, self.mean_check)  # a line of its own: the page stays narrow
        self.pattern = HeadGrid("induction score")
        self.pattern.setObjectName("head_effects_pattern")
        self.effect = HeadGrid("loss added (nats)")
        self.effect.setObjectName("head_effects_effect")
        self.table = EffectTable()
        maps = QWidget()
        side = QHBoxLayout(maps)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(self.pattern)
        side.addWidget(self.effect)
        self.split = SideBySide(maps, self.table)
        self.split.setStretchFactor(0, 1)  # the maps take what the ranking leaves
        self.split.setStretchFactor(1, 0)
        self.body.addWidget(self.split, 1)
        for grid in (self.pattern, self.effect):
            grid.head_chosen.connect(self.head_chosen)
        self.table.cellClicked.connect(lambda row, _col: self.head_chosen.emit(*self.table.head_at(row)))
        self.table.cellActivated.connect(lambda row, _col: self.head_chosen.emit(*self.table.head_at(row)))

    def request(self, model_key: str) -> tuple[Any, tuple]:
        return _head_effects, (model_key, self.n_spin.value(), self.seed_spin.value(),
                               self.mean_check.isChecked())

    def accepts(self, result: Any) -> bool:
        from mha_explorer.core.models.causal.results import RepeatAblation  # numpy: with the answer

        return isinstance(result, RepeatAblation)

    def show(self, result: Any) -> None:  # noqa: A003
        from mha_explorer.core.display.what_if import effect_rows, repeat_summary

        self.result = result
        added = result.ablated - result.loss_second
        limit = max(float(abs(added).max()), 1e-9)
        self.pattern.set_values(result.induction, layer_kinds=result.layer_kinds)
        self.effect.set_values(added, DIVERGING_COLORMAP, -limit, limit, layer_kinds=result.layer_kinds)
        self.table.set_rows(effect_rows(result))
        self.split.fit()  # the ranking's columns in sight
        self.summary.setText(repeat_summary(result))
