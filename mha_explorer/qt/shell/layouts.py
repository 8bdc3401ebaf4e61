"""Where the window's docks go: the everyday layout (first launch and "reset
layout" alike) and the presentation layout.

Everyday: the stages on top, the configuration on the left; the heads beside
the stage (on a screen 1600 px wide or more, under it beside the tables, so
the centre keeps the width the diagram needs). Presentation: the stage and the
heads share the screen; the configuration and the tables are hidden, one key
each brings them back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtWidgets import QDockWidget

from mha_explorer.qt.shell.wired_docks import WIRED_DOCKS, place_wired_docks

if TYPE_CHECKING:
    from mha_explorer.qt.shell.main_window import MainWindow

CONTROLS_WIDTH = 300
WIDE_LAYOUT = 1600  # narrower, the heads sit beside the stage and the tables under it
SMALL_LAYOUT = 1240  # narrower still, the heads lead the tabs under the stage
BOTTOM_SHARE = 0.3  # of the height, for the heads and the tables under the stage
NARROW_BOTTOM_SHARE = 0.2  # a laptop's 720 rows: the diagram keeps 300 of them
SMALL_BOTTOM_SHARE = 0.36  # the heads under the stage need rows for their maps
NARROW_HEADS_SHARE = 0.3  # of the width, for the heads beside the stage
# of the screen's width on 1920×1080: the chosen head large and nearly square with the others
# beside it at 110 px (half the width drew it tall and narrow); the diagram keeps the rest
# (its attention grid grows with that width)
PRESENT_HEADS_SHARE = 0.58
SMALL_PRESENT_HEADS_SHARE = 0.5  # below 1600 px: the chosen head large over the others

TOP, LEFT, RIGHT, BOTTOM = (Qt.DockWidgetArea.TopDockWidgetArea, Qt.DockWidgetArea.LeftDockWidgetArea,
                            Qt.DockWidgetArea.RightDockWidgetArea,
                            Qt.DockWidgetArea.BottomDockWidgetArea)


def bring_to_front(dock: QDockWidget) -> None:
    """Make a tabbed dock the current tab. QWidget.raise_ does nothing for the
    window's last child (re-docking can leave a dock there), so lower it first."""
    dock.lower()
    dock.raise_()


def arrange(window: MainWindow, *, present: bool = False, narrow: bool = False,
            small: bool = False) -> None:
    """Put every dock in its area, forgetting old tabs and splits."""
    d = window.docks
    for dock in d.values():
        if dock.isFloating():  # on a docked one Qt sets its window flags again (a reparenting)
            dock.setFloating(False)
        window.removeDockWidget(dock)
    window.setCorner(Qt.Corner.BottomLeftCorner, LEFT)
    window.setCorner(Qt.Corner.BottomRightCorner, RIGHT)
    window.addDockWidget(TOP, d["stages"])
    window.addDockWidget(LEFT, d["controls"])
    window.addDockWidget(BOTTOM, d["shapes"])
    if small and not present:
        window.tabifyDockWidget(d["shapes"], d["heatmaps"])
    elif present or narrow:
        window.addDockWidget(RIGHT, d["heatmaps"])
    else:
        window.splitDockWidget(d["shapes"], d["heatmaps"], Qt.Orientation.Horizontal)
    window.tabifyDockWidget(d["shapes"], d["params"])
    for key in extra_docks(window):  # panels added beside the built-in ones
        if key not in WIRED_DOCKS:
            window.tabifyDockWidget(d["shapes"], d[key])
    place_wired_docks(window, present, narrow or small)  # Weights, Layers, Generation
    for dock in d.values():
        dock.show()
    window.layout().activate()  # makes the tab bars of the tabbed docks now

    def after_layout() -> None:
        bring_to_front(d["shapes"])
        if small:
            bring_to_front(d["heatmaps"])  # the heads lead; the tables are a tab away
        window.describe_qt_parts()

    after_layout()
    QTimer.singleShot(0, after_layout)  # and once more when laid out


def extra_docks(window: MainWindow) -> list[str]:
    return [key for key in window.docks
            if key not in ("stages", "controls", "heatmaps", "shapes", "params")]


def apply_default(window: MainWindow) -> None:
    """Sizes that work from 1024×600 up and give the stage most of a 1920×1080 screen."""
    w, h = window.width(), window.height()
    narrow, small = w < WIDE_LAYOUT, w < SMALL_LAYOUT
    arrange(window, narrow=narrow, small=small)
    d = window.docks
    controls_w = max(CONTROLS_WIDTH, window.controls.minimumSizeHint().width())
    window.resizeDocks([d["controls"]], [controls_w], Qt.Orientation.Horizontal)
    if small:
        window.resizeDocks([d["shapes"]], [int(h * SMALL_BOTTOM_SHARE)], Qt.Orientation.Vertical)
    elif narrow:
        window.resizeDocks([d["heatmaps"]], [int(w * NARROW_HEADS_SHARE)], Qt.Orientation.Horizontal)
        window.resizeDocks([d["shapes"]], [int(h * NARROW_BOTTOM_SHARE)], Qt.Orientation.Vertical)
    else:
        window.resizeDocks([d["shapes"], d["heatmaps"]], [int(w * 0.52), int(w * 0.48)],
                           Qt.Orientation.Horizontal)
        window.resizeDocks([d["shapes"]], [int(h * BOTTOM_SHARE)], Qt.Orientation.Vertical)


def apply_presentation(window: MainWindow, area: QRect, hidden: tuple[str, ...]) -> None:
    """The stage and the heads share the screen; ``hidden`` docks wait for their key."""
    arrange(window, present=True)
    for key in (*hidden, *extra_docks(window)):
        window.docks[key].hide()
    share = PRESENT_HEADS_SHARE if area.width() >= WIDE_LAYOUT else SMALL_PRESENT_HEADS_SHARE
    window.resizeDocks([window.docks["heatmaps"]], [int(area.width() * share)],
                       Qt.Orientation.Horizontal)
