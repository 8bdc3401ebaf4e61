"""The Generation dock: the KV cache growing step by step, and attention in tiles.

Fed from the current config: the decode steps and the tiles are computed on the
worker thread (core.display.generation through qt.jobs) and arrive as numpy
and dicts. With a view focused, the stage keys step it instead of the stages:
Right/PageDown next, Left/PageUp back, Home and End, Space plays and pauses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QTabWidget, QVBoxLayout, QWidget

from mha_explorer.qt.decode.decode_view import DecodeView
from mha_explorer.qt.decode.decoder_panel import DecoderPanel
from mha_explorer.qt.decode.tiles_view import TilesView
from mha_explorer.qt.jobs import JobDone, JobFailed, JobKind
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.scrolling import scroll_area

if TYPE_CHECKING:
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

DECODE_JOB = JobKind.decode
TILES_JOB = JobKind.tiles
PLAY_MS = 700
DEBOUNCE_MS = 150  # as the controller waits for edits to pause
STEP_KEYS = {Qt.Key.Key_Right: "next", Qt.Key.Key_PageDown: "next", Qt.Key.Key_Down: "next",
             Qt.Key.Key_Left: "previous", Qt.Key.Key_PageUp: "previous", Qt.Key.Key_Up: "previous",
             Qt.Key.Key_Home: "first", Qt.Key.Key_End: "last", Qt.Key.Key_Space: "play"}


def _decode(cfg, prompt, steps, layers, batch, *, cancel, progress):
    from mha_explorer.core.display.generation import decode_data  # torch, on the worker

    return decode_data(cfg, prompt, steps, layers, batch, cancel=cancel, progress=progress)


def _tiles(cfg, block, *, cancel, progress):
    from mha_explorer.core.display.generation import tiles_data  # torch, on the worker

    return tiles_data(cfg, block, cancel=cancel, progress=progress)


def _spin(name: str, tip: str, low: int, high: int, value: int) -> QSpinBox:
    spin = QSpinBox()
    spin.setObjectName(name)
    spin.setRange(low, high)
    spin.setValue(value)
    spin.setAccessibleName(tip.split(":")[0])
    spin.setToolTip(tip)
    spin.setKeyboardTracking(False)  # one request per typed number, not per digit
    return spin


class _Stepper:
    """One view's stepping: next/previous/first/last through its own methods."""

    def __init__(self, count, index, set_index) -> None:
        self.count, self.index, self.set_index = count, index, set_index

    def act(self, action: str) -> bool:
        """Do ``action``; False when it changed nothing (the end of the steps)."""
        before = self.index()
        target = {"next": before + 1, "previous": before - 1, "first": 0,
                  "last": self.count() - 1}[action]
        self.set_index(target)
        return self.index() != before


