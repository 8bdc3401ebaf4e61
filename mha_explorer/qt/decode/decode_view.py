"""Decode mode: the KV cache growing step by step (no torch here).

Fed plain data: the rows of ``core.decode_plan.decode_steps`` as dicts, and when
computed, each step's score rows and softmax as numpy ([H, n, keys], from
``core.decode_engine``), and ``core.decode_plan.cache_growth`` for the caches of
other variants side by side. Stepped with ``next_step`` / ``previous_step`` like
the stages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

from mha_explorer.core.display.colors import dim_color
from mha_explorer.core.units import format_bytes, format_count
from mha_explorer.qt.decode.paint import hatched, ink, normalised, ramp, size_bars, text
from mha_explorer.qt.decode.stepping import SteppedView

if TYPE_CHECKING:
    import numpy as np  # the data's type; numpy itself loads with the first data (not at start-up)

MAX_DRAWN_KV_HEADS = 8  # more cache rows than this are summarised in a line
LABEL_PX = 150  # the left column that names the rows; the token axis starts after it
GROWTH_COLORS = ("#0072B2", "#56B4E9", "#009E73", "#CC79A7", "#E69F00")


class DecodeView(SteppedView):
    """The cache [B, Hkv, S_t, d_k] as token cells per key/value head, the new
    token's 1 × S_t score row and its softmax, the step's cost, and the caches of
    other variants growing at their own rates."""

    step_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._indexs: list[Mapping] = []
        self._scores: Sequence[np.ndarray] | None = None
        self._weights: Sequence[np.ndarray] | None = None
        self._growth: Mapping[str, Sequence[int]] = {}
        self._layers: int | None = None
        self._head = 0
        self._index = 0
        self.setAccessibleName("Decode: the KV cache step by step")

    # data and stepping -------------------------------------------------
    def set_data(self, steps: Sequence[Mapping], *, scores: Sequence[np.ndarray] | None = None,
                 weights: Sequence[np.ndarray] | None = None,
                 growth: Mapping[str, Sequence[int]] | None = None, layers: int | None = None) -> None:
        """``steps``: DecodeStep.to_dict() rows; ``scores``/``weights``: one [H, n, keys]
        array per step (or None); ``growth``: label -> cache bytes per step."""
        if scores is not None and len(scores) != len(steps):
            raise ValueError("one score array per step is needed")
        self._indexs = list(steps)
        self._scores, self._weights = scores, weights
        self._growth = dict(growth or {})
        self._layers = layers
        self._index = min(self._index, max(0, len(self._indexs) - 1))
        self._changed()

    def set_head(self, head: int) -> None:
        self._head = max(0, head)
        self.update()

    @property
    def step_count(self) -> int:
        return len(self._indexs)

    def step(self) -> int:
        return self._index

    def item_count(self) -> int:
        return len(self._indexs)

    def set_step(self, index: int) -> None:
        self.go_to(index)

    def next_step(self) -> bool:
        """Move one step on; False at the last step."""
        return self.move(1)

    def previous_step(self) -> bool:
        return self.move(-1)

    def _announce(self, index: int) -> None:
        self.step_changed.emit(index)

    # what is shown -----------------------------------------------------
    def score_row(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The shown head's last new row at this step: (scores, weights), each [keys]."""
        if self._scores is None or self._weights is None or not self._indexs:
            return None
        s, w = self._scores[self._index], self._weights[self._index]
        h = min(self._head, s.shape[0] - 1)
        return s[h, -1], w[h, -1]

    def summary(self) -> str:
        if not self._indexs:
            return "no decode steps"
        s = self._indexs[self._index]
        what = (f"step 0: the prompt pass of {s['new_tokens']} tokens" if s["step"] == 0 else
                f"step {s['step']}: one new token, position {s['seen_tokens'] - 1}")
        shape = "[" + ", ".join(f"{n:,}" for n in s["cache_shape"]) + "]"
        lines = [what, f"cache {shape}: {format_bytes(s['cache_bytes'])} per layer"
                 + (f", {format_bytes(s['model_cache_bytes'])} for the model"
                    if s.get("model_cache_bytes") is not None else ""),
                 f"{format_count(s['flops'])} FLOPs, {format_bytes(s['bytes'])} moved "
                 f"({s['flops'] / max(1, s['bytes']):.2f} FLOPs per byte)"]
        if s["cache_tokens"] < s["seen_tokens"]:
            lines.append(f"rolling cache: the oldest {s['seen_tokens'] - s['cache_tokens']} "
                         "tokens have left the window")
        return "\n".join(lines)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(900, 560)

    # painting ----------------------------------------------------------
    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        pen = ink(self)
        p.setPen(pen)
        if not self._indexs:
            text(p, QRectF(self.rect()), "no decode steps", Qt.AlignmentFlag.AlignCenter)
            return
        r = QRectF(self.rect()).adjusted(12, 8, -12, -8)
        line_h = p.fontMetrics().height() * 1.3
        lines = self.summary().splitlines()
        for i, line in enumerate(lines):
            text(p, QRectF(r.left(), r.top() + i * line_h, r.width(), line_h), line)
        top = r.top() + len(lines) * line_h + 6
        rest = r.bottom() - top
        cache_h, row_h = rest * 0.34, rest * 0.3
        self._paint_cache(p, QRectF(r.left(), top, r.width(), cache_h))
        row_top = top + cache_h + 8
        self._paint_score_row(p, QRectF(r.left(), row_top, r.width(), row_h))
        growth_top = row_top + row_h + 8
        self._paint_growth(p, QRectF(r.left(), growth_top, r.width(), r.bottom() - growth_top))
        p.end()

    def _paint_cache(self, p: QPainter, rect: QRectF) -> None:
        s = self._indexs[self._index]
        seen, kept, new = s["seen_tokens"], s["cache_tokens"], s["new_tokens"]
        rows = s["cache_shape"][1] if len(s["cache_shape"]) == 4 else 1  # Hkv, or one latent row
        fits = int(rect.height() // p.fontMetrics().height()) - 1  # rows whose labels stay apart
        drawn = min(rows, MAX_DRAWN_KV_HEADS, max(1, fits))
        last_seen = self._indexs[-1]["seen_tokens"]  # the axis fits the whole run
        cell = (rect.width() - LABEL_PX) / max(1, last_seen)
        h = min(28.0, rect.height() / (drawn + 1))
        label = "K/V head" if len(s["cache_shape"]) == 4 else "latent"
        p.setPen(ink(self))
        for k in range(drawn):
            text(p, QRectF(rect.left(), rect.top() + k * h, LABEL_PX - 8, h), f"{label} {k}",
                 Qt.AlignmentFlag.AlignRight)
        rect = rect.adjusted(LABEL_PX, 0, 0, 0)
        old, fresh = QColor(dim_color("S")), QColor(dim_color("T"))
        for k in range(drawn):
            y = rect.top() + k * h
            for start, stop, color in ((0, seen - kept, None), (seen - kept, seen - new, old),
                                       (seen - new, seen, fresh)):
                if stop <= start:
                    continue
                cells = QRectF(rect.left() + start * cell, y + 1, (stop - start) * cell, h - 2)
                if color is None:
                    hatched(p, cells, ink(self))  # evicted by the window
                else:
                    p.fillRect(cells, color)
            if cell >= 6:  # token borders when they are wide enough to see
                p.setPen(QColor(0, 0, 0, 60))
                for j in range(seen - kept, seen + 1):
                    p.drawLine(int(rect.left() + j * cell), int(y + 1), int(rect.left() + j * cell),
                               int(y + h - 1))
        p.setPen(ink(self))
        note = (f"{rows} cache rows, {drawn} drawn" if rows > drawn else
                f"{rows} key/value head{'s' if rows != 1 else ''} (K and V alike)")
        text(p, QRectF(rect.left(), rect.top() + drawn * h, rect.width(), h),
             f"{note}; orange: cached, red: new this step, hatched: left the window")

    def _paint_score_row(self, p: QPainter, rect: QRectF) -> None:
        row = self.score_row()
        if row is None:
            text(p, rect, "score row: computed rows not loaded")
            return
        import numpy as np  # loaded with the rows; not at start-up

        scores, weights = row
        n = len(scores)
        half = rect.height() / 2
        p.setPen(ink(self))
        text(p, QRectF(rect.left(), rect.top(), LABEL_PX - 8, half),
             f"head {self._head}: 1 × {n} scores", Qt.AlignmentFlag.AlignRight)
        text(p, QRectF(rect.left(), rect.top() + half, LABEL_PX - 8, half), "its softmax",
             Qt.AlignmentFlag.AlignRight)
        rect = rect.adjusted(LABEL_PX, 0, 0, 0)
        last_seen = self._indexs[-1]["seen_tokens"]
        cell = rect.width() / max(1, last_seen)
        s = self._indexs[self._index]
        x0 = rect.left() + (s["seen_tokens"] - n) * cell  # the row's keys end at the newest token
        for j, t in enumerate(normalised(scores)):
            cells = QRectF(x0 + j * cell, rect.top(), max(cell, 1.0), half - 2)
            if np.isnan(t):
                hatched(p, cells, ink(self))
            else:
                p.fillRect(cells, ramp(t))
        top = float(np.max(weights)) if len(weights) else 1.0
        for j, w in enumerate(weights):
            bar = (half - 4) * (float(w) / top if top > 0 else 0.0)
            p.fillRect(QRectF(x0 + j * cell, rect.bottom() - bar, max(cell - 1, 1.0), bar),
                       QColor(dim_color("H")))

    def _paint_growth(self, p: QPainter, rect: QRectF) -> None:
        if not self._growth:
            return
        rows = [(label, int(values[min(self._index, len(values) - 1)]),
                 QColor(GROWTH_COLORS[i % len(GROWTH_COLORS)]))
                for i, (label, values) in enumerate(self._growth.items())]
        size_bars(p, rect, rows, ink(self))
