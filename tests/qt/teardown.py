"""How a fixture wider than one test lets its widget go."""

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication


def gone(widget) -> None:
    """Close ``widget`` and delete it now, with the dialogs its tests opened on it, as qtbot
    does for the widgets of one test: a later test (the soak) counts the windows still open."""
    widget.close()
    widget.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
