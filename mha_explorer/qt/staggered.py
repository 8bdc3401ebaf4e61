"""View updates spread over event-loop turns, one per turn.

An edit or a new trace makes many views react: the stage diagram, the code, the
tables, the heads' maps, the status line. Run back to back in the turn of the
edit they held the event loop for 80-330 ms on a busy two-core machine (each one
10-70 ms, with its relayout and repaint). Queued here, each runs in a turn of its
own, and the repaint it asks for happens before the next one starts.

The head lab's page draws its plots through one as well.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import shiboken6
from PySide6.QtCore import QObject, QTimer


class StaggeredRefresh(QObject):
    """Runs scheduled view updates one per timer tick, newest per key, oldest key first.

    A key scheduled again keeps its place in the queue and runs its newest update
    once: a view edited three times in a row redraws once, for the last edit.
    """

    TICK_MS = 4  # leaves the event loop time for input and paint between updates

    def __init__(self, parent: QObject | None = None, tick_ms: int | None = None):
        super().__init__(parent)
        self._pending: dict[Hashable, Callable[[], object]] = {}
        self._last: set[Hashable] = set()  # the keys scheduled last, still waiting
        self._timer = QTimer(self)
        self._timer.setInterval(self.TICK_MS if tick_ms is None else tick_ms)
        self._timer.timeout.connect(self._run_one)

    def schedule(self, key: Hashable, update: Callable[[], object]) -> None:
        self._last.discard(key)  # an ordinary update now, whatever it was before
        self._pending[key] = update  # a newer update of the same view replaces the older
        if not self._timer.isActive():
            self._timer.start()

    def schedule_last(self, key: Hashable, update: Callable[[], object]) -> None:
        """Run ``update`` once everything scheduled meanwhile has run (it is moved behind
        whatever is scheduled before its turn comes). Among updates scheduled last, each
        waits only for the ordinary ones: waiting for one another, two would never run."""
        def when_alone() -> None:
            if any(k not in self._last for k in self._pending):
                self._pending.pop(key, None)
                self._pending[key] = when_alone
                return
            self._last.discard(key)
            update()
        self._pending.pop(key, None)
        self.schedule(key, when_alone)
        self._last.add(key)

    def on(self, signal, update: Callable[[], object]) -> None:
        """Run ``update`` (keyed by itself) in a turn of its own each time ``signal`` fires."""
        signal.connect(lambda *_args: self.schedule(update, update))

    def cancel(self, key: Hashable) -> None:
        """Forget what ``key`` was waiting to do (its view has just done it itself)."""
        self._pending.pop(key, None)
        self._last.discard(key)

    def pending(self, key: Hashable) -> bool:
        return key in self._pending

    @property
    def idle(self) -> bool:
        """Nothing waiting: every view shows the latest edit and trace."""
        return not self._pending

    def flush(self) -> None:
        """Run everything waiting now, in order (before an export reads the views)."""
        while self._pending:
            self._run_one()

    def stop(self) -> None:
        """Drop what is waiting (the views are going)."""
        self._pending.clear()
        self._last.clear()
        self._timer.stop()

    def _run_one(self) -> None:
        if not self._pending:
            self._timer.stop()
            return
        key = next(iter(self._pending))
        update = self._pending.pop(key)
        if _alive(update):
            update()


def _alive(update: Callable[[], object]) -> bool:
    """False when the update belongs to a widget Qt has already deleted (a closed panel)."""
    owner = getattr(getattr(update, "func", update), "__self__", None)
    return not isinstance(owner, QObject) or shiboken6.isValid(owner)
