"""A trained decoder writing: greedy generation with its real KV cache, step by step.

Shown in the Generation dock while the weights are a trained decoder's. The
text grows token by token; beside it, every layer's cache after the step (local layers stop
at their window, global ones keep growing) and the new token's attention row in each head of
the layer on screen. The numbers come from core.display.decoder on the jobs thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.display.colors import WEIGHTS_COLORMAP, scale_words
from mha_explorer.core.models.catalog import model_named
from mha_explorer.core.units import format_bytes
from mha_explorer.qt.colormaps import lookup_table
from mha_explorer.qt.job_controls import JobControls
from mha_explorer.qt.jobs import JobDone, JobFailed, JobKind
from mha_explorer.qt.nesting import nested

if TYPE_CHECKING:
    from mha_explorer.core.display.decoder import DecoderGeneration
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

LOCAL_TINT, GLOBAL_TINT = QColor("#0072B2"), QColor("#D55E00")  # Okabe-Ito blue / vermillion


def _generate(model_key, text, steps, layer, *, cancel, progress):
    from mha_explorer.core.display.decoder import generate  # torch, on the jobs thread

    return generate(model_key, text, steps, layer, cancel=cancel, progress=progress)


def prompt_of(cfg) -> tuple[str, str, int] | None:
    """(model, prompt text, layer) a trained decoder writes from for ``cfg``; None for random
    weights or an encoder."""
    model = model_named(cfg.weights)
    if model is None or not model.causal or not cfg.tokens:
        return None
    from mha_explorer.core.models import runtime

    return model.key, " ".join(runtime.words_of(cfg.tokens, (model,)) or ()), cfg.layer


class DecoderView(QWidget):
    """Paints one step of a ``DecoderGeneration``: the text, the caches, the attention row.
    Public: ``set_generation``, ``set_step``, ``step`` (1-based; 0 before any), ``step_count``."""

    step_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("decoder_view")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumHeight(120)
        self._gen: DecoderGeneration | None = None
        self._step = 0

    @property
    def step_count(self) -> int:
        return len(self._gen.steps) if self._gen else 0

    def step(self) -> int:
        return self._step

    def set_generation(self, gen: DecoderGeneration | None) -> None:
        self._gen = gen
        self.set_step(self.step_count)

    def set_step(self, step: int) -> None:
        step = max(min(int(step), self.step_count), 1 if self.step_count else 0)
        if step != self._step:
            self._step = step
            self.step_changed.emit(step)
        self.update()

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt's name
        moves = {Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1, Qt.Key.Key_Home: -10**6, Qt.Key.Key_End: 10**6}
        if event.key() in moves:
            self.set_step(self._step + moves[event.key()])
        else:
            super().keyPressEvent(event)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        ink = self.palette().color(QPalette.ColorRole.WindowText)
        p.setPen(ink)
        rect = QRectF(self.rect()).adjusted(8, 6, -8, -6)
        if self._gen is None or not self._step:
            p.drawText(rect, Qt.AlignmentFlag.AlignCenter,
                       "Press Generate: the model writes one token per step")
            return
        s = self._gen.steps[self._step - 1]
        line = p.fontMetrics().lineSpacing()
        text_box = QRectF(rect.left(), rect.top(), rect.width(), 3 * line)
        shown = "".join(step.text for step in self._gen.steps[: self._step])
        prompt = self._gen.text[: len(self._gen.text) - len("".join(x.text for x in self._gen.steps))]
        p.drawText(text_box, Qt.TextFlag.TextWordWrap,
                   f"{prompt}[{shown}]   step {self._step}: {s.text!r}, "
                   f"{1000 * s.seconds:.0f} ms, whole cache {format_bytes(s.model_cache_bytes)}")
        top = text_box.bottom() + 4
        half = (rect.bottom() - top) / 2
        self._paint_caches(p, QRectF(rect.left(), top, rect.width(), half - 4), s, ink)
        self._paint_row(p, QRectF(rect.left(), top + half, rect.width(), half), s, ink)

    def _paint_caches(self, p: QPainter, rect: QRectF, s, ink: QColor) -> None:
        """One bar per layer: the tokens its cache holds after the step."""
        gen = self._gen
        layers = len(s.cache_tokens)
        most = max(max(s.cache_tokens), 1)  # the window's line shows once a cache reaches it
        label_h = p.fontMetrics().lineSpacing()
        bars = QRectF(rect.left(), rect.top() + label_h, rect.width(), rect.height() - 2 * label_h)
        reached = "" if not gen.window or max(s.cache_tokens) >= gen.window else \
            f" (window {gen.window}: not reached by these {max(s.cache_tokens)} tokens)"
        p.drawText(QRectF(rect.left(), rect.top(), rect.width(), label_h), Qt.AlignmentFlag.AlignLeft,
                   "cache per layer (tokens): local layers (blue) stop at their window, global (orange) "
                   "keep growing" + reached)
        width = bars.width() / layers
        for i, tokens in enumerate(s.cache_tokens):
            h = bars.height() * tokens / most
            color = LOCAL_TINT if gen.layer_kinds[i] == "local" else GLOBAL_TINT
            p.fillRect(QRectF(bars.left() + i * width + 1, bars.bottom() - h, width - 2, h), color)
            p.setPen(ink)
            p.drawText(QRectF(bars.left() + i * width, bars.bottom(), width, label_h),
                       Qt.AlignmentFlag.AlignCenter, str(i + 1))
        if gen.window and gen.window <= most:  # the window's line
            y = bars.bottom() - bars.height() * gen.window / most
            p.setPen(ink)
            p.drawLine(int(bars.left()), int(y), int(bars.right()), int(y))

    def row_caption(self, s) -> str:
        """The words over step ``s``'s attention rows, with what their colours mean: the rows
        are coloured from 0 to the step's largest weight."""
        import numpy as np  # with the first answer, not at start-up

        weights = np.asarray(s.weights)  # [H, S]
        keys = weights.shape[-1]
        top = max(float(weights.max()) if weights.size else 0.0, 1e-9)
        return (f"layer {self._gen.layer}: the new token's attention over its {keys} keys, a row "
                f"per head; colour {scale_words(WEIGHTS_COLORMAP, 0, top)} (the step's largest "
                "weight)")

    def _paint_row(self, p: QPainter, rect: QRectF, s, ink: QColor) -> None:
        """The new token's attention over the cached keys, a row per head of the shown layer."""
        import numpy as np  # with the first answer, not at start-up

        weights = np.asarray(s.weights)  # [H, S]
        top = max(float(weights.max()), 1e-9)  # the colours run from 0 to the step's largest
        caption = self.row_caption(s)
        wrap = int(Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap)  # whole, never cut
        label_h = p.boundingRect(rect, wrap, caption).height()
        p.drawText(QRectF(rect.left(), rect.top(), rect.width(), label_h), wrap, caption)
        rows = QRectF(rect.left(), rect.top() + label_h, rect.width(), rect.height() - label_h)
        heads, keys = weights.shape
        cell_w, cell_h = rows.width() / max(keys, 1), rows.height() / max(heads, 1)
        for h in range(heads):
            for j in range(keys):
                color = lookup_table(WEIGHTS_COLORMAP)[int(round(255 * weights[h, j] / top))]
                cell = QRectF(rows.left() + j * cell_w, rows.top() + h * cell_h, cell_w + 0.5, cell_h - 1)
                p.fillRect(cell, QColor(int(color[0]), int(color[1]), int(color[2])))


