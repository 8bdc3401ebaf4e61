"""The Weights, Layers and Generation docks, and where the window's layouts put them.

``add_wired_docks`` makes them (before the menus, so the View menu lists them
with their Alt+number); Layers and Generation start behind other tabs, so their
panels are built after the window's first paint (or when first needed).
``place_wired_docks`` runs inside each layout: Weights above the Configuration,
Layers a tab beside the Heads, Generation a tab beside the tables. Their torch
work shares the controller's worker thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import shiboken6
from PySide6.QtCore import Qt, QTimer

from mha_explorer.qt.panels.weights import WeightsPanel

if TYPE_CHECKING:
    from mha_explorer.qt.decode.generation_panel import GenerationPanel
    from mha_explorer.qt.shell.main_window import MainWindow
    from mha_explorer.qt.trained.layers_panel import LayersPanel

WEIGHTS_HEIGHT = 120
# of the height while Layers, Generation or the Lab is the tab in front: their views draw rows
# of labels, plots and maps
ROOMY_SHARE, SHORT_SCREEN_SHARE, SHORT_SCREEN = 0.55, 0.64, 900
ROOMY_DOCKS = ("layers", "generation", "lab")
WIRED_DOCKS = ("weights", "layers", "generation")


def add_wired_docks(window: MainWindow) -> None:
    c = window.controller
    window.weights_panel = WeightsPanel(c, window.controls)
    left, bottom = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.BottomDockWidgetArea
    shell = window.shell
    shell.add("weights", "Weights", window.weights_panel, left)
    shell.room_before = None
    for key, title, build in (("layers", "Layers", lambda: layers_panel(window)),
                              ("generation", "Generation", lambda: generation_panel(window))):
        dock = shell.add_later(key, title, build, bottom, waiting=f"Opening {title}…")
        dock.visibilityChanged.connect(lambda shown, k=key: make_room(window, k, shown))


def layers_panel(window: MainWindow) -> LayersPanel:
    from mha_explorer.qt.trained.layers_panel import LayersPanel

    c = window.controller
    return LayersPanel(c, c.jobs, open_head=lambda h: window.heatmaps.open_head(h))


def generation_panel(window: MainWindow) -> GenerationPanel:
    from mha_explorer.qt.decode.generation_panel import GenerationPanel

    return GenerationPanel(window.controller, window.controller.jobs)


def make_room(window: MainWindow, key: str, shown: bool) -> None:
    """The grid of layers, the decode and tiles views and the Lab's plots need height: the
    bottom row grows while one of them is the tab in front, and gives it back afterwards."""
    if not shiboken6.isValid(window):
        return  # a dock hidden while the window is being destroyed
    dock = window.docks[key]
    shell = window.shell
    if shell.placing or dock.isFloating() or window.presenting or not _in_bottom_row(window, dock):
        return  # a layout being made chooses its own sizes; a side column has its own height
    h = window.height()
    if shown:
        if shell.room_before is None:
            shell.room_before = dock.height()
        share = SHORT_SCREEN_SHARE if h < SHORT_SCREEN else ROOMY_SHARE
        window.resizeDocks([dock], [max(dock.height(), int(h * share))], Qt.Orientation.Vertical)
    else:
        QTimer.singleShot(0, lambda: _give_back_room(window))  # after the next tab shows


def _give_back_room(window: MainWindow) -> None:
    shell = window.shell
    roomy = [shell.docks[k] for k in ROOMY_DOCKS]
    # a roomy dock still in front in the bottom row keeps the room. A tab behind another is
    # not hidden (isVisible stays true), it is out of sight: asking isVisible kept the room
    # borrowed for good, the diagram ~150 rows short at 1280×720 once Generation was opened.
    # One in a side column (Layers beside the configuration) has nothing to do with it.
    if shell.room_before is None or any(
            not d.isFloating() and not d.visibleRegion().isEmpty() and _in_bottom_row(window, d)
            for d in roomy):
        return
    window.resizeDocks([shell.docks["shapes"]], [shell.room_before], Qt.Orientation.Vertical)
    shell.room_before = None


def _in_bottom_row(window: MainWindow, dock) -> bool:
    return window.dockWidgetArea(dock) == Qt.DockWidgetArea.BottomDockWidgetArea


def place_wired_docks(window: MainWindow, present: bool = False, narrow: bool = False) -> None:
    """Called by the layouts after the other docks are placed, before they are shown."""
    d = window.docks
    if not {"weights", "layers", "generation"} <= d.keys():
        return
    shell = window.shell
    shell.placing = True  # until the layout's own deferred step has run (below)
    shell.room_before = None
    if narrow:  # a short screen: the left column has no height to spare, so a tab
        window.tabifyDockWidget(d["controls"], d["weights"])
    else:
        window.splitDockWidget(d["controls"], d["weights"], Qt.Orientation.Vertical)
        window.splitDockWidget(d["weights"], d["controls"], Qt.Orientation.Vertical)  # weights on top
    # with the heads in their own full-height column (narrow screens) a tab bar there
    # would push the window taller than the screen: the Layers tab joins the configuration
    window.tabifyDockWidget(d["controls" if narrow else "heatmaps"], d["layers"])
    window.tabifyDockWidget(d["params"], d["generation"])
    window.resizeDocks([d["weights"]], [WEIGHTS_HEIGHT], Qt.Orientation.Vertical)

    def built_ins_in_front() -> None:  # a newly tabbed dock takes the front: give it back
        for key in ("controls", "heatmaps", "shapes"):
            d[key].lower()
            d[key].raise_()

    def placed() -> None:
        built_ins_in_front()
        # a tab chosen from here on is the person's: it gets its room. A fixed 200 ms ended
        # this instead, and a tab chosen sooner (a quick hand, a machine with torch loaded
        # and the trace there at once) was taken for the layout's own and got none
        shell.placing = False

    built_ins_in_front()
    QTimer.singleShot(0, placed)
