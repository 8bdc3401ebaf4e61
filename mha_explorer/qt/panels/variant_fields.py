"""The attention variants as a compact group of controls: K/V kind (MHA, GQA, MQA follow the
key/value heads; another family has its own sizes), the sparse mask and the positions.

Every edit goes through ``Controller.update`` (core/edits.py), so the rules are the
config's own; a mistake in one of these fields is shown here, inline, with its fixes
(``ConfigError.suggestions``) as buttons that apply them.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.config import CAPS, FIELD_LABELS, ConfigError, MHAConfig
from mha_explorer.core.config.edits import merge_edits
from mha_explorer.core.specs.positions import POSITION_KINDS
from mha_explorer.core.variants.registry import FAMILIES, KINDS, changes_for, family_of
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.panels.config_fields import FORM_MARGINS, suggestion_name, suggestion_text
from mha_explorer.qt.shell.projector_style import grows_with_text
from mha_explorer.qt.whole_spin import WholeSpinBox

ATTENTION_KINDS = KINDS
KIND_TIPS = {kind: tip for family in FAMILIES for kind, tip in family.kind_tips.items()}
# spin box -> field, each family's own sizes; 0 is the special value: derived / none
SIZE_FIELDS = {f.name: (f.label, f.unset, f"{f.help}; {f.unset}: the default")
               for family in FAMILIES for f in family.fields if f.kind == "int"}
SWITCH_FIELDS = {f.name: (f.label, f.help) for family in FAMILIES for f in family.fields if f.kind == "bool"}
# the fields whose mistakes this group explains (others belong to the configuration dock)
OWN_FIELDS = (*(family.switch for family in FAMILIES if family.switch), *SIZE_FIELDS, *SWITCH_FIELDS,
              "rope_base",
              "window", "stride", "global_tokens", "positions")
MASK_FIELDS = {
    "window": ("Window (W)", "off", "sliding window: with causal each query sees its last W keys"),
    "stride": ("Stride (K)", "off", "keep only keys whose distance from the query is a multiple of K"),
    "global_tokens": ("Global tokens", "0", "the first N tokens see and are seen by every token"),
    "rope_base": ("RoPE base", "10000", "pair i turns by p·base^(-2i/d); 10000 by default"),
}


def kind_changes(kind: str, cfg: MHAConfig) -> dict[str, Any]:
    """The edit that makes ``cfg`` the chosen kind of attention."""
    return changes_for(kind, cfg)


def fix_text(suggestion: dict[str, Any]) -> str:
    """{'causal': True} -> 'turn causal on'; {'window': None} -> 'clear window'."""
    words, plain = [], {}
    for name, value in suggestion.items():
        label = FIELD_LABELS.get(name, name)
        if isinstance(value, bool):
            words.append(f"turn {label} {'on' if value else 'off'}")
        elif value is None:
            words.append(f"clear {label}")
        else:
            plain[name] = value
    if plain:
        words.append(suggestion_text(plain))
    return ", ".join(words)


def _spin(name: str, special: str, tip: str) -> QSpinBox:
    box = WholeSpinBox()  # "1,0" is refused, not read as 10
    box.setRange(0, CAPS.get(name, 1 << 20))
    box.setSpecialValueText(special)  # 0 shows as auto / none / off
    box.setGroupSeparatorShown(True)
    box.setKeyboardTracking(False)  # an edit when the number is complete, not per digit
    box.setObjectName(f"variant_{name}")
    box.setAccessibleName(name)
    box.setToolTip(tip)
    return box


class VariantFields(QWidget):
    """Attention kind, each family's own sizes, mask and positions for a ``Controller``.

    Public: ``kind_box`` (QComboBox), ``positions_box`` (QComboBox), ``spins`` (field ->
    QSpinBox), ``error_label`` (QLabel, hidden when valid), ``suggestion_buttons()``,
    ``refresh()`` (re-read the controller's config; called on config_changed).
    """

    def __init__(self, controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self._syncing = False
        self._pending: dict[str, Any] = {}
        self.setObjectName("variant_fields")
        self.kind_box = QComboBox(objectName="variant_kind")
        for kind in ATTENTION_KINDS:
            self.kind_box.addItem(kind)
            self.kind_box.setItemData(self.kind_box.count() - 1, KIND_TIPS[kind], Qt.ItemDataRole.ToolTipRole)
        self.kind_box.setAccessibleName("attention kind")
        self.kind_box.setToolTip("; ".join(f"{', '.join(f.kinds)}: {f.title}" for f in FAMILIES))
        self.positions_box = QComboBox(objectName="variant_positions")
        self.positions_box.addItems(list(POSITION_KINDS))
        self.positions_box.setAccessibleName("positions")
        self.positions_box.setToolTip("none; sinusoidal or learned (added to X); rope (turns Q and K)")
        self.spins = {name: _spin(name, special, tip)
                      for name, (_, special, tip) in {**SIZE_FIELDS, **MASK_FIELDS}.items()}
        self.switches = {name: grows_with_text(QCheckBox(label, objectName=f"variant_{name}", toolTip=tip))
                         for name, (label, tip) in SWITCH_FIELDS.items()}
        for name, box in self.switches.items():
            box.setAccessibleName(name)
            box.toggled.connect(lambda on, name=name: self._edit({name: on}))
        self.derived = QLabel(objectName="variant_derived")  # a family's sizes in effect, and its cache
        self.derived.setWordWrap(True)
        self.error_label = QLabel(objectName="variant_error")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #B00020;")
        self._fixes = QHBoxLayout()
        self._fix_buttons: list[QPushButton] = []
        self._build()
        self.kind_box.activated.connect(
            lambda i: self._edit(kind_changes(ATTENTION_KINDS[i], controller.config)))
        self.positions_box.activated.connect(lambda i: self._edit({"positions": POSITION_KINDS[i]}))
        for name, box in self.spins.items():
            box.valueChanged.connect(
                lambda value, name=name: self._edit({name: self._field_value(name, value)}))
            box.refused.connect(self._show_refused)
        controller.config_changed.connect(lambda _cfg: self.refresh())
        controller.validation_changed.connect(self.show_error)
        self.refresh()

    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(*FORM_MARGINS)  # in line with the form above it
        top = nested(outer, QFormLayout())
        top.addRow("Attention", self.kind_box)
        top.addRow("Positions", self.positions_box)
        top.addRow("RoPE base", self.spins["rope_base"])
        # a group per family with sizes of its own, shown while the config belongs to it
        self.family_groups: dict[str, QGroupBox] = {}
        for family in FAMILIES:
            if not family.fields:
                continue
            group = QGroupBox(family.title, objectName=f"variant_{family.key}")
            form = QFormLayout(group)
            for field in family.fields:
                if field.kind == "bool":
                    form.addRow(self.switches[field.name])
                else:
                    form.addRow(field.label, self.spins[field.name])
            form.addRow(self.derived)
            outer.addWidget(group)
            self.family_groups[family.key] = group
        mask = QGroupBox("Mask beyond causal", objectName="variant_mask")
        form = QFormLayout(mask)
        for name, (label, _, _) in MASK_FIELDS.items():
            if name != "rope_base":  # RoPE's base sits with the positions, above
                form.addRow(label, self.spins[name])
        outer.addWidget(mask)
        outer.addWidget(self.error_label)
        outer.addLayout(self._fixes)
        outer.addStretch(1)

    @staticmethod
    def _field_value(name: str, value: int) -> int | None:
        if name == "global_tokens":
            return value
        return None if value == 0 else value

    def _edit(self, changes: dict[str, Any]) -> None:
        if self._syncing:
            return
        # an edit that did not make a valid config is kept, so a fix applies on top of it
        merged = merge_edits(self._pending, changes)
        self._pending = {} if self.controller.update(**merged) else merged

    def _apply_fix(self, suggestion: dict[str, Any]) -> None:
        merged = merge_edits(self._pending, suggestion)
        self._pending = {} if self.controller.update(**merged) else merged


    def refresh(self) -> None:
        """Show the controller's config (without sending edits back)."""
        cfg = self.controller.config
        self._syncing = True
        try:
            self.kind_box.setCurrentIndex(ATTENTION_KINDS.index(cfg.variant))
            self.positions_box.setCurrentIndex(POSITION_KINDS.index(cfg.positions))
            family = family_of(cfg)
            own = {f.name for f in family.fields}
            for name, box in self.spins.items():
                value = getattr(cfg, name)
                box.setValue(0 if value is None else value)
                box.setEnabled(name in own or name not in SIZE_FIELDS)
            self.spins["rope_base"].setEnabled(cfg.positions_spec.rotates_qk)
            for name, box in self.switches.items():
                box.setChecked(bool(getattr(cfg, name)))
                box.setEnabled(name in own)
            for key, group in self.family_groups.items():
                group.setVisible(key == family.key)
            self.derived.setText(family.describe(cfg))
        finally:
            self._syncing = False
        if self.controller.error is None:
            self._pending = {}
            self.show_error(None)

    def _show_refused(self, message: str) -> None:
        """A number the field could not read, said where the group's mistakes are."""
        self.error_label.setText(message)
        self.error_label.setVisible(bool(message))

    def show_error(self, err: ConfigError | None) -> None:
        """The mistake and its fixes, when it is about one of this group's fields."""
        # the buttons we made, not the layout's items: asking for those wraps them
        for button in self._fix_buttons:
            self._fixes.removeWidget(button)
            button.hide()
            button.deleteLater()
        self._fix_buttons = []
        if err is None or err.field not in OWN_FIELDS:
            self.error_label.hide()
            return
        self.error_label.setText(err.message)
        self.error_label.show()
        for suggestion in err.suggestions:
            button = QPushButton(fix_text(suggestion), objectName=suggestion_name(suggestion))
            button.setToolTip("apply this fix")
            button.clicked.connect(lambda _=False, s=suggestion: self._apply_fix(s))
            self._fixes.addWidget(button)
            self._fix_buttons.append(button)

    def suggestion_buttons(self) -> list[QPushButton]:
        return list(self._fix_buttons)
