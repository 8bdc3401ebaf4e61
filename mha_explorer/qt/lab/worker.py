"""The lab's worker: a QThread that hands each request to the training process
(``mha_explorer.core.lab.service``) and turns its answers into signals.

The thread mostly waits on the pipe, which holds no interpreter lock, so the
window's thread never waits on training. The process starts with the first
request (the warm-up, when the page is built: it imports torch there) and again
after it has died; pause and cancel are events it reads between steps. Errors
arrive as messages, never exceptions.
"""

from __future__ import annotations

import contextlib
import multiprocessing

from PySide6.QtCore import QObject, Signal, Slot

from mha_explorer.core.lab.service import ENDS, LabRequest, serve

STOP_GRACE_S = 0.1
STOP_WAIT_S = 3.0

__all__ = ["LabRequest", "LabWorker"]


class LabWorker(QObject):
    """Signals carry the head count so overlaid curves can be told apart."""

    started = Signal(int)  # head count
    progressed = Signal(int, object)  # head count, dict(step, steps, loss, accuracy, entropy, maps|None,
    #                                   labels of the maps' tokens)
    run_finished = Signal(int, object)  # head count, run_summary dict
    finished = Signal()  # every head count of the request is done
    failed = Signal(str)
    cancelled = Signal()
    warmed_up = Signal()
    saved = Signal(str, object)  # folder, config changes for the stage view (dict)

    def __init__(self) -> None:
        super().__init__()
        # spawn, not fork: a forked copy of a process with Qt's threads is not safe
        self._context = multiprocessing.get_context("spawn")
        self._cancel = self._context.Event()
        self._pause = self._context.Event()
        self._process = None
        self._conn = None

    # called from the GUI thread -----------------------------------------
    def cancel(self) -> None:
        self._cancel.set()

    def set_paused(self, paused: bool) -> None:
        (self._pause.set if paused else self._pause.clear)()

    def kill(self) -> None:
        """End the training process now: the thread waiting on it gets its answer (EOF)."""
        if self._process is not None and self._process.is_alive():
            self._process.terminate()

    def stop(self) -> None:
        """End the training process (after the thread has stopped asking it things)."""
        process, conn, self._process, self._conn = self._process, self._conn, None, None
        if process is None:
            return
        with contextlib.suppress(OSError, ValueError):  # already gone
            conn.send(("stop",))
        # it has no request in hand: a prompt exit, or an end now rather than a wait for
        # torch's tear-down (most of a second)
        process.join(STOP_GRACE_S)
        if process.is_alive():
            process.terminate()
            process.join(STOP_WAIT_S)
        conn.close()

    # on the worker thread ---------------------------------------------
    @Slot()
    def warm_up(self) -> None:
        self._ask(("warm_up",))

    @Slot(object)
    def train(self, request: LabRequest) -> None:
        self._cancel.clear()
        self._ask(("train", request))

    @Slot(int, str)
    def save(self, heads: int, folder: str) -> None:
        self._ask(("save", heads, folder))

    @Slot(str)
    def load(self, folder: str) -> None:
        self._ask(("load", folder))

    def _ask(self, request: tuple) -> None:
        """Send one request and pass its answers on until the one that ends it."""
        try:
            conn = self._connection()
            conn.send(request)
            while True:
                kind, *args = conn.recv()
                getattr(self, kind).emit(*args)
                if kind in ENDS:
                    return
        except (EOFError, OSError) as exc:
            code = self._process.exitcode if self._process is not None else None
            self._process = self._conn = None
            self.failed.emit(f"the lab's training process stopped (exit code {code}): {exc or 'no answer'}")

    def _connection(self):
        if self._process is None or not self._process.is_alive():
            ours, theirs = self._context.Pipe()
            process = self._context.Process(target=serve, args=(theirs, self._pause, self._cancel),
                                            name="mha-explorer-lab", daemon=True)
            process.start()
            theirs.close()  # the child's end: ours sees EOF when the child is gone
            self._process, self._conn = process, ours
        return self._conn
