"""What-if, page two: activation patching between two prompts the person types.

A clean prompt and a corrupted one of the same length, an answer and a wrong answer of one
token each (the worked example is filled in). Every head's output is carried from the clean run
into the corrupted one; the layers × heads map shows the fraction of the logit difference each
brings back: 1 all of it, 0 none, below 0 a head that pushes the other way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QFormLayout, QLineEdit, QWidget

from mha_explorer.core.display.colors import DIVERGING_COLORMAP
from mha_explorer.core.models.causal.example import ANSWER, CLEAN, CORRUPT, WRONG
from mha_explorer.qt.jobs import JobKind
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.trained.head_grid import HeadGrid
from mha_explorer.qt.trained.job_page import JobPage

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

FULL_SCALE = 1.0  # the colours run from −1 (all the way back, the other way) to 1 (all of it)


def _patching(model_key, clean, corrupt, answer, wrong, *, cancel, progress):
    from mha_explorer.core.models.causal.report import patch  # torch, on the jobs thread

    return patch(model_key, clean, corrupt, answer, wrong, progress=progress, cancel=cancel)


class PatchingView(JobPage):
    KIND = JobKind.patching
    RUN_TEXT = "Patch each head"
    BUSY_TEXT = "Reading both prompts, then each head patched from the clean run…"

    def __init__(self, controller: Controller, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(controller, jobs, parent)
        self.run_button.setToolTip("Carry each head's output from the clean run into the corrupted one "
                                   "and measure the logit difference at the last token")
        form = nested(self.inputs, QFormLayout(), 1)
        self.fields: dict[str, QLineEdit] = {}
        for key, label, text, tip in (
                ("clean", "Clean prompt", CLEAN, "the prompt the model answers rightly"),
                ("corrupt", "Corrupted", CORRUPT, "the same number of tokens, changed where it matters"),
                ("answer", "Answer", ANSWER, "the clean prompt's answer: one token (mind the leading space)"),
                ("wrong", "Wrong answer", WRONG, "the answer the corrupted prompt leans to: one token")):
            field = QLineEdit(text, objectName=f"patching_{key}")
            field.setToolTip(tip)
            field.setAccessibleName(label)
            field.returnPressed.connect(self.run)
            form.addRow(label, field)
            self.fields[key] = field
        self.grid = HeadGrid("fraction recovered")
        self.grid.setObjectName("patching_grid")
        self.body.addWidget(self.grid, 1)
        self.grid.head_chosen.connect(self.head_chosen)
        self.asked: tuple[str, str] = (ANSWER, WRONG)

    def request(self, model_key: str) -> tuple[Any, tuple]:
        f = {key: field.text() for key, field in self.fields.items()}
        self.asked = (f["answer"], f["wrong"])
        return _patching, (model_key, f["clean"], f["corrupt"], f["answer"], f["wrong"])

    def accepts(self, result: Any) -> bool:
        from mha_explorer.core.models.causal.results import PatchResult  # numpy: with the answer

        return isinstance(result, PatchResult)

    def show(self, result: Any) -> None:  # noqa: A003
        from mha_explorer.core.display.what_if import patch_summary

        self.result = result
        self.grid.set_values(result.recovered, DIVERGING_COLORMAP, -FULL_SCALE, FULL_SCALE,
                             layer_kinds=result.layer_kinds)
        self.summary.setText(patch_summary(result, *self.asked))
