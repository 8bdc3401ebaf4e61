"""The parameter arithmetic and the memory it implies, as formula = numbers = count.

Every number comes from ``controller.plan`` (params and memory); this panel only
lays it out. It is written for the back row: large type, counts right-aligned.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QSizePolicy, QWidget

from mha_explorer.core.plan.build import Plan
from mha_explorer.core.plan.kv_cache import kv_formula
from mha_explorer.core.units import format_bytes, format_count
from mha_explorer.qt.controller import Controller

MAX_TERMS = 8  # four weights and, with bias, four bias vectors
TYPE_SCALE = 1.15  # the panel reads a little larger than the window's type
TOTAL_SCALE = 1.35


def _label(name: str, tip: str = "", align_right: bool = False) -> QLabel:
    label = QLabel()
    label.setObjectName(name)
    label.setAccessibleName(name.replace("_", " "))
    label.setToolTip(tip)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if align_right:
        label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return label


def _rule() -> QFrame:
    line = QFrame()
    line.setFrameShape(QFrame.Shape.HLine)
    line.setFrameShadow(QFrame.Shadow.Plain)
    line.setProperty("role", "rule")  # coloured by the theme
    return line


def count_text(n: int) -> str:
    return f"{n:,}"


def unbroken(text: str) -> str:
    """Non-breaking spaces: a formula wraps as a whole, never inside itself."""
    return text.replace(" ", "\u00a0")


class ParamsPanel(QWidget):
    """Weights, total, the one-head and full-MHA comparisons, KV cache and attention memory."""

    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("params_panel")
        self._controller = controller
        # no scroll area of its own: the page it is on scrolls (one inside another left two
        # rows of each in sight at 1280×720); the formulas wrap to the width, so the counts
        # on the right are never cut off
        grid = QGridLayout(self)
        grid.setContentsMargins(10, 8, 10, 8)
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(4)
        grid.setColumnStretch(1, 1)
        self._grid = grid
        self._headers: list[QLabel] = []
        self._totals: list[QLabel] = []
        row = self._build_parameters(0)
        row = self._build_memory(row)
        grid.setRowStretch(row, 1)

        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self._apply_type()
        # in a turn of its own: two dozen labels re-measured and laid out again
        controller.later.on(controller.config_changed, self._show)
        self._show()

    def _build_parameters(self, row: int) -> int:
        """The weights one by one, the total, and the comparisons; returns the next row."""
        grid = self._grid
        row = self._header("Parameters", row)
        # (name, "formula = numbers", count) per weight; the middle wraps only at "="
        self.term_labels: list[tuple[QLabel, QLabel, QLabel]] = []
        for i in range(MAX_TERMS):
            labels = (_label(f"term_{i}_name"),
                      _label(f"term_{i}_formula", "in symbols = with this configuration's numbers"),
                      _label(f"term_{i}_count", "parameters", align_right=True))
            labels[1].setWordWrap(True)
            for col, label in enumerate(labels):
                grid.addWidget(label, row, col)
            self.term_labels.append(labels)
            row += 1
        grid.addWidget(_rule(), row, 0, 1, 3)
        row += 1

        total_name = _label("total_name")
        total_name.setText("total")
        self.total_formula_label = _label("total_formula", "the total in symbols")
        self.total_formula_label.setWordWrap(True)
        self.total_compact_label = _label("total_compact", "the total, rounded", align_right=True)
        self.total_label = _label("total", "all parameters of the layer", align_right=True)
        grid.addWidget(total_name, row, 0)
        grid.addWidget(self.total_formula_label, row, 1)
        grid.addWidget(self.total_label, row, 2)
        row += 1
        grid.addWidget(self.total_compact_label, row, 1, 1, 2)
        self._totals += [total_name, self.total_label]
        row += 1

        _, self.one_head_note, self.one_head_label, row = self._line(
            "one head", "one_head",
            "the same layer (same D) with a single head of width D: the head count does not "
            "change the weights", row)
        self.mha_title, self.mha_note, self.mha_label, row = self._line(
            "full MHA", "mha", "the same layer with a key/value head per query head",
            row)
        self.saving_title, self.saving_note, self.saving_label, row = self._line(
            "saving", "saving", "parameters saved by sharing key/value heads", row)
        for label in (self.saving_title, self.saving_note, self.saving_label):
            label.setProperty("tone", "saving")  # the theme colours it, in H's green
        return row

    def _build_memory(self, row: int) -> int:
        """KV cache, the attention matrix and the weights in bytes; returns the next row."""
        row = self._header("Memory", row)
        _, self.kv_token_note, self.kv_token_label, row = self._line(
            "KV cache / token", "kv_token", "what one layer caches per token (K and V, or a latent)", row)
        _, self.kv_sequence_note, self.kv_sequence_label, row = self._line(
            "KV cache / sequence", "kv_sequence", "× the tokens a sequence keeps: S, or a window's", row)
        _, self.kv_batch_note, self.kv_batch_label, row = self._line(
            "KV cache / batch", "kv_batch", "× S tokens × B sequences", row)
        attention_title, self.attention_note, self.attention_label, row = self._line(
            "attention matrix", "attention",
            "one T × S matrix per head and sequence: the term that grows quadratically", row)
        for label in (attention_title, self.attention_note, self.attention_label):
            label.setProperty("tone", "quadratic")  # in T's vermillion
        _, self.weights_note, self.weights_label, row = self._line(
            "weights", "weights", "all parameters at this dtype", row)
        return row

    # construction helpers ------------------------------------------------------------
    def _header(self, text: str, row: int) -> int:
        label = QLabel(text)
        self._headers.append(label)
        self._grid.addWidget(label, row, 0, 1, 3)
        return row + 1

    def _line(self, name: str, key: str, tip: str, row: int) -> tuple[QLabel, QLabel, QLabel, int]:
        """A row: its name, a note (formula with numbers) and the value on the right."""
        title = _label(f"{key}_name", tip)
        title.setText(name)
        title.setWordWrap(True)
        note = _label(f"{key}_note", tip)
        note.setWordWrap(True)
        value = _label(key, tip, align_right=True)
        self._grid.addWidget(title, row, 0)
        self._grid.addWidget(note, row, 1)
        self._grid.addWidget(value, row, 2)
        return title, note, value, row + 1

    def _apply_type(self) -> None:
        """Scale from the inherited font, so presentation mode still enlarges the panel."""
        base = self.font().pointSizeF()
        for label in self.findChildren(QLabel):
            font = QFont(self.font())
            font.setPointSizeF(base * TYPE_SCALE)
            label.setFont(font)
        for label in self._headers + self._totals:
            font = QFont(self.font())
            font.setPointSizeF(base * (TOTAL_SCALE if label in self._totals else TYPE_SCALE))
            font.setBold(True)
            label.setFont(font)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._apply_type()

    # rendering -------------------------------------------------------------------------
    def _show(self, *_) -> None:
        plan: Plan = self._controller.plan
        cfg, params, memory = plan.config, plan.params, plan.memory
        for i, labels in enumerate(self.term_labels):
            shown = i < len(params.terms)
            for label in labels:
                label.setVisible(shown)
            if shown:
                term = params.terms[i]
                labels[0].setText(term.name)
                labels[1].setText(f"{unbroken(term.formula)} = {unbroken(term.numbers)}")
                labels[2].setText(count_text(term.count))
        self.total_formula_label.setText(params.total_formula)
        self.total_compact_label.setText(f"≈ {format_count(params.total)} parameters")
        self.total_label.setText(count_text(params.total))

        self.one_head_label.setText(count_text(params.single_head_total))
        if cfg.Hkv == cfg.H:
            same = params.single_head_total == params.total
            self.one_head_note.setText(
                f"the same: {cfg.H} head{'s' if cfg.H != 1 else ''} of {cfg.d_k} cost what 1 head of "
                f"{cfg.d_model} costs"
                if same else f"{params.total - params.single_head_total:+,} for {cfg.H} heads")
        else:
            self.one_head_note.setText(f"{params.single_head_total - params.total:,} more than "
                                       f"this {cfg.variant}: one head of D has full-width K, V")
        shared = cfg.Hkv != cfg.H
        for label in (self.mha_title, self.mha_note, self.mha_label,
                      self.saving_title, self.saving_note, self.saving_label):
            label.setVisible(shared)
        if shared:
            saved = params.mha_total - params.total
            self.mha_label.setText(count_text(params.mha_total))
            self.mha_note.setText(f"K, V are D × D instead of D × {cfg.kv_dim:,}")
            self.saving_label.setText(f"{saved:,}")
            self.saving_note.setText(
                f"{cfg.variant}: {saved / params.mha_total:.1%} fewer parameters; the KV cache "
                f"is {cfg.group_size}× smaller")

        e = cfg.elem_bytes
        kv = kv_formula(cfg)  # the one written-out cache formula, as shapes prints it
        self.kv_token_note.setText(f"{unbroken(kv.token_symbols)} = {unbroken(kv.token_numbers)} B")
        self.kv_token_label.setText(format_bytes(memory.kv_cache_per_token))
        self.kv_sequence_note.setText(f"× {unbroken(kv.tokens_symbols)} = × {unbroken(kv.tokens_numbers)}")
        self.kv_sequence_label.setText(format_bytes(memory.kv_cache_per_sequence))
        self.kv_batch_note.setText(f"× B = × {cfg.batch:,}")
        self.kv_batch_label.setText(format_bytes(memory.kv_cache_batch))
        self.attention_note.setText(
            f"B·H·T·S × {e} B = {cfg.batch:,}·{cfg.H:,}·{cfg.T:,}·{cfg.S:,} × {e}"
            "  (∝ T·S)")
        self.attention_label.setText(format_bytes(memory.attention_matrix))
        self.weights_note.setText(f"{params.total:,} × {e} B ({cfg.dtype})")
        self.weights_label.setText(format_bytes(memory.weights))
