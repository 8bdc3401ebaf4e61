"""The Generation dock: the KV cache growing step by step, and attention in tiles.

Fed from the current config: the decode steps and the tiles are computed on the
worker thread (core.display.generation through qt.jobs) and arrive as numpy
and dicts. With a view focused, the stage keys step it instead of the stages:
Right/PageDown next, Left/PageUp back, Home and End, Space plays and pauses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QTabWidget, QToolButton, QVBoxLayout, QWidget

from mha_explorer.core.plan.kv_cache import model_layers
from mha_explorer.qt.decode.decode_view import DecodeView
from mha_explorer.qt.decode.decoder_panel import DecoderPanel
from mha_explorer.qt.decode.tiles_view import TilesView
from mha_explorer.qt.in_sight import SightWatch, in_sight
from mha_explorer.qt.jobs import JobDone, JobFailed, JobKind
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.scrolling import scroll_area
from mha_explorer.qt.tab_names import every_tab_in_sight

if TYPE_CHECKING:
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

DECODE_JOB = JobKind.decode
TILES_JOB = JobKind.tiles
PLAY_MS = 700
DEBOUNCE_MS = 150  # as the controller waits for edits to pause
LAYERS = 12  # the model's layer count for the whole cache, when no trained model or preset says it
UPDATING = "Updating for the new configuration…"  # until the panel's answers for it come
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


# the buttons above each view: (action, text, what it does); their keys are STEP_KEYS
TRANSPORT = (("first", "|◀ First", "the first"), ("previous", "◀ Back", "the previous"),
             ("play", "▶ Play", "play or pause"), ("next", "Next ▶", "the next"),
             ("last", "Last ▶|", "the last"))


def keys_for(action: str) -> str:
    names = {Qt.Key.Key_Right: "Right", Qt.Key.Key_PageDown: "PageDown", Qt.Key.Key_Down: "Down",
             Qt.Key.Key_Left: "Left", Qt.Key.Key_PageUp: "PageUp", Qt.Key.Key_Up: "Up",
             Qt.Key.Key_Home: "Home", Qt.Key.Key_End: "End", Qt.Key.Key_Space: "Space"}
    return ", ".join(names[k] for k, a in STEP_KEYS.items() if a == action)


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
                                 1, 512, LAYERS)
        self._given_layers: int | None = None  # the count last taken from the model or preset
        self.br_spin = _spin("tile_rows", "Query rows per tile (Br)", 1, 1 << 16, 4)
        self.bc_spin = _spin("tile_keys", "Keys per tile (Bc)", 1, 1 << 16, 4)
        self.note = QLabel()
        self.note.setObjectName("generation_note")
        self.note.setWordWrap(True)
        # why the tiled peak can be the larger one, worked out from the numbers shown
        self.peak_words = QLabel(objectName="tiles_peak_words", wordWrap=True)
        self.peak_words.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.transport: dict[QWidget, dict[str, QToolButton]] = {}
        self.position: dict[QWidget, QLabel] = {}
        self._key_targets: dict[QObject, QWidget] = {}  # a widget whose keys step this view
        self.tabs = QTabWidget()
        self.tabs.addTab(self._page(self.decode_view, "step", ("prompt P", self.prompt_spin),
                                    ("steps N", self.steps_spin), ("layers", self.layers_spin)),
                         "Decode: KV cache")
        self.tabs.addTab(self._page(self.tiles_view, "tile", ("rows Br", self.br_spin),
                                    ("keys Bc", self.bc_spin), under=self.peak_words),
                         "Tiles: online softmax")
        self.decoder_panel = DecoderPanel(controller, jobs)  # a trained decoder writing
        self.tabs.addTab(scroll_area(self.decoder_panel, sideways=True), "A trained model writes")
        every_tab_in_sight(self.tabs)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.note)

        self._play = QTimer(self, interval=PLAY_MS)
        self._play.timeout.connect(self._advance)
        self._wanted: set[str] = set()  # what to ask for once shown and the edits pause
        self._debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self._debounce.timeout.connect(self._send)
        self._sight = SightWatch(self, self._came_into_sight)
        for widget in self._key_targets:
            widget.installEventFilter(self)
        self.decode_view.step_changed.connect(lambda _i: self._show_position(self.decode_view))
        self.tiles_view.tile_changed.connect(lambda _i: self._show_position(self.tiles_view))
        for spin in (self.prompt_spin, self.steps_spin, self.layers_spin):
            spin.valueChanged.connect(self.request_decode)
        for spin in (self.br_spin, self.bc_spin):
            spin.valueChanged.connect(self.request_tiles)
        jobs.done.connect(self._on_done)
        jobs.failed.connect(self._on_failed)
        controller.config_changed.connect(self._on_config)
        controller.batch_index_changed.connect(self.request_decode)
        self._on_config(controller.config)

    def _page(self, view: QWidget, item: str, *fields: tuple[str, QSpinBox],
              under: QWidget | None = None) -> QWidget:
        """The sizes, then the buttons that step and play the view (with its keys in their
        tips; a focused button takes the keys too), then the view."""
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
        row = nested(column, QHBoxLayout())  # a row of its own: the dock stays narrow
        buttons = {}
        for action, text, what in TRANSPORT:
            button = QToolButton(text=text, objectName=f"{item}_{action}")
            words = f"{what.capitalize()} {item}" if action != "play" else f"Play the {item}s, or pause"
            button.setToolTip(f"{words} ({keys_for(action)})")
            button.setAccessibleName(words)
            button.clicked.connect(lambda _=False, a=action, v=view: self.step(a, v))
            row.addWidget(button)
            buttons[action] = button
            self._key_targets[button] = view
        self.transport[view] = buttons
        self.position[view] = QLabel(objectName=f"{item}_position")
        row.addWidget(self.position[view])
        row.addStretch(1)
        self._key_targets[view] = view
        column.addWidget(view, 1)
        if under is not None:
            column.addWidget(under)
        return page

    def _show_position(self, view: QWidget) -> None:
        stepper = self._steppers[view]
        item = "step" if view is self.decode_view else "tile"
        count = stepper.count()
        self.position[view].setText(f"{item} {stepper.index() + 1:,} of {count:,}" if count else "")
        for action in ("first", "previous"):
            self.transport[view][action].setEnabled(stepper.index() > 0)
        for action in ("next", "last"):
            self.transport[view][action].setEnabled(stepper.index() < count - 1)
        self.transport[view]["play"].setEnabled(count > 1)
        self._show_playing()

    def _show_playing(self) -> None:
        for buttons in self.transport.values():
            buttons["play"].setText("▮▮ Pause" if self.playing else "▶ Play")

    # requests ------------------------------------------------------------------------
    def _on_config(self, cfg: MHAConfig) -> None:
        self._follow_layers(cfg)
        if self.decode_view.step_count or self.tiles_view.tile_count:
            self.note.setText(UPDATING)  # what is drawn is the previous config's until then
        self.request_decode()
        self.request_tiles()

    def _follow_layers(self, cfg: MHAConfig) -> None:
        """The whole model's layer count from the trained model's description or the preset the
        config is; back to the usual count when neither says it (unless the person set one)."""
        known = model_layers(cfg)
        if known > 1:
            self._given_layers = known
            self.layers_spin.setValue(known)
        elif self._given_layers is not None:
            if self.layers_spin.value() == self._given_layers:
                self.layers_spin.setValue(LAYERS)
            self._given_layers = None

    def request_decode(self, *_args) -> None:
        self._want(DECODE_JOB)

    def request_tiles(self, *_args) -> None:
        self._want(TILES_JOB)

    def _want(self, kind: str) -> None:
        """Ask once the edits pause, and only while the dock is in sight: behind another tab,
        the worker's time goes to the stages (and nothing runs that nobody asked to see)."""
        self._wanted.add(kind)
        if in_sight(self):
            self._debounce.start()

    def _came_into_sight(self) -> None:
        if self._wanted:
            self._debounce.start()

    def _send(self) -> None:
        if not in_sight(self):  # put behind a tab during the pause: asked for when it comes back
            return
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
            self._show_position(self.decode_view)
        elif kind == TILES_JOB:
            self.tiles_view.set_data(result["states"], result["plan"], result["records"])
            self.peak_words.setText(result.get("peak_words", ""))
            self._show_position(self.tiles_view)
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
            self._show_playing()
            return True
        self._play.stop()
        moved = self._steppers[view].act(action)
        self._show_playing()
        return moved

    @property
    def playing(self) -> bool:
        return self._play.isActive()

    def _advance(self) -> None:
        if not self._steppers[self.current_view()].act("next"):
            self._play.stop()
            self._show_playing()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        """A focused view takes the stage keys from the window's shortcuts."""
        view = self._key_targets.get(watched)
        if view is not None and event.type() in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            action = STEP_KEYS.get(event.key()) if not event.modifiers() else None
            if action is not None:
                if event.type() == QEvent.Type.KeyPress:
                    self.step(action, view)
                event.accept()
                return True
        return super().eventFilter(watched, event)
