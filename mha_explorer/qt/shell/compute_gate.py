"""The first computation after start-up: a restored config that is large, or whose last
computation was cancelled, failed or never finished (the window was closed or killed
during it), waits until the person asks (the Compute button or F5), so a config that
hung or exhausted memory once cannot do it again at every start.

How each computation ended is kept in the preferences ("compute/last"): "running"
from its start, then "done", "failed" or "cancelled". An edit means a new config, whose
computation the person asked for by making it ("pending").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QPushButton

from mha_explorer.core.plan.memory import MemoryBudgetError
from mha_explorer.core.units import format_bytes

if TYPE_CHECKING:
    from mha_explorer.qt.shell.main_window import MainWindow

LAST_RUN_KEY = "compute/last"
LARGE_ESTIMATE = 1 << 30  # a restored config above this is computed only on request
UNFINISHED = {"running": "did not finish (the window was closed or stopped during it)",
              "cancelled": "was cancelled", "failed": "failed"}


class ComputeGate(QObject):
    """Public: ``button`` (the status bar's Compute button, shown while held),
    ``held`` (a reason, or None), ``start()`` (instead of controller.start at start-up),
    ``compute_now()`` (the button and F5)."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.held: str | None = None
        self.button = QPushButton("Compute")
        self.button.setObjectName("compute_now")
        self.button.setAccessibleName("Compute this configuration")
        self.button.setToolTip("Compute the configuration restored from the last session (F5)")
        self.button.clicked.connect(self.compute_now)
        self.button.hide()
        window.statusBar().addPermanentWidget(self.button)  # a passing message never hides it
        c = window.controller
        c.compute_started.connect(lambda: self._remember("running"))
        c.trace_ready.connect(lambda _trace: self._remember("done"))
        c.trace_failed.connect(lambda _message: self._remember("failed"))
        c.compute_cancelled.connect(lambda: self._remember("cancelled"))
        c.config_changed.connect(self._on_edit)
        c.engine_loaded.connect(lambda _s: self._say_held())  # its own line must not replace this one

    def _remember(self, how: str) -> None:
        prefs = self.window.prefs
        if prefs is not None and prefs.value(LAST_RUN_KEY, "", str) != how:
            prefs.set_value(LAST_RUN_KEY, how)

    def hold_reason(self) -> str | None:
        """Why the restored config should wait for the person, or None."""
        c, prefs = self.window.controller, self.window.prefs
        last = prefs.value(LAST_RUN_KEY, "", str) if prefs is not None else ""
        if last in UNFINISHED:
            return f"the last computation {UNFINISHED[last]}"
        try:
            _mode, needed = c.estimate().choose(c.budget())
        except MemoryBudgetError as err:
            return f"its estimate, {format_bytes(err.needed)}, is over the memory budget"
        if needed > LARGE_ESTIMATE:
            return f"its estimate is {format_bytes(needed)}"
        return None

    def start(self) -> None:
        """Start the worker; compute at once unless the restored config should wait."""
        c = self.window.controller
        self.held = self.hold_reason()
        c.start(compute=self.held is None)
        self.window.preload_heads()  # beside torch's import, so the first heatmaps wait less
        if self.held is not None:
            self.button.show()
            self._say_held()

    def _say_held(self) -> None:
        """Why nothing is computed, in the status line (which keeps it until a result)."""
        if self.held is not None:
            key = self.window.actions["compute"].shortcut().toString()
            self.window.controller.status_changed.emit(
                f"not computed yet: {self.held}; press Compute or {key} to compute it")

    def compute_now(self) -> None:
        c = self.window.controller
        self._release()
        if not c.is_running():
            c.start()
        else:
            c.request_compute(immediate=True)

    def _on_edit(self, _cfg) -> None:
        self._remember("pending")
        self._release()  # the edit asked for a computation of its own

    def _release(self) -> None:
        if self.held is not None:
            self.held = None
            self.button.hide()
