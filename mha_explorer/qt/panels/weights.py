"""Where the weights come from: random (untrained), a trained model's layer, or a Lab run.

Choosing a trained model gives the config its shape (config.rules.trained_fields, through
core.edits as every edit goes), has the sentence read as the model's own tokens, and switches
off the configuration controls that would change that shape, with a note saying why. The
reading runs on the jobs thread (qt/text_reading.py: the first use of a model builds its
tokenizer, converting Gemma 3's file first): meanwhile the choice shows its progress here,
under the choice, with a Cancel that keeps the weights in use. A model whose package is not
installed is offered disabled, with how to add it (found out after the window's first paint:
the install records take a few tens of milliseconds to read). A Lab run opened in the stage
view shows here as the source in use, and choosing random leaves it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.rules import layer_fields, trained_fields
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS, model_named
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.specs.weights import LAB, RANDOM
from mha_explorer.qt.jobs import JobDone, JobKind
from mha_explorer.qt.nesting import nested

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.panels.configuration import ControlsPanel
    from mha_explorer.qt.text_reading import Reading

CHOICES = (("random (untrained)", RANDOM), *((m.title, m.key) for m in MODELS.values()),
           ("a Lab run", LAB))
# the configuration rows a trained layer fixes (its shape, its mask, its length)
LOCKED_BOXES = ("preset", "d_model", "n_heads", "n_kv_heads", "kv_seq", "causal", "bias", "seq")
RANDOM_NOTE = "Seeded random weights: structure, not learned meaning."
LAB_NOTE = ("A model trained in the Lab: its layer's real weights and heads. Choose random "
            "weights (or another model) to leave it.")


def trained_note(model: ModelDescription, layer: int) -> str:
    kind = "decoder" if model.causal else "encoder"
    window = model.layer_window(layer)
    where = f", local: a window of {window}" if window else ""
    return (f"A trained {kind} layer{where}: D {model.d_model}, {model.heads} heads, "
            f"{model.kv_heads} key/value head{'s' if model.kv_heads > 1 else ''}; the controls that "
            "would change its shape are locked. Tokens are its own.")


def trained_edits(cfg: MHAConfig, model: ModelDescription, layer: int) -> dict[str, Any]:
    """The edits that turn ``cfg`` into layer ``layer`` of ``model``: its shape, and the
    sentence's words (another model's pieces turned back into words, the model's own text when
    there is none), which the controller has read as the model's tokens (text_reading)."""
    words = cfg.tokens if cfg.weights == model.key else runtime.words_of(cfg.tokens, tuple(MODELS.values()))
    words = tuple(words or model.default_sentence.split())
    return {**trained_fields(model, layer), "weights": model.key, "layer": layer,
            "tokens": words, "seq": len(words)}


def installed_models() -> dict[str, tuple[bool, str]]:
    """model key -> (installed, how to add it): on the jobs thread."""
    return {key: runtime.is_available(model) for key, model in MODELS.items()}


def reading_note(model: ModelDescription) -> str:
    return f"Opening {model.name}: reading the sentence as its tokens…"


