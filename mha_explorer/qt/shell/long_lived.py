"""What lives as long as the window, kept out of Python's cycle collector.

Once torch, numpy, pyqtgraph and a model are loaded, about 230,000 objects sit in the
collector's oldest generation, and every full collection walks all of them: 110 ms with the
interpreter lock held, a stop of the window's event loop at a random moment (the second preset
of a lesson, a click in presentation). ``gc.freeze`` moves them to a generation the collector
never walks. It is done when a trace of new weights is drawn: by then the modules and the model
that stay are loaded. What is frozen is still freed by reference counting; only a cycle already
garbage at that moment would stay, and the few a window makes are small.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject


class LongLivedFreezer(QObject):
    """Freezes the collector's generations at the first trace of each weights."""

    def __init__(self, controller, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._frozen_for: set[str] = set()
        controller.trace_ready.connect(self._traced)

    def _traced(self, trace) -> None:
        weights = trace.config.weights
        if weights not in self._frozen_for:
            self._frozen_for.add(weights)
            gc.freeze()
