"""Ctrl+C in the terminal that started the window: the window closes (saving its
preferences as on any quit) and the process exits with 130.

While Qt's event loop waits, no Python runs, so Python's own signal handler would
wait too. ``signal.set_wakeup_fd`` makes the C-level handler write a byte to a
socket that a QSocketNotifier watches; reading it runs Python, which runs the
handler. The handler never raises (a KeyboardInterrupt inside a Qt slot or
virtual is printed and swallowed by Qt): it only asks the event loop to quit.
"""

from __future__ import annotations

import signal
import socket
import threading

from PySide6.QtCore import QObject, QSocketNotifier, QTimer
from PySide6.QtWidgets import QApplication

from mha_explorer.core.system.interrupts import EXIT_INTERRUPTED


class SigintQuit(QObject):
    """Installed once per application; ``interrupted`` tells run_app the exit code."""

    def __init__(self, app: QApplication) -> None:
        super().__init__(app)
        self.interrupted = False
        self._app = app
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._drain)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._previous_handler = signal.signal(signal.SIGINT, self._on_sigint)
        app.aboutToQuit.connect(self.uninstall)

    def _drain(self, *_args) -> None:
        # running this slot is what lets Python call the handler; the bytes are only a wakeup
        try:
            while self._reader.recv(512):
                pass
        except OSError:
            pass

    def _on_sigint(self, _signum, _frame) -> None:
        if self.interrupted:
            return
        self.interrupted = True
        QTimer.singleShot(0, self._quit)  # from the event loop, not from inside whatever ran

    def _quit(self) -> None:
        self._app.closeAllWindows()  # each window saves its preferences and stops its thread
        self._app.exit(EXIT_INTERRUPTED)

    def uninstall(self) -> None:
        if self._notifier is None:
            return
        signal.signal(signal.SIGINT, self._previous_handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._notifier.setEnabled(False)
        self._notifier = None
        self._reader.close()
        self._writer.close()


def quit_on_sigint(app: QApplication) -> SigintQuit | None:
    """Make Ctrl+C quit ``app`` with exit 130; None off the main thread (no signals there)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return SigintQuit(app)


def exit_code(guard: SigintQuit | None, code: int) -> int:
    """What the process returns: 130 after Ctrl+C, whatever the event loop said."""
    return EXIT_INTERRUPTED if guard is not None and guard.interrupted else code
