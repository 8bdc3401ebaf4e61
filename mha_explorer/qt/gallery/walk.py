"""One window led through the pictures of the matrix (gallery/matrix.py), as a person would
leave it at each: the config computed, the window on the screen, the theme and the mode
chosen, the stage shown and every view caught up. In the everyday window each dock the
layout puts behind another's tab is then brought to the front, and each tab inside it
(the Layers dock's tables, the Generation dock's views) is chosen in turn, so every panel
a class can see is looked at. Needs the offscreen platform's screens
(``matrix.screens_config``), set before the application starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QTabWidget

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.gallery.matrix import Case
from mha_explorer.qt.gallery.read import Picture, read_window

TRACE_WAIT_S = 600.0  # a trained model's first load, on a busy machine
SETTLE_WAIT_S = 30.0


def wait_until(done: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Let the event loop run until ``done()``; TimeoutError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    loop = QEventLoop()
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f} s for {what}")
        QTimer.singleShot(10, loop.quit)
        loop.exec()


@dataclass(frozen=True)
class Shown:
    """One picture of the walk: its case, its stage and what the window showed."""

    case: Case
    stage: str
    picture: Picture
    front: str = ""  # the dock (and its tab) brought to the front; "" for the layout as made

    @property
    def name(self) -> str:
        return self.picture.name


def picture_name(case: Case, stage: str, front: str = "") -> str:
    shown = f" · {front} in front" if front else ""
    return f"{case.setup.name} · {stage} · {case.screen.name} · {case.mode} · {case.theme}{shown}"


def behind_tabs(window) -> list[QDockWidget]:
    """The docks the layout put behind another's tab: there, but out of sight."""
    return [dock for dock in window.docks.values()
            if not dock.isHidden() and not dock.isFloating() and dock.visibleRegion().isEmpty()]


def _title(widget) -> str:
    return widget.windowTitle().replace("&&", "&")


class Walk:
    """Holds the window. ``lab``: the config of a saved Lab run, for the setup that needs one;
    ``settings``: a folder for the window's preferences (never the person's own)."""

    def __init__(self, settings: Path, lab: MHAConfig | None = None) -> None:
        self.lab = lab
        self._settings = settings
        self.window = None
        self._screen = None
        self.skipped: list[str] = []  # setups that cannot be shown here, and why

    def _open(self, config: MHAConfig) -> None:
        from mha_explorer.qt.shell.app import build_window
        from mha_explorer.qt.shell.settings import Preferences

        self.window = build_window(config, Preferences(str(self._settings / "settings.ini")))
        self.window.set_reduced_motion(True, remember=False)  # each picture as it ends

    def close(self) -> None:
        if self.window is not None:
            self.window.set_presentation(False)
            self.window.close()
            self.window.controller.shutdown()
            self.window = None

    def _computed(self, config: MHAConfig) -> None:
        controller = self.window.controller
        if controller.config != config:
            controller.set_config(config)
        if not controller.is_running():
            controller.start()
        wait_until(lambda: controller.trace is not None and controller.trace.config == config,
                   TRACE_WAIT_S, f"the trace of {config.variant}")

    def _place(self, case: Case) -> None:
        w = self.window
        screen = next(s for s in QGuiApplication.screens() if s.name() == case.screen.name)
        if w.presenting and (case.mode != "presentation" or screen is not self._screen):
            w.set_presentation(False)
        if screen is not self._screen:
            w.setScreen(screen)
            w.setGeometry(screen.availableGeometry())
            if not w.isVisible():
                w.show()
            w.apply_default_layout()
            self._screen = screen
        w.set_theme(case.theme, remember=False)
        if case.mode == "presentation":
            w.set_presentation(True)

    def settle(self) -> None:
        """Every view caught up with the last change: the staggered updates done, the
        layouts and paints they asked for delivered."""
        controller = self.window.controller
        wait_until(lambda: controller.later.idle and controller.jobs.idle
                   and not self.window.stage_view.is_animating(),
                   TRACE_WAIT_S, "the views to catch up")
        for _ in range(3):
            QCoreApplication.sendPostedEvents()
            # widgets let go (a dock's placeholder): a nested loop may never reach their turn
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
            QCoreApplication.processEvents()

    def pictures(self, cases: Iterable[Case], stages: Callable[[tuple[str, ...]], Iterable[str]] | None = None
                 ) -> Iterator[Shown]:
        """Each case's stages (its own, or those ``stages`` picks from the plan's), as shown."""
        for case in cases:
            config = case.setup.make(self.lab)
            if config is None:
                note = f"{case.setup.name}: not available here"
                if note not in self.skipped:
                    self.skipped.append(note)
                continue
            if self.window is None:
                self._open(config)
            self._computed(config)
            self._place(case)
            plan = self.window.controller.plan.stage_ids
            stage = plan[0]
            for stage in (stages(plan) if stages else case.stages(plan)):
                self.window.controller.set_stage(stage)
                self.settle()
                yield self._read(case, stage)
            if case.mode == "normal":
                yield from self._docks(case, stage)

    def _read(self, case: Case, stage: str, front: str = "") -> Shown:
        return Shown(case, stage, read_window(self.window, picture_name(case, stage, front),
                                              case.screen.height, self.window.presenting), front)

    def _docks(self, case: Case, stage: str) -> Iterator[Shown]:
        """Each dock behind a tab, brought to the front, with each of its own tabs; then the
        layout as it was made."""
        from mha_explorer.qt.shell.layouts import bring_to_front

        w = self.window
        for dock in behind_tabs(w):
            bring_to_front(dock)
            wait_until(lambda d=dock: not d.visibleRegion().isEmpty(), SETTLE_WAIT_S,
                       f"the {_title(dock)} dock to come to the front")
            self.settle()
            yield self._read(case, stage, _title(dock))
            for tabs in dock.findChildren(QTabWidget):
                if not tabs.isVisible():
                    continue
                first = tabs.currentIndex()
                for i in range(tabs.count()):
                    if i == first or not tabs.isTabEnabled(i) or not tabs.isTabVisible(i):
                        continue
                    tabs.setCurrentIndex(i)
                    self.settle()
                    yield self._read(case, stage, f"{_title(dock)}: {tabs.tabText(i).replace('&', '')}")
                tabs.setCurrentIndex(first)
        w.apply_default_layout()
        self.settle()