class WeightsPanel(QWidget):
    """A choice of weights and, for the trained model, a layer 1–6."""

    def __init__(self, controller: Controller, controls: ControlsPanel | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("weights_panel")
        self._controller = controller
        self._controls = controls
        self._syncing = False
        self._availability: dict[str, tuple[bool, str]] | None = None  # learn_availability
        self._asked_availability = False

        self.combo = QComboBox()
        self.combo.setObjectName("weights_choice")
        for text, key in CHOICES:
            self.combo.addItem(text, key)
        self.combo.setAccessibleName("Weights")
        self.combo.setToolTip("Random weights, or the real weights of a trained model's layer")
        self.layer_spin = QSpinBox()
        self.layer_spin.setObjectName("weights_layer")
        self.layer_spin.setPrefix("layer ")
        self.layer_spin.setAccessibleName("Trained layer")
        self.layer_spin.setToolTip("Which of the model's layers every stage shows")
        self.note = QLabel()
        self.note.setObjectName("weights_note")
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note.setAccessibleName("About the weights")
        # a reading under way (the first use of a model converts it): how far, and Cancel
        self.progress = QProgressBar(objectName="weights_progress")
        self.progress.setAccessibleName("Opening the model")
        self.progress.setTextVisible(False)
        self.cancel_button = QPushButton("Cancel", objectName="weights_cancel")
        self.cancel_button.setAccessibleName("Cancel opening the model")
        self.cancel_button.setToolTip("Stop opening the model; the weights in use stay")

        # the dock's title names the choice: no label column, so the panel stays as narrow
        # as the configuration under it, in presentation type too
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(4)
        layout.addWidget(self.combo)
        row = nested(layout, QHBoxLayout())
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_button)
        layout.addWidget(self.layer_spin)
        layout.addWidget(self.note)
        layout.addStretch(1)
        # room for the choice, the layer and three lines of note, however the column is shared
        self.setMinimumHeight(self.combo.sizeHint().height() + self.layer_spin.sizeHint().height()
                              + 3 * self.note.fontMetrics().lineSpacing() + 16)

        items = self.combo.model()
        if isinstance(items, QStandardItemModel):
            # a Lab run is opened from the Lab (its "Open in stage view"), not chosen here
            items.item(len(CHOICES) - 1).setEnabled(False)
            items.item(len(CHOICES) - 1).setToolTip("Open a trained run from the Lab (Ctrl+L)")
        self.combo.currentIndexChanged.connect(self._on_choice)
        self.layer_spin.valueChanged.connect(self._on_layer)
        self.cancel_button.clicked.connect(controller.cancel_reading)
        controller.config_changed.connect(self._on_config)  # after the controls' own sync
        controller.reading_changed.connect(self._on_reading)
        controller.reading_progressed.connect(self._on_reading_progress)
        controller.reading_failed.connect(self._say)  # after the re-sync to the weights in use
        controller.jobs.done.connect(self._on_job_done)
        self._show_progress(False)
        self._on_reading(controller.reading)

    @property
    def available(self) -> bool:
        """Some trained model's package is installed (True until the records have been read)."""
        return self._availability is None or any(ok for ok, _ in self._availability.values())

    def learn_availability(self) -> None:
        """Ask the jobs thread which models' packages are installed (their install records:
        file reading, tens of milliseconds): a missing one is then offered disabled, its tip
        saying how to add it. Until the answer, every model is offered, and choosing a missing
        one is refused with the same words."""
        if not self._asked_availability:
            self._asked_availability = True
            self._controller.jobs.submit(JobKind.models, installed_models)

    def _on_job_done(self, done: JobDone) -> None:
        if done.kind != JobKind.models:
            return
        self._availability = done.result
        items = self.combo.model()
        for row, (_, key) in enumerate(CHOICES):
            ok, why = self._availability.get(key, (True, ""))
            if not ok and isinstance(items, QStandardItemModel):
                items.item(row).setEnabled(False)
                items.item(row).setToolTip(why)
        if self._controller.reading is None:
            self._sync(self._controller.config)  # the note names how to add one when none is

    # edits -----------------------------------------------------------------------
    def choose(self, weights: str) -> bool:
        """Switch to ``weights`` ("random" or a trained model's key); False (and a note) if
        refused. A trained model's choice is accepted at once and shown once its text is read
        (the note and the bar here follow the reading; a failure says why here)."""
        c = self._controller
        c.cancel_reading()  # a new choice replaces one still being opened
        cfg = c.config
        if weights == cfg.weights:
            return True
        model = model_named(weights)
        if model is not None:
            changes = trained_edits(cfg, model, min(self.layer_spin.value(), model.layers))
        else:
            changes = {"weights": RANDOM, "weights_path": None}
        if not self._controller.update(**changes):
            error = self._controller.error
            self._sync(self._controller.config)
            self._say(error.message if error is not None else "those weights do not fit")
            return False
        return True

    def _on_choice(self, index: int) -> None:
        if not self._syncing:
            self.choose(self.combo.itemData(index))

    def _on_layer(self, layer: int) -> None:
        c = self._controller
        cfg = c.reading.config if c.reading is not None else c.config  # the one being opened, first
        model = model_named(cfg.weights)
        if not self._syncing and model is not None:
            # a layer of another kind (local or global) brings its own window and RoPE base
            self._controller.update(**layer_fields(model, layer))

    # reflecting the config --------------------------------------------------------
    def _on_config(self, cfg: MHAConfig) -> None:
        if self._controller.reading is None:  # else the choice being opened stays in sight
            self._sync(cfg)

    def _on_reading(self, reading: Reading | None) -> None:
        if reading is None:
            self._show_progress(False)
            self._sync(self._controller.config)
            return
        self._sync(reading.config)
        self._say(reading_note(reading.model))
        self.progress.setRange(0, 0)  # busy until the reading says how far it is
        self._show_progress(True)

    def _on_reading_progress(self, fraction: float, words: str) -> None:
        self.progress.setRange(0, 1000)
        self.progress.setValue(int(1000 * fraction))
        if words:
            self._say(f"{words}…" if not words.endswith(("…", ".")) else words)

    def _show_progress(self, shown: bool) -> None:
        self.progress.setVisible(shown)
        self.cancel_button.setVisible(shown)

    def _sync(self, cfg: MHAConfig) -> None:
        model = model_named(cfg.weights)
        layers = model.layers if model is not None else 1
        self._syncing = True
        try:
            # always the source in use, a Lab run included: never "random" while it is not
            self.combo.setCurrentIndex(max(0, self.combo.findData(cfg.weights)))
            self.layer_spin.setRange(1, layers)
            self.layer_spin.setSuffix(f" of {layers}")
            self.layer_spin.setValue(min(max(cfg.layer, 1), layers))
        finally:
            self._syncing = False
        self.layer_spin.setEnabled(model is not None)
        self._lock_controls(model)
        if model is not None:
            self._say(trained_note(model, cfg.layer))
        elif cfg.weights == LAB:
            self._say(LAB_NOTE)
        elif self.available:
            self._say(RANDOM_NOTE)
        else:
            hints = "; ".join(m.distribution.install_hint for m in MODELS.values())
            self._say(f"{RANDOM_NOTE} For a trained model's real heads: {hints}")

    def _lock_controls(self, model: ModelDescription | None) -> None:
        if self._controls is None:
            return
        for key in LOCKED_BOXES:
            box = self._controls.boxes.get(key)
            if box is not None:
                box.setEnabled(model is None)
                box.setToolTip(f"Fixed by {model.title}; choose random weights to change it"
                               if model is not None else "")

    def _say(self, text: str) -> None:
        self.note.setText(text)
        self.note.setToolTip(text)
