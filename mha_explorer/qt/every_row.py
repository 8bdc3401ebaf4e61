"""The line a stage after the softmax shows over a long sequence computed only at the rows
its maps draw: that this stage needs every query row, how long computing them likely takes
on this machine, and a button that computes them (the trace's own bar and Cancel follow it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.units import format_count, likely_duration

if TYPE_CHECKING:
    from mha_explorer.core.plan.build import Plan
    from mha_explorer.core.stages.trace import Trace
    from mha_explorer.qt.controller import Controller

BUTTON_WORDS = "Compute every row"
BUSY_WORDS = "computing every row…"


def needs_every_row(plan: Plan, stage: str) -> bool:
    """Whether ``stage`` comes after the softmax: its tensors need every query row."""
    ids = plan.stage_ids
    return StageId.softmax in ids and stage in ids and ids.index(stage) > ids.index(StageId.softmax)


def every_row_sentence(trace: Trace, plan: Plan) -> str:
    """'This stage needs all 100,000 query rows; only the 512 the maps show were computed.
    Every row: 1.23 T FLOPs, about 14 s on this machine.'"""
    cfg = trace.config
    kept = len(trace.row_ids or ())
    cost = f"{format_count(plan.total_flops)} FLOPs"
    if trace.every_row_seconds is not None:
        cost += f", {likely_duration(trace.every_row_seconds)} on this machine"
    return (f"This stage needs all {cfg.T:,} query rows; only the {kept:,} the maps show were "
            f"computed. Every row: {cost}.")


class EveryRowBar(QWidget):
    """``label`` (the sentence) and ``button`` (compute every row); shown only on a stage
    after the softmax of a trace computed at picked rows, hidden everywhere else."""

    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("every_row")
        self._controller = controller
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel(wordWrap=True, objectName="every_row_words")
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)  # wrapped to the width it gets, not to its narrowest
        self.label.setSizePolicy(policy)
        self.button = QPushButton(BUTTON_WORDS, objectName="every_row_button")
        self.button.setAccessibleName("Compute every query row")
        self.button.setToolTip("Compute this layer at every query row; the status bar shows its "
                               "progress and can cancel it")
        self.button.clicked.connect(controller.compute_every_row)
        row.addWidget(self.label, 1)
        row.addWidget(self.button)
        for signal in (controller.trace_ready, controller.stage_changed, controller.config_changed,
                       controller.compute_started, controller.trace_failed,
                       controller.compute_cancelled):
            signal.connect(self.refresh)
        self.refresh()

    def applies(self) -> bool:
        """Whether the stage on screen needs rows the trace on screen did not compute."""
        c = self._controller
        trace = c.current_trace
        return trace is not None and trace.row_ids is not None and needs_every_row(c.plan, c.stage)

    def refresh(self, *_args) -> None:
        c = self._controller
        shown = self.applies()
        if shown:
            self.label.setText(every_row_sentence(c.current_trace, c.plan))
            busy = c.computing_every_row  # pressed here or in the other view: once is enough
            self.button.setEnabled(not busy)
            self.button.setText(BUSY_WORDS if busy else BUTTON_WORDS)
        self.setVisible(shown)
