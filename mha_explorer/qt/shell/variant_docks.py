"""What the window adds for the variants and the head lab: the variant fields under the
configuration, the parameters page (the counts and the KV-cache comparison, built after the
window's first paint: it starts as a tab behind the shapes), and the Lab page as a dock of its
own (built the first time it is shown: its worker thread loads torch).

The lab's "open in stage view" goes through the controller's one edit path, so the lab
model's layer runs through the engine with the "lab" weight source like any other config.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QScrollArea, QSplitter, QToolButton, QVBoxLayout, QWidget

from mha_explorer.qt.panels.variant_fields import VariantFields
from mha_explorer.qt.scrolling import scroll_area
from mha_explorer.qt.shell.layouts import bring_to_front
from mha_explorer.qt.shell.wired_docks import make_room

if TYPE_CHECKING:
    from mha_explorer.qt.shell.main_window import MainWindow

LAB_SCREEN_SHARE = 0.92  # of the screen's free area, for the lab's own window


def scrolled(*widgets: QWidget, name: str, stretch: bool = True, sideways: bool = False) -> QScrollArea:
    """The widgets one under the other, scrolling when the dock is shorter than they are."""
    page = QWidget()
    column = QVBoxLayout(page)
    column.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        column.addWidget(widget, 0 if stretch else 1)
    if stretch:
        column.addStretch(1)
    area = scroll_area(page, sideways=sideways)
    area.setObjectName(name)
    return area


def config_page(window: MainWindow) -> QWidget:
    """The configuration form, and under it (a splitter between) the variant fields: K/V
    kind, latent sizes, mask, positions; each part scrolls on its own."""
    window.variant_fields = VariantFields(window.controller)
    column = window.controls.layout()
    form_scroll = window.controls.form_scroll  # not through the layout's items: no wrapper on one
    split = QSplitter(Qt.Orientation.Vertical, objectName="configuration_split")
    split.setChildrenCollapsible(False)
    column.addWidget(split)
    split.addWidget(form_scroll)  # moves it into the splitter
    # outside the form: the form measures its width for presentation type, and these
    # fields (hidden there) must not widen it
    window.variant_scroll = scrolled(window.variant_fields, name="variant_scroll")
    split.addWidget(window.variant_scroll)
    split.setStretchFactor(0, 3)
    split.setStretchFactor(1, 2)
    return window.controls


def parameters_page(window: MainWindow) -> QScrollArea:
    """The parameter and memory arithmetic, then the KV-cache comparison of the variants."""
    from mha_explorer.qt.panels.kv_compare import KVCompareTable
    from mha_explorer.qt.panels.parameters import ParamsPanel

    window.params_panel = ParamsPanel(window.controller)
    window.kv_table = KVCompareTable(window.controller)  # as tall as its rows: the page scrolls
    return scrolled(window.params_panel, window.kv_table, name="parameters_scroll")


class LabDock:
    """The Lab dock's content: a placeholder until the dock is first shown, then the
    LabPage. ``page`` is None until then."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.page = None
        # built when the lab comes into sight (its worker thread loads torch), never before
        self.dock = window.shell.add_later(
            "lab", "Lab", self._make_page, Qt.DockWidgetArea.BottomDockWidgetArea,
            waiting="The head lab loads when this panel is first shown…")
        # its plots and maps need height, as the Layers and Generation docks do
        self.dock.visibilityChanged.connect(lambda shown: make_room(window, "lab", shown))
        # docked again by any route (its button, a layout reset): the usual dock title back
        self.dock.topLevelChanged.connect(
            lambda floating: floating or self.dock.setTitleBarWidget(None))

    def _make_page(self) -> QScrollArea:
        from mha_explorer.qt.lab.page import LabPage  # pyqtgraph and the lab worker

        self.page = LabPage()
        self.page.setObjectName("lab_page")
        self.page.stage_view_requested.connect(self.open_in_stage_view)
        self.page.status_message.connect(
            lambda text: self.window.statusBar().showMessage(text, 10_000))
        # scrolls in a short dock rather than holding the panels under the stage tall
        return scrolled(self.page, name="lab_scroll", stretch=False, sideways=True)

    def build(self):
        """The LabPage, made on first use and wired to the window."""
        self.window.shell.built("lab")
        return self.page

    def show(self) -> None:
        """Bring the lab forward (View menu, Ctrl+L) in a window of its own over most of
        the screen: docked among the tables it would share the height with the stage and
        the width with the heads (at 1280×720 that left 570×300). Its bar's "Dock in the
        main window" puts it back as a tab among the tables."""
        dock = self.dock
        dock.show()
        self.build()
        if dock.titleBarWidget() is None:  # docked, or dragged out as a tool window
            area = (self.window.screen() or QGuiApplication.primaryScreen()).availableGeometry()
            w, h = int(area.width() * LAB_SCREEN_SHARE), int(area.height() * LAB_SCREEN_SHARE)
            self._as_own_window()
            dock.setGeometry(area.x() + (area.width() - w) // 2, area.y() + (area.height() - h) // 2, w, h)
            dock.show()
        dock.raise_()
        dock.activateWindow()

    def _as_own_window(self) -> None:
        """A floating dock on X11 is a frameless tool window whose title Qt draws itself:
        no window-manager title bar, no minimise or maximise, no entry in the task list.
        The Lab is a normal window instead, with its own title, and a thin bar inside
        whose one button docks it again."""
        dock = self.dock
        dock.setFloating(True)
        # the bar first: setting a title bar widget makes a floating dock a tool window again
        dock.setTitleBarWidget(self._dock_bar())
        dock.setWindowFlags(Qt.WindowType.Window)
        dock.setWindowTitle("Head lab — MHA Explorer")

    def _dock_bar(self) -> QWidget:
        bar = QWidget(objectName="lab_window_bar")
        row = QHBoxLayout(bar)
        row.setContentsMargins(4, 2, 4, 2)
        row.addStretch(1)
        button = QToolButton(bar, objectName="lab_dock_button", text="Dock in the main window")
        button.setToolTip("Put the Lab back as a tab among the tables (Ctrl+L opens it here again)")
        button.setAccessibleName("Dock the Lab in the main window")
        button.clicked.connect(self.dock_back)
        row.addWidget(button)
        return bar

    def dock_back(self) -> None:
        """Back among the tables, with the title bar every dock has."""
        self.dock.setFloating(False)
        bring_to_front(self.dock)
        self.window.activateWindow()  # the lab's window is gone: the keys go to the main one

    def open_in_stage_view(self, changes: dict) -> None:
        """Apply the saved run's config changes and show its layer in the stage view."""
        window = self.window
        if not window.controller.update(**changes):
            error = window.controller.error
            window.statusBar().showMessage(f"could not open the lab run: {error}", 10_000)
            return
        window.controller.first_stage()
        bring_to_front(window.docks["heatmaps"])
        window.apply_default_layout()  # the stage and its heads get their room back
        window.stage_view.setFocus()
        window.statusBar().showMessage("the lab model's layer is in the stage view", 10_000)

    def shutdown(self) -> None:
        if self.page is not None:
            self.page.shutdown()
