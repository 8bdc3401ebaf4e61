"""The lab's worker: a QThread that hands each request to the training process
(``mha_explorer.core.lab.service``) and turns its answers into signals.

The thread mostly waits on the pipe, which holds no interpreter lock, so the
window's thread never waits on training. The process starts with the first
request (the warm-up, when the page is built: it imports torch there) and again
after it has died; pause and cancel go to it at once on a pipe of their own.
Errors arrive as messages, never exceptions.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot

from mha_explorer.core.lab.service import ENDS, LabRequest, ServiceProcess

__all__ = ["LabRequest", "LabWorker"]


class LabWorker(QObject):
    """Signals carry the head count so overlaid curves can be told apart."""

    started = Signal(int)  # head count
    progressed = Signal(int, object)  # head count, dict(step, steps, loss, accuracy, entropy, maps|None,
    #                                   labels of the maps' tokens, prefix, previous)
    run_finished = Signal(int, object)  # head count, run_summary dict
    finished = Signal()  # every head count of the request is done
    failed = Signal(str)
    cancelled = Signal()
    warmed_up = Signal()
    saved = Signal(str, object)  # folder, config changes for the stage view (dict)

    def __init__(self) -> None:
        super().__init__()
        self._service = ServiceProcess()

    # called from the GUI thread -----------------------------------------
    def cancel(self) -> None:
        self._service.cancel()

    def set_paused(self, paused: bool) -> None:
        self._service.pause(paused)

    def kill(self) -> None:
        """End the training process now: the thread waiting on it gets its answer (EOF)."""
        self._service.kill()

    def stop(self) -> None:
        """End the training process (after the thread has stopped asking it things)."""
        self._service.stop()

    @property
    def process_id(self) -> int | None:
        return self._service.pid

    # on the worker thread ---------------------------------------------
    @Slot()
    def warm_up(self) -> None:
        self._ask("warm_up")

    @Slot(object)
    def train(self, request: LabRequest) -> None:
        self._ask("train", request)

    @Slot(int, str)
    def save(self, heads: int, folder: str) -> None:
        self._ask("save", heads, folder)

    @Slot(str)
    def load(self, folder: str) -> None:
        self._ask("load", folder)

    def _ask(self, *request) -> None:
        """Send one request and pass its answers on until the one that ends it."""
        try:
            self._service.ask(*request)
            while True:
                kind, *args = self._service.answer()
                getattr(self, kind).emit(*args)
                if kind in ENDS:
                    return
        except (EOFError, OSError) as exc:
            process = self._service.process
            code = process.exitcode if process is not None else None
            self.failed.emit(f"the lab's training process stopped (exit code {code}): {exc or 'no answer'}")
