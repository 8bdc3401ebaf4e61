"""The configuration dock: one control per config field, mistakes explained in place.

The controls show what the person typed; the controller keeps the last valid
config. While the typed values are invalid together, they are kept here as a
pending edit, so that the next edit (or a one-click suggestion) is judged
together with them rather than against the stale valid config. The controls
themselves, one per field with its range and its hover, are built by
config_controls.py; this panel lays them out and carries the edits.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QWidget,
)

from mha_explorer.core.config import MHAConfig, sentence_tokens
from mha_explorer.core.config.edits import merge_edits
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import model_named
from mha_explorer.core.variants.grouped import gqa_default
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.panels.config_controls import ConfigControls
from mha_explorer.qt.panels.config_fields import (
    ADVANCED_ROWS,
    ERROR_HOME,
    KV_MODES,
    ROW_LABELS,
    SEED_MAX,
    FieldBox,
    SpaceKeepsFocus,
    invalid_kv_note,
    matching_preset,
    scrolling_form,
    sentence_note,
    set_value,
    show_note,
)
from mha_explorer.qt.panels.head_sharing import show_head_sharing


class ControlsPanel(ConfigControls, QWidget):
    """Every setting of the attention layer and its input, as a form for a dock."""

    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("controls_panel")
        self._controller = controller
        self._pending: dict[str, Any] = {}  # typed edits that are not valid together yet
        self._syncing = False  # set while controls are written from the config
        self._editing = False  # set while one of our own edits is with the controller
        self._kv_mode = "MHA"
        self._last_fields: set[str] = set()  # what the person just edited: errors go there
        self._advanced = True
        self.boxes: dict[str, FieldBox] = {}
        self._build()
        self._connect()
        self._sync(controller.config)
        self._show_error(controller.error)

        controller.config_changed.connect(self._on_config_changed)
        controller.validation_changed.connect(self._show_error)

    # construction ----------------------------------------------------------------
    def _build(self) -> None:
        self._build_architecture()
        self._build_input()
        self._build_numbers()
        self.boxes = self._make_boxes()
        self._build_form()

    def _build_form(self) -> None:
        # the form scrolls rather than squeezes: an inline error must never be clipped,
        # and presentation mode's large type makes the form taller than most docks
        self.form_scroll, form_widget, form = scrolling_form(self)
        form.addRow(self.boxes["general"])
        for key, text in ROW_LABELS.items():
            label = QLabel(text)
            label.setBuddy(self.boxes[key].first_control)
            form.addRow(label, self.boxes[key])
        self._form, self._form_widget = form, form_widget
        self._fit_width()

        self._space_filter = SpaceKeepsFocus(self)
        for kind in (QCheckBox, QToolButton, QComboBox):
            for widget in form_widget.findChildren(kind):
                widget.installEventFilter(self._space_filter)
        for box in self.boxes.values():
            box.space_filter = self._space_filter

    def _connect(self) -> None:
        self.preset_combo.currentIndexChanged.connect(self._on_preset)
        self.d_model_spin.valueChanged.connect(lambda v: self._edit(d_model=v))
        self.heads_spin.valueChanged.connect(lambda v: self._edit(n_heads=v))
        self.kv_group.idClicked.connect(self._on_kv_mode)
        self.kv_spin.valueChanged.connect(self._on_kv_count)
        self.batch_spin.valueChanged.connect(lambda v: self._edit(batch=v))
        self.seq_spin.valueChanged.connect(self._on_seq)
        self.sentence_edit.textChanged.connect(self._on_sentence)
        self.cross_check.toggled.connect(self._on_cross)
        self.kv_seq_spin.valueChanged.connect(lambda v: self._edit(kv_seq=v))
        self.causal_check.toggled.connect(lambda on: self._edit(causal=on))
        self.alignment_combo.currentTextChanged.connect(lambda t: self._edit(causal_alignment=t))
        self.bias_check.toggled.connect(lambda on: self._edit(bias=on))
        self.dtype_combo.currentTextChanged.connect(lambda t: self._edit(dtype=t))
        self.device_combo.currentTextChanged.connect(lambda t: self._edit(device=t))
        self.seed_spin.valueChanged.connect(lambda v: self._edit(seed=v))

    def _fit_width(self) -> None:
        """Never narrower than the form: the horizontal scroll bar is off, so a form
        wider than the dock (larger type in presentation mode) would be cut off."""
        self.form_scroll.setMinimumWidth(self._form_widget.minimumSizeHint().width()
                                     + self.form_scroll.verticalScrollBar().sizeHint().width())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        # larger type (presentation mode) or a style sheet's paddings (the theme); a hidden
        # form is measured as it shows (the window's theme restyles it several times first)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange) and self.isVisible():
            self._fit_width()

    def showEvent(self, event) -> None:
        self._fit_width()  # the children are polished by now: measure them as drawn
        super().showEvent(event)

    # public -------------------------------------------------------------------------
    @property
    def advanced_visible(self) -> bool:
        return self._advanced

    def set_advanced_visible(self, visible: bool) -> None:
        """Show or tuck away the rows a projector audience does not need: cross-attention
        (S), dtype, device, seed, and the causal mask's alignment."""
        self._advanced = bool(visible)
        for key in ADVANCED_ROWS:
            self._form.setRowVisible(self.boxes[key], self._advanced)
        self.alignment_combo.setVisible(self._advanced)
        self._fit_width()

    @property
    def labels_above(self) -> bool:
        return self._form.rowWrapPolicy() == QFormLayout.RowWrapPolicy.WrapAllRows

    def set_labels_above(self, above: bool) -> None:
        """Each label above its control (a narrow, tall form: presentation mode's large
        type then fits a side column) or beside it (the everyday form)."""
        self._form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows if above
                                    else QFormLayout.RowWrapPolicy.DontWrapRows)
        self._form.setLabelAlignment((Qt.AlignmentFlag.AlignLeft if above
                                      else Qt.AlignmentFlag.AlignRight)
                                     | Qt.AlignmentFlag.AlignVCenter)
        self._fit_width()

    def field_box(self, field: str) -> FieldBox:
        """The box that holds a config field's controls and explains its errors."""
        return self.boxes.get(ERROR_HOME.get(field, field), self.boxes["general"])

    def error_box(self, error) -> FieldBox:
        """Where an error is explained: beside the control just edited when the error
        concerns it (the person is looking there), else beside the offending field."""
        related = {error.field} | {name for s in error.suggestions for name in s}
        edited = sorted(self._last_fields & related)
        box = self.field_box(edited[0] if edited else error.field)
        if not self._advanced and box.field in {self.boxes[k].field for k in ADVANCED_ROWS}:
            return self.boxes["general"]  # its row is tucked away: explain it at the top
        return box

    def error_label(self, field: str) -> QLabel:
        return self.field_box(field).error_label

    def suggestion_buttons(self) -> list[QPushButton]:
        return [b for box in self.boxes.values() for b in box.suggestion_buttons]

    # edits ----------------------------------------------------------------------------
    def _edit(self, **changes: Any) -> None:
        if self._syncing:
            return
        self._last_fields = set(changes)
        self._submit(merge_edits(self._pending, changes))

    def _submit(self, changes: dict[str, Any]) -> None:
        self._editing = True
        try:
            accepted = self._controller.update(**changes)
        finally:
            self._editing = False
        if accepted:
            self._pending = {}
            # an edit back to the current config changes nothing, so sync here too
            self._sync(self._controller.config)
        else:
            self._pending = changes

    def _apply_suggestion(self, suggestion: dict[str, Any]) -> None:
        self._submit(merge_edits(self._pending, suggestion))

    def _on_preset(self, index: int) -> None:
        key = self.preset_combo.itemData(index)
        if self._syncing or key is None:
            return  # "Custom" is a description, not an action
        self._pending = {}
        self._last_fields = {"preset"}
        self._controller.apply_preset(key)
        self._sync(self._controller.config)

    def _on_kv_mode(self, index: int) -> None:
        self._kv_mode = KV_MODES[index]
        self.kv_spin.setEnabled(self._kv_mode == "GQA")
        if self._kv_mode == "MHA":
            self._edit(n_kv_heads=None)
        elif self._kv_mode == "MQA":
            self._edit(n_kv_heads=1)
        else:
            heads = self._pending.get("n_heads", self._controller.config.H)
            count = gqa_default(heads, self.kv_spin.value())
            self._syncing = True
            self.kv_spin.setValue(count)
            self._syncing = False
            self._edit(n_kv_heads=count)

    def _on_kv_count(self, value: int) -> None:
        if self._kv_mode == "GQA":
            self._edit(n_kv_heads=value)

    def _on_seq(self, value: int) -> None:
        if self._syncing:  # the config's own length (another model's tokens), not one typed
            return
        show_note(self.sentence_note, sentence_note(self.sentence_edit.text(), value,
                                                    self.sentence_edit.maxLength()))
        self._edit(seq=value)

    def _on_sentence(self, text: str) -> None:
        if self._syncing:  # a length typed just cleared it: the note says why, keep it
            return
        words = sentence_tokens(text)
        show_note(self.sentence_note, sentence_note(text, len(words), self.sentence_edit.maxLength()))
        self._edit(tokens=words, seq=len(words)) if words else self._edit(tokens=None)

    def _on_cross(self, on: bool) -> None:
        self.kv_seq_spin.setEnabled(on)
        self._edit(kv_seq=self.kv_seq_spin.value() if on else None)

    # reflecting the controller -------------------------------------------------------
    def _on_config_changed(self, cfg: MHAConfig) -> None:
        self._pending = {}
        self._sync(cfg)

    def _sentence_words(self, cfg: MHAConfig) -> tuple[str, ...]:
        """The words the sentence box shows: a trained model's pieces as the words they read
        (the labels show the pieces), and while a text is being read, the words typed; other
        tokens as they are."""
        reading = self._controller.reading
        shown = reading.config if reading is not None else cfg
        model = model_named(shown.weights)
        if model is None or not runtime.owns(model, shown.tokens):
            return tuple(shown.tokens or ())  # words, or random weights on the tokens as they are
        return tuple(runtime.words_of(shown.tokens, (model,)) or ())

    def _show_error(self, error) -> None:
        for box in self.boxes.values():
            box.clear_error()
        if error is None:
            if not self._editing:  # fixed elsewhere: drop what was typed here
                self._pending = {}
                self._sync(self._controller.config)
            return
        self._syncing = True  # what was typed is no preset, and no hint of the last valid one
        self.preset_combo.setCurrentIndex(0)
        self._syncing = False
        self.d_k_label.setText(invalid_kv_note(self.d_model_spin.value(), self.heads_spin.value()))
        self.kv_note.setText("")
        self.error_box(error).show_error(error.message, error.suggestions,
                                         self._apply_suggestion)

    def _sync(self, cfg: MHAConfig) -> None:
        """Write the config into the controls without treating it as an edit."""
        self._syncing = True
        try:
            preset = matching_preset(cfg)
            self.preset_combo.setCurrentIndex(max(0, self.preset_combo.findData(preset))
                                              if preset else 0)
            set_value(self.d_model_spin, cfg.d_model)
            set_value(self.heads_spin, cfg.H)
            if not self._editing:  # keep the mode the person picked while they edit
                self._kv_mode = ("MHA" if cfg.n_kv_heads is None or cfg.Hkv == cfg.H
                                 else "MQA" if cfg.Hkv == 1 else "GQA")
            set_value(self.kv_spin, cfg.Hkv)
            show_head_sharing(self, cfg, self._kv_mode)
            set_value(self.batch_spin, cfg.batch)
            set_value(self.seq_spin, cfg.T)
            words = self._sentence_words(cfg)
            if sentence_tokens(self.sentence_edit.text()) != words:
                self.sentence_edit.setText(" ".join(words))
                if words:  # a sentence from elsewhere (a model's own text) sets T: nothing to say
                    show_note(self.sentence_note, "")
            self.cross_check.setChecked(cfg.kv_seq is not None)
            set_value(self.kv_seq_spin, cfg.S)
            self.kv_seq_spin.setEnabled(cfg.kv_seq is not None)
            self.causal_check.setChecked(cfg.causal)
            self.alignment_combo.setCurrentText(cfg.causal_alignment)
            self.alignment_combo.setEnabled(cfg.causal and cfg.is_cross)
            self.bias_check.setChecked(cfg.bias)
            self.dtype_combo.setCurrentText(cfg.dtype)
            self.device_combo.setCurrentText(cfg.device)
            set_value(self.seed_spin, min(cfg.seed, SEED_MAX))
        finally:
            self._syncing = False
        self._fit_width()  # a family's own words (MLA's widths) may need other room
