"""The controls of the configuration form, one per config field: the preset, the width and
heads, the segmented choice of key/value head sharing with its count, the input's batch,
length, sentence and cross-attention, the causal mask and its alignment, bias, number
format, device and seed; each with its range (the config's caps), its name and hover for a
screen reader, and its size policy, then gathered into the FieldBox that holds a field's
controls and explains its errors. A mixin of ControlsPanel, which lays the boxes out as a
form and turns what is typed into edits.
"""

from __future__ import annotations

from PySide6.QtWidgets import QButtonGroup, QCheckBox, QComboBox, QLabel, QSizePolicy, QToolButton

from mha_explorer.core.config import ALIGNMENTS, CAPS, DEVICES, DTYPES
from mha_explorer.qt.panels.config_fields import (
    KV_MODES,
    KV_TIPS,
    SEED_MAX,
    FieldBox,
    describe,
    preset_combo,
    sentence_field,
    spin,
)
from mha_explorer.qt.shell.projector_style import grows_with_text


class ConfigControls:
    """Builds the panel's controls as attributes (``preset_combo``, ``d_model_spin``, ...,
    ``seed_spin``), the key/value buttons and their group, and the field boxes."""

    def _build_architecture(self) -> None:
        """Preset, width, heads and the key/value head sharing."""
        self.preset_combo = preset_combo()

        # minimum 0: a typed 0 reaches the config, which explains it (a refused 0 did not)
        self.d_model_spin = spin("d_model", "d_model (D): the width of every token vector",
                                 CAPS["d_model"], minimum=0)
        self.heads_spin = spin("heads", "Number of attention heads (H); d_model must divide "
                               "evenly into them", CAPS["n_heads"], minimum=0)
        self.d_k_label = describe(QLabel(), "d_k", "d_k = D / H: the width of one head")

        self.kv_buttons: dict[str, QToolButton] = {}
        self.kv_group = QButtonGroup(self)
        self.kv_group.setExclusive(True)
        for i, mode in enumerate(KV_MODES):  # one segmented choice
            button = QToolButton()
            button.setText(mode)
            button.setCheckable(True)
            button.setObjectName(f"kv_mode_{mode}")
            button.setProperty("segment", True)  # styled as one choice by the theme
            describe(button, f"{mode} key/value heads", KV_TIPS[mode])
            self.kv_group.addButton(button, i)
            self.kv_buttons[mode] = button
        self.kv_spin = spin("kv_heads", "Key/value heads (Hkv) for GQA; must divide the "
                            "number of heads", CAPS["n_kv_heads"])
        self.kv_count_label = QLabel("Hkv")
        self.kv_count_label.setBuddy(self.kv_spin)
        self.kv_note = describe(QLabel(wordWrap=True), "K/V sharing",
                                "How many query heads read each key/value head")

    def _build_input(self) -> None:
        """The input: batch, length or sentence, cross-attention, the mask."""
        self.batch_spin = spin("batch", "Batch size (B): sequences processed together",
                               CAPS["batch"])
        self.seq_spin = spin("seq", "Sequence length (T): query tokens per sequence; "
                             "typing a length drops the sentence", CAPS["seq"])
        self.sentence_edit, self.sentence_note = sentence_field()
        self.cross_check = describe(grows_with_text(QCheckBox("cross-attention")), "Cross-attention",
                                    "Keys and values come from a second sequence of length S")
        self.cross_check.setObjectName("cross")
        self.kv_seq_spin = spin("kv_seq", "Key/value length (S) for cross-attention",
                                CAPS["kv_seq"])

        self.causal_check = describe(grows_with_text(QCheckBox("causal")), "Causal mask",
                                     "Each query sees only keys at or before its position")
        self.causal_check.setObjectName("causal")
        self.alignment_combo = describe(QComboBox(), "Causal alignment",
                                        "Which corner the causal mask starts from; only "
                                        "matters when T ≠ S")
        self.alignment_combo.setObjectName("causal_alignment")
        self.alignment_combo.addItems(list(ALIGNMENTS))

    def _build_numbers(self) -> None:
        """Bias, number format, device and seed; then every field's size policy."""
        self.bias_check = describe(grows_with_text(QCheckBox("bias")), "Bias",
                                   "Add a learned bias to the Q, K, V and output projections")
        self.bias_check.setObjectName("bias")
        self.dtype_combo = describe(QComboBox(), "dtype", "Number format: bytes per element "
                                    "and the precision of the results")
        self.dtype_combo.setObjectName("dtype")
        self.dtype_combo.addItems(list(DTYPES))
        self.device_combo = describe(QComboBox(), "Device", "Where torch computes; auto picks "
                                     "CUDA, then MPS, then the CPU")
        self.device_combo.setObjectName("device")
        self.device_combo.addItems(list(DEVICES))
        self.seed_spin = spin("seed", "Random seed for the weights and the input", SEED_MAX, 0)

        for field in (self.d_model_spin, self.heads_spin, self.kv_spin, self.batch_spin,
                      self.seq_spin, self.kv_seq_spin, self.seed_spin, self.preset_combo,
                      self.alignment_combo, self.dtype_combo, self.device_combo):
            field.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        for check in (self.cross_check, self.causal_check, self.bias_check):
            check.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)

    def _make_boxes(self) -> dict[str, FieldBox]:
        return {
            "preset": FieldBox("preset", [self.preset_combo]),
            "d_model": FieldBox("d_model", [self.d_model_spin]),
            "n_heads": FieldBox("n_heads", [self.heads_spin, self.d_k_label]),
            "n_kv_heads": FieldBox("n_kv_heads", list(self.kv_buttons.values()),
                                   [self.kv_count_label, self.kv_spin], [self.kv_note]),
            "batch": FieldBox("batch", [self.batch_spin]),
            "seq": FieldBox("seq", [self.seq_spin]),
            "sentence": FieldBox("tokens", [self.sentence_edit], [self.sentence_note]),
            "kv_seq": FieldBox("kv_seq", [self.cross_check], [self.kv_seq_spin]),
            "causal": FieldBox("causal", [self.causal_check, self.alignment_combo]),
            "bias": FieldBox("bias", [self.bias_check]),
            "dtype": FieldBox("dtype", [self.dtype_combo]),
            "device": FieldBox("device", [self.device_combo]),
            "seed": FieldBox("seed", [self.seed_spin]),
            "general": FieldBox("general"),
        }
