"""The pieces of the configuration dock: a field's box with its inline error and
one-click suggestions, the spin boxes and labels, and the small rules the form
follows (which preset a config matches, a sensible GQA head count)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.config import FIELD_LABELS, MHAConfig, sentence_tokens
from mha_explorer.core.config.presets import PRESETS
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.scrolling import scroll_area
from mha_explorer.qt.whole_spin import WholeSpinBox

CUSTOM = "Custom"
KV_MODES = ("MHA", "GQA", "MQA")
SEED_MAX = 2**31 - 1  # QSpinBox holds a C int; the config allows more, nobody needs it
SUGGESTION_COLUMNS = 2

# Where each config field's mistakes are explained (fields sharing a control row).
ERROR_HOME = {"tokens": "sentence", "causal_alignment": "causal"}
# Rows a projector audience does not need (precision, placement, randomness,
# cross-attention): tucked away by set_advanced_visible(False) in presentation mode.
ADVANCED_ROWS = ("kv_seq", "dtype", "device", "seed")
# each row's label, in the order of the form
ROW_LABELS = {
    "preset": "Preset", "d_model": "d_model (D)", "n_heads": "Heads (H)",
    "n_kv_heads": "K/V heads", "batch": "Batch (B)", "seq": "Length (T)",
    "sentence": "Sentence", "kv_seq": "Keys (S)", "causal": "Mask", "bias": "Bias",
    "dtype": "dtype", "device": "Device", "seed": "Seed",
}
KV_TIPS = {
    "MHA": "Multi-head: every query head has its own key/value head (Hkv = H)",
    "GQA": "Grouped-query: groups of query heads share a key/value head (1 < Hkv < H)",
    "MQA": "Multi-query: all query heads share one key/value head (Hkv = 1)",
}


def suggestion_text(suggestion: dict[str, Any]) -> str:
    """{'n_heads': 8} -> '8 heads'; {'d_model': 12} -> 'd_model 12'."""
    parts = []
    for name, value in suggestion.items():
        number = isinstance(value, int) and not isinstance(value, bool)
        shown = f"{value:,}" if number else str(value)
        if name == "n_heads":
            parts.append(f"{shown} head{'' if value == 1 else 's'}")
        elif name == "n_kv_heads":
            parts.append(f"{shown} K/V head{'' if value == 1 else 's'}")
        else:
            parts.append(f"{FIELD_LABELS.get(name, name)} {shown}")
    return ", ".join(parts)


def suggestion_name(suggestion: dict[str, Any]) -> str:
    """A stable objectName for a suggestion button, e.g. 'suggestion_n_heads_8'."""
    return "suggestion_" + "_".join(f"{k}_{v}" for k, v in suggestion.items())


def matching_preset(cfg: MHAConfig) -> str | None:
    """The preset whose architecture the config has, if any."""
    for key, preset in PRESETS.items():
        if preset.apply(cfg) == cfg:
            return key
    return None


def describe(widget: QWidget, name: str, tip: str) -> QWidget:
    widget.setAccessibleName(name)
    widget.setToolTip(tip)
    return widget


def spin(name: str, tip: str, maximum: int, minimum: int = 1) -> QSpinBox:
    spin = WholeSpinBox()  # "64,64" is refused, not read as 6464
    spin.setRange(minimum, maximum)
    spin.setKeyboardTracking(True)  # every typed digit is an edit; the controller debounces
    spin.setGroupSeparatorShown(True)
    spin.setAccelerated(True)
    spin.setObjectName(name)
    return describe(spin, name, tip)


class SpaceKeepsFocus(QObject):
    """Lets a focused check box, button or combo take Space for itself.

    The main window binds Space to play/pause; without this a person tabbing
    through the form could never tick "causal" or open a list with the keyboard.
    """

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (event.type() == QEvent.Type.ShortcutOverride and event.key() == Qt.Key.Key_Space
                and event.modifiers() == Qt.KeyboardModifier.NoModifier):
            event.accept()  # the widget's own key handling wins over the shortcut
        return False


class FieldBox(QWidget):
    """One form field: its controls, then room for an inline error and its fixes."""

    def __init__(self, field: str, *rows: list[QWidget], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.field = field
        self.space_filter: QObject | None = None  # given to the suggestion buttons
        self.first_control = rows[0][0] if rows else None  # the form label's buddy
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        for widgets in rows:
            row = nested(layout, QHBoxLayout())
            row.setSpacing(6)
            for w in widgets:
                # a check box keeps to the left even when its neighbour is tucked away
                left = isinstance(w, QCheckBox) and len(widgets) > 1
                row.addWidget(w, 0, Qt.AlignmentFlag.AlignLeft if left else Qt.AlignmentFlag(0))
            if all(isinstance(w, (QCheckBox, QToolButton)) for w in widgets):
                row.addStretch(1)  # buttons keep their own width, left-aligned
            for w in widgets:
                if isinstance(w, WholeSpinBox):  # a number it could not read is said here too
                    w.refused.connect(self._show_refused)
        self._refused = ""

        self.error_label = QLabel()
        self.error_label.setObjectName(f"error_{field}")
        self.error_label.setAccessibleName(f"Problem with {FIELD_LABELS.get(field, field)}")
        self.error_label.setWordWrap(True)
        self.error_label.setProperty("role", "error")  # coloured by the theme
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        layout.addWidget(self.error_label)

        self.suggestion_area = QWidget()
        self._grid = QGridLayout(self.suggestion_area)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setSpacing(4)
        self.suggestion_area.hide()
        layout.addWidget(self.suggestion_area)
        self.suggestion_buttons: list[QPushButton] = []

    def show_error(self, message: str, suggestions: list[dict[str, Any]],
                   on_pick: Callable[[dict[str, Any]], None]) -> None:
        self.clear_error()
        self.error_label.setText(f"⚠ {message}")
        self.error_label.show()
        for suggestion in suggestions:
            text = suggestion_text(suggestion)
            button = QPushButton(text)
            button.setObjectName(suggestion_name(suggestion))
            describe(button, f"Apply {text}", f"Apply this fix: {text}")
            button.clicked.connect(lambda _=False, s=suggestion: on_pick(s))
            if self.space_filter is not None:
                button.installEventFilter(self.space_filter)
            self.suggestion_buttons.append(button)
        columns = self._suggestion_columns()
        for i, button in enumerate(self.suggestion_buttons):
            self._grid.addWidget(button, i // columns, i % columns)
        self.suggestion_area.setVisible(bool(suggestions))

    def _suggestion_columns(self) -> int:
        """Two fixes side by side where both fit the field's width, else one under the other:
        two wide buttons ("d_model 4,104") widened the form past its dock, cutting the
        message above them on the right."""
        widest = max((b.sizeHint().width() for b in self.suggestion_buttons), default=0)
        spacing = self._grid.horizontalSpacing()
        columns = SUGGESTION_COLUMNS
        while columns > 1 and columns * widest + (columns - 1) * spacing > self.width():
            columns -= 1
        return columns

    def _show_refused(self, message: str) -> None:
        """A number a field could not read, under it; gone once it reads."""
        if message:
            self.show_error(message, [], lambda _fix: None)
        elif self._refused and self.error_label.text() == f"⚠ {self._refused}":
            self.clear_error()
        self._refused = message

    def clear_error(self) -> None:
        self.error_label.hide()
        self.error_label.clear()
        for button in self.suggestion_buttons:
            self._grid.removeWidget(button)
            button.hide()
            button.deleteLater()
        self.suggestion_buttons = []
        self.suggestion_area.hide()


def preset_combo() -> QComboBox:
    """'Custom' and every preset by name, the model it comes from as the tooltip."""
    combo = describe(QComboBox(), "Preset", "Load the attention layer of a real model; batch, "
                     "length and the rest stay as they are")
    combo.setObjectName("preset")
    combo.addItem(CUSTOM, None)
    for key, preset in PRESETS.items():
        combo.addItem(preset.name, key)
        combo.setItemData(combo.count() - 1, preset.source, Qt.ItemDataRole.ToolTipRole)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(12)
    return combo


FORM_MARGINS = (8, 8, 8, 8)  # the configuration's forms, the settings and the variant fields alike


def scrolling_form(panel: QWidget) -> tuple[QScrollArea, QWidget, QFormLayout]:
    """A form in a scroll area that fills ``panel``: scrolls vertically, fits the width."""
    form_widget = QWidget()
    form_widget.setObjectName("controls_form")
    scroll = scroll_area(form_widget, fill=panel)
    form = QFormLayout(form_widget)
    form.setContentsMargins(*FORM_MARGINS)
    form.setHorizontalSpacing(10)
    form.setVerticalSpacing(8)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return scroll, form_widget, form


def kv_note(cfg: MHAConfig) -> str:
    """How the query heads share key/value heads, in words."""
    if cfg.Hkv == cfg.H:
        return "each query head has its own K and V"
    if cfg.Hkv == 1:
        return f"all {cfg.H} query heads share one K/V head"
    return f"{cfg.group_size} query heads share each of the {cfg.Hkv} K/V heads"


def set_value(spin: QSpinBox, value: int) -> None:
    # setting the same value would reset the text a person is typing
    if spin.value() != value:
        spin.setValue(value)


def sentence_note(text: str, seq: int, max_length: int) -> str:
    """What the sentence box says under itself: that a typed length replaced the
    sentence, or that the box stopped taking characters at its limit."""
    words = sentence_tokens(text)
    if len(text) >= max_length:
        return (f"The box holds at most {max_length:,} characters: the sentence was cut there "
                f"({len(words):,} words kept).")
    if words and len(words) != seq:
        return (f"T = {seq:,} replaces the {len(words):,}-word sentence: a sentence sets T "
                "to its number of words, so use one or the other.")
    return ""


def invalid_kv_note(d_model: int, heads: int) -> str:
    """The K/V and d_k hints while the typed values are invalid: about what was typed,
    not the last valid config."""
    if heads <= 0:
        return "d_k: no heads"
    return f"d_k = {d_model // heads:,}" if d_model % heads == 0 else "d_k: not whole"


def show_note(label: QLabel, text: str) -> None:
    label.setText(text)
    label.setVisible(bool(text))


def sentence_field() -> tuple[QLineEdit, QLabel]:
    """The sentence box, wide enough to read a short sentence whole, and the note under it."""
    edit = describe(QLineEdit(), "Sentence", "Type a sentence: its words become the tokens and "
                    "set T. Clear it to go back to numbered positions.")
    edit.setObjectName("sentence")
    edit.setPlaceholderText("e.g. the cat sat on the mat")
    edit.setClearButtonEnabled(True)
    edit.setMinimumWidth(edit.fontMetrics().averageCharWidth() * 28)
    for clear in edit.findChildren(QToolButton):  # Qt's own, unnamed
        describe(clear, "Clear sentence", "Clear the sentence: back to numbered positions")
    note = QLabel(wordWrap=True, objectName="sentence_note")
    note.setProperty("role", "muted")  # coloured by the theme
    note.hide()
    return edit, note
