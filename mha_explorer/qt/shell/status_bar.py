"""The status line: device, compute time, memory against the budget, progress, failures.

Failures arrive as messages and stay visible until the next good trace; nothing
here raises. The memory line is arithmetic on the config (core.memory), so it is
right even when the config is far too large to compute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QStatusBar,
    QWidget,
)

from mha_explorer.core.plan.memory import MemoryBudgetError, format_bytes
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.shell.elided_label import ElidedLabel
from mha_explorer.qt.shell.first_paint import FirstPaint
from mha_explorer.qt.shell.job_progress import JobProgressView

if TYPE_CHECKING:
    from mha_explorer.core.stages.trace import Trace

PROGRESS_DELAY_MS = 300  # quick runs finish before the bar would flicker into view
ERROR_TONE, NEUTRAL_TONE = "error", ""  # the theme's style sheet colours an error tone


def _set_tone(label: QLabel, tone: str) -> None:
    if label.property("tone") != tone:
        label.setProperty("tone", tone)
        label.style().unpolish(label)  # re-read the style sheet for the new tone
        label.style().polish(label)


def format_seconds(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


WHOLE = 1_000  # a label this many characters may shrink to: never cut


class StatusBarView(FirstPaint, QWidget):
    """Everything the status bar says; added to ``status_bar`` when one is given."""

    def __init__(self, controller: Controller, status_bar: QStatusBar | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("status_view")
        self._controller = controller
        self._running = False  # between compute_started and its outcome
        self._engine_ready = False  # torch is loaded on the jobs thread (engine_loaded came)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.setSpacing(14)

        self.message_label = self._label("status_message", "Messages from the computation", 24)
        self.message_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.message_label.setMinimumWidth(self.fontMetrics().averageCharWidth() * 24)
        # short of room, the memory line gives way first; the device and the time stay whole
        self.memory_label = self._label("memory_estimate",
                                        "Estimated peak memory of a computation against the "
                                        "memory budget", 12)
        self.device_label = self._label("device", "Where the last trace was computed", WHOLE)
        self.time_label = self._label("compute_time", "How long the last computation took", WHOLE)

        self.progress_bar = QProgressBar()
        self.progress_bar.setObjectName("compute_progress")
        self.progress_bar.setAccessibleName("Computation progress")
        self.progress_bar.setToolTip("Computing the trace on the worker thread")
        self.progress_bar.setRange(0, 100)
        self.progress_bar.setMaximumWidth(160)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancel_compute")
        self.cancel_button.setAccessibleName("Cancel computation")
        self.cancel_button.setToolTip("Stop this computation; the last result stays on screen")
        self.progress_bar.hide()
        self.cancel_button.hide()

        self.job_progress = JobProgressView(controller.jobs)  # the docks' work besides the trace
        layout.addWidget(self.message_label, 1)
        for widget in (self.job_progress, self.progress_bar, self.cancel_button, self.memory_label,
                       self.device_label, self.time_label):
            layout.addWidget(widget)

        self._progress_delay = QTimer(self, singleShot=True, interval=PROGRESS_DELAY_MS)
        self._progress_delay.timeout.connect(self._reveal_progress)
        self.cancel_button.clicked.connect(controller.cancel)

        # in a turn of its own: a new text relays out the status bar and the window's bottom
        controller.later.on(controller.config_changed, self._show_memory)
        controller.trace_ready.connect(self._show_trace)
        controller.trace_failed.connect(self._show_failure)
        controller.compute_started.connect(self._on_compute_started)
        controller.compute_progressed.connect(self._on_progress)
        controller.status_changed.connect(self._show_status)
        controller.engine_loaded.connect(self._on_engine_loaded)

        self.device_label.setText("device: —")
        self.time_label.setText("not computed yet")
        if controller.trace is not None:
            self._show_trace(controller.trace)
        if status_bar is not None:
            status_bar.addPermanentWidget(self, 1)

    def _label(self, name: str, tip: str, least_chars: int) -> ElidedLabel:
        label = ElidedLabel(least_chars)
        label.setObjectName(name)
        label.setAccessibleName(name.replace("_", " "))
        label.setToolTip(tip)
        return label

    def after_first_paint(self) -> None:
        # the free-memory reading (psutil's import) is 20-30 ms of a start
        self._controller.later.schedule(self._show_memory, self._show_memory)

    # reflecting the controller ----------------------------------------------------------
    def _show_memory(self, *_) -> None:
        budget = self._controller.budget()
        try:
            mode, needed = self._controller.estimate().choose(budget)
        except MemoryBudgetError as err:
            self.memory_label.setText(f"over budget: est. {format_bytes(err.needed)} of "
                                      f"{format_bytes(budget)} — not computed")
            _set_tone(self.memory_label, ERROR_TONE)
            return
        self.memory_label.setText(f"est. {format_bytes(needed)} of {format_bytes(budget)} "
                                  f"budget ({mode})")
        _set_tone(self.memory_label, NEUTRAL_TONE)

    @property
    def message(self) -> str:
        """The whole message (its label draws it cut with "…" when short of room)."""
        return self.message_label.text()

    def _set_message(self, text: str, tone: str) -> None:
        _set_tone(self.message_label, tone)
        self.message_label.setText(text)
        self.message_label.setToolTip(text or "Messages from the computation")

    def _show_trace(self, trace: Trace) -> None:
        self._hide_progress()
        self.device_label.setText(f"device: {trace.device}")
        mode = ("" if trace.mode == "full" else " (picked rows)" if trace.row_ids is not None
                else f" ({trace.mode})")
        self.time_label.setText(f"computed in {format_seconds(trace.seconds)}{mode}")
        # the engine's notes: a GPU fallback, masked rows, the shown window, the mask alignment
        self._set_message(" · ".join((*self._controller.settings_warnings, *trace.notes)), NEUTRAL_TONE)

    def _show_failure(self, message: str) -> None:
        self._hide_progress()
        self._set_message(f"not computed: {message}", ERROR_TONE)

    def _show_status(self, message: str) -> None:
        if not self._controller.computing:  # e.g. "computation cancelled"
            self._hide_progress()
        self._set_message(message, NEUTRAL_TONE)

    def _on_compute_started(self) -> None:
        self._running = True
        self.progress_bar.setValue(0)
        self._progress_delay.start()
        # the first result waits for torch, then for the run: say which (later runs keep
        # the last result's notes beside their progress bar)
        if not self._engine_ready:
            self._set_message("loading PyTorch…", NEUTRAL_TONE)
        elif self._controller.trace is None:
            self._set_message("computing…", NEUTRAL_TONE)

    def _on_engine_loaded(self, seconds: float) -> None:
        self._engine_ready = True
        loaded = f"PyTorch loaded in {format_seconds(seconds)}"
        if self._running:
            self._show_status(f"{loaded}; computing…")
        elif self._controller.trace is None:  # else the first result came from the early
            self._show_status(loaded)  # engine, and its line stays (qt/early_engine.py)

    def _on_progress(self, fraction: float) -> None:
        self.progress_bar.setValue(int(round(fraction * 100)))

    def _reveal_progress(self) -> None:
        if self._running:
            self.progress_bar.show()
            self.cancel_button.show()

    def _hide_progress(self) -> None:
        self._running = False
        self._progress_delay.stop()
        self.progress_bar.hide()
        self.cancel_button.hide()