class DecoderPanel(QWidget):
    """Steps and Generate / Cancel over a ``DecoderView``; asks the jobs thread to generate."""

    def __init__(self, controller: Controller, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("decoder_panel")
        self._controller, self._jobs = controller, jobs
        self.view = DecoderView()
        self.steps_spin = QSpinBox(objectName="decoder_steps", minimum=1, maximum=256, value=10)
        self.steps_spin.setAccessibleName("tokens to generate")
        self.steps_spin.setPrefix("generate ")
        self.steps_spin.setSuffix(" tokens")
        self.generate_button = QPushButton("Generate", objectName="decoder_generate")
        self.generate_button.setToolTip("Greedy generation after the sentence, with the model's "
                                        "real KV cache")
        self.cancel_button = QPushButton("Cancel", objectName="decoder_cancel")
        self.back_button = QPushButton("◀ step", objectName="decoder_back")
        self.next_button = QPushButton("step ▶", objectName="decoder_next")
        self.progress = QProgressBar(objectName="decoder_progress")
        self.note = QLabel(objectName="decoder_note", wordWrap=True)
        for widget, name, tip in (
                (self.steps_spin, "Tokens to generate",
                 "How many tokens the model writes after the sentence"),
                (self.generate_button, "Generate", self.generate_button.toolTip()),
                (self.cancel_button, "Cancel generation",
                 "Stop generating; the last finished result stays on screen"),
                (self.back_button, "Previous step", "Show the step before"),
                (self.next_button, "Next step", "Show the step after")):
            widget.setAccessibleName(name)
            widget.setToolTip(tip)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        row = nested(layout, QHBoxLayout())
        for widget in (self.steps_spin, self.generate_button, self.cancel_button, self.back_button,
                       self.next_button, self.progress):
            row.addWidget(widget)
        row.addStretch(1)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.note)
        self.generate_button.clicked.connect(self.generate)
        self.cancel_button.clicked.connect(self.cancel)
        self.back_button.clicked.connect(lambda: self.view.set_step(self.view.step() - 1))
        self.next_button.clicked.connect(lambda: self.view.set_step(self.view.step() + 1))
        self.controls = JobControls(jobs, JobKind.generate, self.generate_button, self.cancel_button,
                                    self.progress)
        self._for: tuple[str, str, int] | None = None  # (model, prompt, layer) of what is shown or asked
        self._seen = prompt_of(controller.config)  # what the config asks for, as last seen
        jobs.done.connect(self._on_done)
        jobs.failed.connect(self._on_failed)
        controller.config_changed.connect(self._on_config)

    def generate(self) -> None:
        cfg = self._controller.config
        wanted = prompt_of(cfg)
        if wanted is None:
            self.note.setText("Choose a trained decoder under Weights to watch it write.")
            return
        key, text, layer = self._for = wanted
        self.controls.started(self._jobs.submit(JobKind.generate, _generate, key, text,
                                                self.steps_spin.value(), layer, cancellable=True))
        self.note.setText(f"{model_named(key).name} is writing {self.steps_spin.value()} tokens…")

    def _on_config(self, cfg) -> None:
        """Another model, text or layer: what was written (or is being written) was another
        config's, so the view and its note go back to where a new window starts."""
        wanted = prompt_of(cfg)
        if wanted == self._seen:
            return
        self._seen = wanted
        if self._for is not None and self._for != wanted:
            self._for = None
            if not self.generate_button.isEnabled():  # still writing: its answer is not wanted
                self.controls.cancel()
            self.view.set_generation(None)
        if self._for is None:
            self.note.setText("")

    def cancel(self) -> None:
        self.controls.cancel()
        self.note.setText("Generation cancelled.")

    def _on_done(self, done: JobDone) -> None:
        if done.kind != JobKind.generate:
            return
        # loaded by the job that made the answer; at start-up it would bring numpy in
        from mha_explorer.core.display.decoder import DecoderGeneration

        if isinstance(done.result, DecoderGeneration):
            self.controls.finish()
            gen = done.result
            self.view.set_generation(gen)
            mean = 1000 * sum(s.seconds for s in gen.steps) / max(len(gen.steps), 1)
            self.note.setText(f"{len(gen.steps)} tokens, {mean:.0f} ms a step. Left/Right step through "
                              "them; each step reads every layer's cache to write one token.")

    def _on_failed(self, failed: JobFailed) -> None:
        if failed.kind == JobKind.generate:
            self.controls.finish()
            self.note.setText(f"Not generated: {failed.message}")
