"""Ctrl+C during work that calls back into Qt: noted at once, acted on at a checkpoint.

Python's default SIGINT handler raises KeyboardInterrupt in whatever Python code
runs at that moment; inside a Qt virtual (a paintEvent during a render) Qt
prints the exception and carries on, so the interrupt is lost. Within
``deferred_interrupt()`` the signal only sets a flag, and ``checkpoint()``
raises KeyboardInterrupt from plain Python code between two files.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl+C

_pending = threading.Event()


def _note(_signum, _frame) -> None:
    _pending.set()


def checkpoint() -> None:
    """Raise KeyboardInterrupt if Ctrl+C came since the last checkpoint."""
    if _pending.is_set():
        _pending.clear()
        raise KeyboardInterrupt


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """SIGINT becomes a flag for the duration; on leaving, a pending one is raised.
    Off the main thread (where signals cannot be set) this changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _pending.clear()
    previous = signal.signal(signal.SIGINT, _note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    checkpoint()
