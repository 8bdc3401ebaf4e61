"""The Lab page's control column: the task with its explanation and sample, the sizes
to train at, the buttons, and the lines that say what is happening or went wrong."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.lab.tasks import TASKS, sample_text
from mha_explorer.qt.lab import tables
from mha_explorer.qt.lab.splits import TallAsItsWords
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.shell.projector_style import grows_with_text

SWEEP_HEADS = "1,2,4,8,16"
SAMPLE_N, SAMPLE_VOCAB = 6, 8  # the sample line's size: short enough to read at a glance


class LabControls(TallAsItsWords, QWidget):
    """Only widgets: the page connects them and reads their values."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.task = QComboBox()
        self.task.addItems(list(TASKS))
        self.task.setCurrentText("reverse")
        self.explanation = QLabel(wordWrap=True)
        self.sample = QLabel()
        self.sample.setStyleSheet("font-family: monospace")
        self.heads = tables.spin_box(1, 64, 4)
        self.sweep_heads = QLineEdit(SWEEP_HEADS)
        self.d_model = tables.spin_box(8, 1024, 256)
        self.layers = tables.spin_box(1, 2, 1)
        self.steps = tables.spin_box(10, 100_000, 200)
        self.seed = tables.spin_box(0, 2**31 - 1, 0)
        self.analyse = grows_with_text(QCheckBox("ablate and prune after training", checked=True))
        self.train_button, self.sweep_button = QPushButton("Train"), QPushButton("Sweep")
        self.pause_button, self.cancel_button = QPushButton("Pause", checkable=True), QPushButton("Cancel")
        self.save_button, self.load_button = QPushButton("Save run…"), QPushButton("Load run…")
        self.stage_button, self.export_button = QPushButton("Open in stage view"), QPushButton("Export…")
        self.error = QLabel(wordWrap=True)
        self.error.setStyleSheet("color: #B00020")
        for spin in (self.heads, self.d_model, self.layers, self.steps, self.seed):
            spin.refused.connect(self.error.setText)  # a number the field could not read
        self.progress = QLabel()
        self.progress.setWordWrap(True)
        box = QVBoxLayout(self)
        form = nested(box, QFormLayout())
        # the explanation and the sample take the whole width: a narrow column leaves the
        # plots more room
        for label, widget in (("Task", self.task), ("", self.explanation), ("", self.sample),
                              ("Heads (Train)", self.heads), ("Sweep heads", self.sweep_heads),
                              ("d_model", self.d_model), ("Layers", self.layers), ("Steps", self.steps),
                              ("Seed", self.seed), ("", self.analyse)):
            if label:
                form.addRow(label, widget)
            else:
                form.addRow(widget)
        for pair in ((self.train_button, self.sweep_button), (self.pause_button, self.cancel_button),
                     (self.save_button, self.load_button), (self.stage_button, self.export_button)):
            row = nested(box, QHBoxLayout())
            for b in pair:
                row.addWidget(b)
        box.addWidget(self.progress)
        box.addWidget(self.error)
        box.addStretch(1)

    def show_task(self) -> None:
        """The chosen task's explanation and sample, and the sizes it is learned at by
        default (the induction task wants two layers)."""
        name = self.task.currentText()
        task = TASKS[name]
        self.explanation.setText(task.explanation)
        self.sample.setText(sample_text(name, SAMPLE_N, SAMPLE_VOCAB))
        self.d_model.setValue(task.d_model)
        self.steps.setValue(task.steps)
        self.layers.setValue(2 if task.layout else 1)

    def set_running(self, running: bool) -> None:
        """While a request runs, only Pause and Cancel."""
        for w in (self.train_button, self.sweep_button, self.save_button, self.load_button,
                  self.stage_button, self.export_button):
            w.setEnabled(not running)
        self.pause_button.setEnabled(running)
        self.cancel_button.setEnabled(running)
        if not running:
            self.pause_button.setChecked(False)

    WIDGETS = ("task", "explanation", "sample", "heads", "sweep_heads", "d_model", "layers", "steps", "seed",
               "analyse", "train_button", "sweep_button", "pause_button", "cancel_button", "save_button",
               "load_button", "stage_button", "export_button", "error", "progress")
