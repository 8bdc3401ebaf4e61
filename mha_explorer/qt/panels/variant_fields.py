"""The attention variants as a compact group of controls: K/V kind (MHA, GQA, MQA follow the
key/value heads; MLA has its own sizes), the sparse mask and the positions.

Every edit goes through ``Controller.update`` (core/edits.py), so the rules are the
config's own; a mistake in one of these fields is shown here, inline, with its fixes
(``ConfigError.suggestions``) as buttons that apply them.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
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
from mha_explorer.core.variants.latent.dims import MLA_FIELDS, mla_dims
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.panels.config_fields import gqa_default, suggestion_name, suggestion_text

ATTENTION_KINDS = ("MHA", "GQA", "MQA", "MLA")
KIND_TIPS = {
    "MHA": "every query head has its own key/value head (Hkv = H)",
    "GQA": "groups of query heads share a key/value head (1 < Hkv < H)",
    "MQA": "all query heads share one key/value head (Hkv = 1)",
    "MLA": "latent attention: keys and values rebuilt per head from one cached latent c_KV",
}
# the fields whose mistakes this group explains (others belong to the configuration dock)
OWN_FIELDS = ("mla", *MLA_FIELDS, "window", "stride", "global_tokens", "positions")
# spin box -> field; 0 is the special value: derived / none / off
SIZE_FIELDS = {
    "kv_lora_rank": ("kv_lora_rank (r_kv)", "auto", "width of the cached latent c_KV; auto: 4·d_k"),
    "q_lora_rank": ("q_lora_rank (r_q)", "none",
                    "width of the query's latent; none: a plain query projection"),
    "qk_nope_head_dim": ("qk nope dim (d_n)", "auto", "per-head query/key width without position; auto: d_k"),
    "qk_rope_head_dim": ("qk rope dim (d_r)", "auto",
                         "per-head RoPE part, even; auto: d_k/2 rounded to even"),
    "v_head_dim": ("v head dim (d_v)", "auto", "per-head value width; auto: d_k"),
}
MASK_FIELDS = {
    "window": ("Window (W)", "off", "sliding window: with causal each query sees its last W keys"),
    "stride": ("Stride (K)", "off", "keep only keys whose distance from the query is a multiple of K"),
    "global_tokens": ("Global tokens", "0", "the first N tokens see and are seen by every token"),
}


def kind_changes(kind: str, cfg: MHAConfig) -> dict[str, Any]:
    """The edit that makes ``cfg`` the chosen kind of attention."""
    if kind == "MLA":
        return {"mla": True, "n_kv_heads": None}
    cleared = {"mla": False, **{name: None for name in MLA_FIELDS}}
    if kind == "MHA":
        return {**cleared, "n_kv_heads": None}
    if kind == "MQA":
        return {**cleared, "n_kv_heads": 1}
    return {**cleared, "n_kv_heads": gqa_default(cfg.H, cfg.Hkv)}


def fix_text(suggestion: dict[str, Any]) -> str:
    """{'mla': True} -> 'turn latent attention on'; {'window': None} -> 'clear window'."""
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
    box = QSpinBox()
    box.setRange(0, CAPS.get(name, 1 << 20))
    box.setSpecialValueText(special)  # 0 shows as auto / none / off
    box.setGroupSeparatorShown(True)
    box.setKeyboardTracking(False)  # an edit when the number is complete, not per digit
    box.setObjectName(f"variant_{name}")
    box.setAccessibleName(name)
    box.setToolTip(tip)
    return box


class VariantFields(QWidget):
    """Attention kind, MLA sizes, mask and positions for a ``Controller``.

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
        self.kind_box.setToolTip("MHA, GQA and MQA follow the key/value heads; MLA caches one latent")
        self.positions_box = QComboBox(objectName="variant_positions")
        self.positions_box.addItems(list(POSITION_KINDS))
        self.positions_box.setAccessibleName("positions")
        self.positions_box.setToolTip("none; sinusoidal or learned (added to X); rope (turns Q and K)")
        self.spins = {name: _spin(name, special, tip)
                      for name, (_, special, tip) in {**SIZE_FIELDS, **MASK_FIELDS}.items()}
        self.derived = QLabel(objectName="variant_derived")  # MLA's sizes in effect, and its cache
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
        controller.config_changed.connect(lambda _cfg: self.refresh())
        controller.validation_changed.connect(self.show_error)
        self.refresh()

    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        top = nested(outer, QFormLayout())
        top.addRow("Attention", self.kind_box)
        top.addRow("Positions", self.positions_box)
        self.mla_group = QGroupBox("Latent attention (MLA)", objectName="variant_mla")
        form = QFormLayout(self.mla_group)
        for name, (label, _, _) in SIZE_FIELDS.items():
            form.addRow(label, self.spins[name])
        form.addRow(self.derived)
        outer.addWidget(self.mla_group)
        mask = QGroupBox("Mask beyond causal", objectName="variant_mask")
        form = QFormLayout(mask)
        for name, (label, _, _) in MASK_FIELDS.items():
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
            for name, box in self.spins.items():
                value = getattr(cfg, name)
                box.setValue(0 if value is None else value)
                box.setEnabled(cfg.mla or name not in SIZE_FIELDS)
            self.mla_group.setVisible(cfg.mla)
            if cfg.mla:
                m = mla_dims(cfg)
                self.derived.setText(
                    f"in effect: r_kv {m.kv_lora_rank}, r_q {m.q_lora_rank or 'none'}, d_n {m.nope}, "
                    f"d_r {m.rope}, d_v {m.v}; cached per token: {m.kv_lora_rank} + {m.rope} = "
                    f"{m.cached_width} numbers")
        finally:
            self._syncing = False
        if self.controller.error is None:
            self._pending = {}
            self.show_error(None)

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