class GenerationPanel(QWidget):
    def __init__(self, controller: Controller, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("generation_panel")
        self._controller = controller
        self._jobs = jobs
        self.decode_view = DecodeView()
        self.tiles_view = TilesView()
        self._steppers = {
            self.decode_view: _Stepper(lambda: self.decode_view.step_count, self.decode_view.step,
                                       self.decode_view.set_step),
            self.tiles_view: _Stepper(lambda: self.tiles_view.tile_count, self.tiles_view.tile_index,
                                      self.tiles_view.set_tile),
        }
        self.prompt_spin = _spin("decode_prompt", "Prompt tokens P: fed in one pass at step 0", 1, 4096, 8)
        self.steps_spin = _spin("decode_steps", "Generated tokens N: one step each", 1, 4096, 8)
        self.layers_spin = _spin("decode_layers", "Layers in the model: for the whole model's cache",
                                 1, 512, 12)
        self.br_spin = _spin("tile_rows", "Query rows per tile (Br)", 1, 1 << 16, 4)
        self.bc_spin = _spin("tile_keys", "Keys per tile (Bc)", 1, 1 << 16, 4)
        self.note = QLabel()
        self.note.setObjectName("generation_note")
        self.note.setWordWrap(True)
        self.tabs = QTabWidget()
        self.tabs.addTab(self._page(self.decode_view, ("prompt P", self.prompt_spin),
                                    ("steps N", self.steps_spin), ("layers", self.layers_spin)),
                         "Decode: KV cache")
        self.tabs.addTab(self._page(self.tiles_view, ("rows Br", self.br_spin), ("keys Bc", self.bc_spin)),
                         "Tiles: online softmax")
        self.decoder_panel = DecoderPanel(controller, jobs)  # a trained decoder writing
        self.tabs.addTab(scroll_area(self.decoder_panel, sideways=True), "A trained model writes")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.note)

        self._play = QTimer(self, interval=PLAY_MS)
        self._play.timeout.connect(self._advance)
        self._wanted: set[str] = set()  # what to ask for once shown and the edits pause
        self._debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self._debounce.timeout.connect(self._send)
        for view in self._steppers:
            view.installEventFilter(self)
        for spin in (self.prompt_spin, self.steps_spin, self.layers_spin):
            spin.valueChanged.connect(self.request_decode)
        for spin in (self.br_spin, self.bc_spin):
            spin.valueChanged.connect(self.request_tiles)
        jobs.done.connect(self._on_done)
        jobs.failed.connect(self._on_failed)
        controller.config_changed.connect(self._on_config)
        controller.batch_index_changed.connect(self.request_decode)
        self._on_config(controller.config)

    @staticmethod
    def _page(view: QWidget, *fields: tuple[str, QSpinBox]) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        column.setContentsMargins(2, 2, 2, 2)
        row = nested(column, QHBoxLayout())
        for text, spin in fields:
            label = QLabel(text)
            label.setBuddy(spin)
            row.addWidget(label)
            row.addWidget(spin)
        row.addStretch(1)
        column.addWidget(view, 1)
        return page

    # requests ------------------------------------------------------------------------
    def _on_config(self, _cfg: MHAConfig) -> None:
        self.request_decode()
        self.request_tiles()

    def request_decode(self, *_args) -> None:
        self._want(DECODE_JOB)

    def request_tiles(self, *_args) -> None:
        self._want(TILES_JOB)

    def _want(self, kind: str) -> None:
        """Ask once the edits pause, and only while the dock is on screen: hidden, the
        worker's time goes to the stages."""
        self._wanted.add(kind)
        if self.isVisible():
            self._debounce.start()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if self._wanted:
            self._debounce.start()

    def _send(self) -> None:
        c = self._controller
        if DECODE_JOB in self._wanted:
            self._jobs.submit(DECODE_JOB, _decode, c.config, self.prompt_spin.value(),
                              self.steps_spin.value(), self.layers_spin.value(), c.batch_index,
                              cancellable=True)
        if TILES_JOB in self._wanted:
            self._jobs.submit(TILES_JOB, _tiles, c.config, (self.br_spin.value(), self.bc_spin.value()),
                              cancellable=True)
        self._wanted.clear()

    def _on_done(self, done: JobDone) -> None:
        kind, result = done.kind, done.result
        if not isinstance(result, dict):
            return
        if kind == DECODE_JOB:
            self.decode_view.set_data(result["steps"], scores=result["scores"], weights=result["weights"],
                                      growth=result["growth"], layers=result["layers"])
            self.note.setText(" ".join(result["notes"]))
        elif kind == TILES_JOB:
            self.tiles_view.set_data(result["states"], result["plan"], result["records"])
            if result["notes"]:
                self.note.setText(" ".join(result["notes"]))

    def _on_failed(self, failed: JobFailed) -> None:
        if failed.kind in (DECODE_JOB, TILES_JOB):
            what = "Decode" if failed.kind == DECODE_JOB else "Tiles"
            self.note.setText(f"{what} not computed: {failed.message}")

    # stepping ------------------------------------------------------------------------
    def current_view(self) -> QWidget:
        return self.decode_view if self.tabs.currentIndex() == 0 else self.tiles_view

    def step(self, action: str, view: QWidget | None = None) -> bool:
        """"next", "previous", "first", "last" or "play" on ``view`` (the shown one)."""
        view = view or self.current_view()
        if action == "play":
            if self._play.isActive():
                self._play.stop()
            else:
                if not self._steppers[view].act("next"):
                    self._steppers[view].act("first")
                self._play.start()
            return True
        self._play.stop()
        return self._steppers[view].act(action)

    @property
    def playing(self) -> bool:
        return self._play.isActive()

    def _advance(self) -> None:
        if not self._steppers[self.current_view()].act("next"):
            self._play.stop()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        """A focused view takes the stage keys from the window's shortcuts."""
        if watched in self._steppers and event.type() in (QEvent.Type.ShortcutOverride,
                                                           QEvent.Type.KeyPress):
            action = STEP_KEYS.get(event.key()) if not event.modifiers() else None
            if action is not None:
                if event.type() == QEvent.Type.KeyPress:
                    self.step(action, watched)
                event.accept()
                return True
        return super().eventFilter(watched, event)
