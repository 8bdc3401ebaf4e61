"""Presentation mode: full screen, projector type, only what a class needs.

Entering remembers everything it changes (the application font, the dock
layout, the window's geometry and state, the menu and status bars, the advanced
controls) and leaving puts exactly that back. The window's actions stay
attached to the window, so the keys keep stepping while the menus are hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QByteArray, QCoreApplication, QEvent, QRect, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QMainWindow

BODY_PT = 20.0  # the smallest body type that reads from the back of a classroom
HIDDEN_DOCKS = ("params",)  # the arithmetic is for reading up close, not projecting


@dataclass(frozen=True)
class SavedLook:
    font: QFont
    state: QByteArray
    geometry: QRect  # the normal (not maximized) frame; restoreGeometry would clamp it
    window_state: Qt.WindowState
    menu_bar: bool
    status_bar: bool
    advanced: bool
    labels_above: bool
    bottom_left: Qt.DockWidgetArea  # saveState does not keep the corners


def set_application_font(font: QFont) -> None:
    """Qt posts the change to the widgets; deliver it now, so the layout that follows
    measures the new type rather than the old."""
    QApplication.setFont(font)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.ApplicationFontChange)


def presentation_font(font: QFont) -> QFont:
    big = QFont(font)
    big.setPointSizeF(max(BODY_PT, font.pointSizeF()))
    return big


class Presenter:
    """Switches a MainWindow in and out of presentation mode."""

    def __init__(self, window: QMainWindow) -> None:
        self._window = window
        self._saved: SavedLook | None = None

    @property
    def active(self) -> bool:
        return self._saved is not None

    def enter(self) -> None:
        if self.active:
            return
        w = self._window
        plain = not (w.windowState() & (Qt.WindowState.WindowMaximized
                                        | Qt.WindowState.WindowFullScreen))
        self._saved = SavedLook(
            font=QFont(QApplication.font()), state=w.saveState(),
            geometry=QRect(w.geometry() if plain else w.normalGeometry()),
            window_state=w.windowState(), menu_bar=not w.menuBar().isHidden(),
            status_bar=not w.statusBar().isHidden(), advanced=w.controls.advanced_visible,
            labels_above=w.controls.labels_above,
            bottom_left=w.corner(Qt.Corner.BottomLeftCorner),
        )
        set_application_font(presentation_font(self._saved.font))
        w.menuBar().hide()
        w.statusBar().hide()
        w.controls.set_advanced_visible(False)
        w.controls.set_labels_above(True)  # a narrow form: the stage keeps the width
        w.set_title_bars(False)
        w.showFullScreen()
        w.apply_presentation_layout()

    def leave(self) -> None:
        if not self.active:
            return
        w, saved = self._window, self._saved
        self._saved = None
        set_application_font(saved.font)
        w.controls.set_advanced_visible(saved.advanced)
        w.controls.set_labels_above(saved.labels_above)
        w.set_title_bars(True)
        w.setCorner(Qt.Corner.BottomLeftCorner, saved.bottom_left)
        w.menuBar().setVisible(saved.menu_bar)
        w.statusBar().setVisible(saved.status_bar)
        w.setWindowState(Qt.WindowState.WindowNoState)  # out of full screen first
        w.setGeometry(saved.geometry)
        w.setWindowState(saved.window_state)  # maximized again, when it was
        w.show()
        w.restoreState(saved.state)
