"""Presentation mode: full screen on whatever screen the window is on, type sized
for that screen, the stage and the heads first.

Entering remembers everything it changes (the application font, the dock
layout, the window's geometry and state, the menu and status bars, the advanced
controls, the code panel) and leaving puts exactly that back, whatever was
toggled in between. The window's actions stay attached to the window, so the
keys keep stepping while the menus are hidden.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QByteArray, QCoreApplication, QEvent, QRect, QSize, Qt
from PySide6.QtGui import QFont, QGuiApplication
from PySide6.QtWidgets import QApplication, QMainWindow

# body type on a 1920×1080 projector: 28 px, over 2.5 % of the screen's height, reads from the
# back of a classroom
BODY_PT = 21.0
REFERENCE_SCREEN = QSize(1440, 1080)  # BODY_PT fits this much: smaller screens scale down
MIN_BODY_PT = 11.0  # however small the screen, never below this
HIDDEN_DOCKS = ("controls", "shapes", "params")  # one key each brings them back (Alt+number)


@dataclass(frozen=True)
class SavedLook:
    font: QFont
    state: QByteArray
    geometry: QRect  # the normal (not maximized) frame; restoreGeometry would clamp it
    window_state: Qt.WindowState
    menu_bar: bool
    status_bar: bool
    advanced: bool
    variant_fields: bool  # the variants' fields under the form: for the desk, not the projector
    labels_above: bool
    code: bool
    bottom_left: Qt.DockWidgetArea  # saveState does not keep the corners


def set_application_font(font: QFont) -> None:
    """Qt posts the change to the widgets; deliver it now, so the layout that follows
    measures the new type rather than the old."""
    QApplication.setFont(font)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.ApplicationFontChange)


def points_for_screen(size: QSize) -> float:
    """Body type for a screen: BODY_PT on 1920×1080, in proportion on smaller ones
    (1024×768 gets about 14 pt), never below MIN_BODY_PT."""
    scale = min(size.height() / REFERENCE_SCREEN.height(), size.width() / REFERENCE_SCREEN.width())
    return max(MIN_BODY_PT, round(BODY_PT * scale, 1))


def presentation_font(font: QFont, points: float = BODY_PT) -> QFont:
    big = QFont(font)
    big.setPointSizeF(points)
    return big


def fit_on_screen(frame: QRect, area: QRect) -> QRect:
    """``frame`` moved (and if need be shrunk) so that all of it lies inside ``area``."""
    w, h = min(frame.width(), area.width()), min(frame.height(), area.height())
    x = min(max(frame.x(), area.left()), area.left() + area.width() - w)
    y = min(max(frame.y(), area.top()), area.top() + area.height() - h)
    return QRect(x, y, w, h)


class Presenter:
    """Switches a MainWindow in and out of presentation mode.

    ``screen_area`` gives the rectangle full screen covers (default: the window's
    screen); a test may pass another to stand for a projector.
    """

    def __init__(self, window: QMainWindow, screen_area: Callable[[], QRect] | None = None) -> None:
        self._window = window
        self._saved: SavedLook | None = None
        self.screen_area = screen_area or self._window_screen
        # where a normal window may lie: the same rectangle when a test stands in for
        # the screen, else the screen less its panels
        self.available_area = screen_area or self._window_desk

    def _screen(self):
        return self._window.screen() or QGuiApplication.primaryScreen()

    def _window_screen(self) -> QRect:
        return self._screen().geometry()

    def _window_desk(self) -> QRect:
        return self._screen().availableGeometry()

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
            window_state=w.windowState() & ~Qt.WindowState.WindowFullScreen,
            menu_bar=not w.menuBar().isHidden(),
            status_bar=not w.statusBar().isHidden(), advanced=w.controls.advanced_visible,
            variant_fields=not w.variant_scroll.isHidden(),
            labels_above=w.controls.labels_above, code=w.stage_view.code_visible,
            bottom_left=w.corner(Qt.Corner.BottomLeftCorner),
        )
        area = self.screen_area()
        set_application_font(presentation_font(self._saved.font, points_for_screen(area.size())))
        w.menuBar().hide()
        w.statusBar().hide()
        w.controls.set_advanced_visible(False)
        w.variant_scroll.setVisible(False)
        w.controls.set_labels_above(True)  # a narrow form, when it is shown
        w.stage_view.set_code_visible(False)  # one key (Ctrl+Shift+C) shows it
        w.stepper.set_compact(True)
        w.set_title_bars(False)
        w.setGeometry(area)
        w.showFullScreen()
        w.apply_presentation_layout(area)
        self._shrink_type_to_fit(area)

    def _shrink_type_to_fit(self, area: QRect) -> None:
        """A screen narrower than the panels' minimum at this type would push the
        window past its edge: step the type down until everything fits."""
        w = self._window
        points = QApplication.font().pointSizeF()
        while points > MIN_BODY_PT:
            QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
            w.layout().activate()
            hint = w.minimumSizeHint()
            if hint.width() <= area.width() and hint.height() <= area.height():
                break
            points = max(MIN_BODY_PT, points - 0.5)
            set_application_font(presentation_font(QApplication.font(), points))
        w.setGeometry(area)

    def leave(self) -> None:
        if not self.active:
            return
        w, saved = self._window, self._saved
        self._saved = None
        area = self.available_area()
        set_application_font(saved.font)
        w.controls.set_advanced_visible(saved.advanced)
        w.variant_scroll.setVisible(saved.variant_fields)
        w.controls.set_labels_above(saved.labels_above)
        w.stage_view.set_code_visible(saved.code)
        w.stepper.set_compact(False)
        w.set_title_bars(True)
        w.setCorner(Qt.Corner.BottomLeftCorner, saved.bottom_left)
        w.menuBar().setVisible(saved.menu_bar)
        w.statusBar().setVisible(saved.status_bar)
        # out of full screen first, whatever set the state since (a theme switch re-polishes
        # the window; showNormal clears the flag where setWindowState alone may not)
        w.showNormal()
        w.setWindowState(Qt.WindowState.WindowNoState)
        frame = fit_on_screen(saved.geometry, area)
        w.setGeometry(frame)
        w.restoreState(saved.state)
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        w.layout().activate()
        w.setGeometry(frame)  # restoreState may grow the window to its saved dock sizes
        w.setWindowState(saved.window_state)  # maximized again, when it was
        w.show()
