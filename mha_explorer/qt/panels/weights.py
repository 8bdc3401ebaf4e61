"""Where the weights come from: random (untrained) or a trained model's layer.

Choosing MiniLM-L6 gives the config the model's shape (core.trained.model_info's
MODEL_FIELDS, through core.edits as every edit goes), reads the sentence as the
model's word pieces, and switches off the configuration controls that would
change that shape, with a note saying why. Without the optional package the
choice is disabled and the note says how to add it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import QComboBox, QLabel, QSpinBox, QVBoxLayout, QWidget

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.models.minilm import info
from mha_explorer.core.models.minilm.files import is_available

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.panels.configuration import ControlsPanel

RANDOM = "random"
CHOICES = (("random (untrained)", RANDOM), (info.DISPLAY_NAME, info.WEIGHTS_NAME))
# the configuration rows a trained layer fixes (its shape, its mask, its length)
LOCKED_BOXES = ("preset", "d_model", "n_heads", "n_kv_heads", "kv_seq", "causal", "bias", "seq")
RANDOM_NOTE = "Seeded random weights: structure, not learned meaning."
TRAINED_NOTE = (f"A trained layer: D {info.D_MODEL}, {info.N_HEADS} heads, biases, no mask; the "
                "controls that would change its shape are locked. Tokens are its word pieces.")


def trained_edits(cfg: MHAConfig, layer: int) -> dict[str, Any]:
    """The edits that turn ``cfg`` into layer ``layer`` of the trained model; ConfigError
    (with the fix) when the package is missing or the sentence does not fit."""
    from mha_explorer.core.models.minilm.pieces import as_pieces

    pieces = as_pieces(cfg.tokens)
    return {**info.MODEL_FIELDS, "weights": info.WEIGHTS_NAME, "layer": layer,
            "tokens": pieces, "seq": len(pieces)}


class WeightsPanel(QWidget):
    """A choice of weights and, for the trained model, a layer 1–6."""

    def __init__(self, controller: Controller, controls: ControlsPanel | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("weights_panel")
        self._controller = controller
        self._controls = controls
        self._syncing = False
        self.available, self._why = is_available()

        self.combo = QComboBox()
        self.combo.setObjectName("weights_choice")
        for text, key in CHOICES:
            self.combo.addItem(text, key)
        self.combo.setAccessibleName("Weights")
        self.combo.setToolTip("Random weights, or the real weights of a trained model's layer")
        self.layer_spin = QSpinBox()
        self.layer_spin.setObjectName("weights_layer")
        self.layer_spin.setRange(1, info.N_LAYERS)
        self.layer_spin.setPrefix("layer ")
        self.layer_spin.setSuffix(f" of {info.N_LAYERS}")
        self.layer_spin.setAccessibleName("Trained layer")
        self.layer_spin.setToolTip(f"Which of the model's {info.N_LAYERS} layers every stage shows")
        self.note = QLabel()
        self.note.setObjectName("weights_note")
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note.setAccessibleName("About the weights")

        # the dock's title names the choice: no label column, so the panel stays as narrow
        # as the configuration under it, in presentation type too
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(4)
        layout.addWidget(self.combo)
        layout.addWidget(self.layer_spin)
        layout.addWidget(self.note)
        layout.addStretch(1)
        # room for the choice, the layer and three lines of note, however the column is shared
        self.setMinimumHeight(self.combo.sizeHint().height() + self.layer_spin.sizeHint().height()
                              + 3 * self.note.fontMetrics().lineSpacing() + 16)

        if not self.available:
            model = self.combo.model()
            if isinstance(model, QStandardItemModel):
                model.item(1).setEnabled(False)
                model.item(1).setToolTip(self._why)
        self.combo.currentIndexChanged.connect(self._on_choice)
        self.layer_spin.valueChanged.connect(self._on_layer)
        controller.config_changed.connect(self._on_config)  # after the controls' own sync
        self._on_config(controller.config)

    # edits -----------------------------------------------------------------------
    def choose(self, weights: str) -> bool:
        """Switch to ``weights`` ("random" or "minilm-l6"); False (and a note) if refused."""
        cfg = self._controller.config
        if weights == cfg.weights:
            return True
        try:
            changes = (trained_edits(cfg, self.layer_spin.value()) if weights == info.WEIGHTS_NAME
                       else {"weights": RANDOM})
        except ConfigError as err:
            self._say(err.message)
            self._sync(cfg)
            return False
        if not self._controller.update(**changes):
            error = self._controller.error
            self._say(error.message if error is not None else "those weights do not fit")
            self._sync(self._controller.config)
            return False
        return True

    def _on_choice(self, index: int) -> None:
        if not self._syncing:
            self.choose(self.combo.itemData(index))

    def _on_layer(self, layer: int) -> None:
        if not self._syncing and self._controller.config.weights == info.WEIGHTS_NAME:
            self._controller.update(layer=layer)

    # reflecting the config --------------------------------------------------------
    def _on_config(self, cfg: MHAConfig) -> None:
        if cfg.weights == info.WEIGHTS_NAME and not self._pieces_current(cfg):
            return  # the sentence came in as words: re-read as pieces, which syncs again
        self._sync(cfg)

    def _pieces_current(self, cfg: MHAConfig) -> bool:
        """True when the tokens are already the model's pieces; otherwise re-read them."""
        from mha_explorer.core.models.minilm.pieces import as_pieces

        try:
            pieces = as_pieces(cfg.tokens)
        except ConfigError as err:
            self._say(err.message)
            return True
        if pieces == cfg.tokens:
            return True
        return not self._controller.update(tokens=pieces, seq=len(pieces))

    def _sync(self, cfg: MHAConfig) -> None:
        trained = cfg.weights == info.WEIGHTS_NAME
        self._syncing = True
        try:
            self.combo.setCurrentIndex(max(0, self.combo.findData(cfg.weights)))
            self.layer_spin.setValue(min(max(cfg.layer, 1), info.N_LAYERS))
        finally:
            self._syncing = False
        self.layer_spin.setEnabled(trained)
        self._lock_controls(trained)
        if trained:
            self._say(TRAINED_NOTE)
        elif self.available:
            self._say(RANDOM_NOTE)
        else:
            self._say(f"{RANDOM_NOTE} For a trained model's real heads: {info.INSTALL_HINT}")

    def _lock_controls(self, locked: bool) -> None:
        if self._controls is None:
            return
        for key in LOCKED_BOXES:
            box = self._controls.boxes.get(key)
            if box is not None:
                box.setEnabled(not locked)
                box.setToolTip(f"Fixed by {info.DISPLAY_NAME}; choose random weights to change it"
                               if locked else "")

    def _say(self, text: str) -> None:
        self.note.setText(text)
        self.note.setToolTip(text)
