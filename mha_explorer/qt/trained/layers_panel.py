"""The Layers dock: every layer's heads at a glance, their pattern scores, and which
heads matter when switched off, for the trained model.

The numbers are computed on the worker thread (core.trained.layers_data through
qt.side_jobs) and arrive as numpy and dicts. Clicking a thumbnail opens that
layer and head: the layer becomes the config's, the stages move to the softmax,
and ``open_head`` (the heads panel's large view) shows the head.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QTabWidget, QVBoxLayout, QWidget

from mha_explorer.core.models.minilm import info
from mha_explorer.qt.trained.ablation_ranking import AblationRanking
from mha_explorer.qt.trained.patterns_table import PatternsTable

if TYPE_CHECKING:
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.side_jobs import SideJobs
    from mha_explorer.qt.trained.layer_grid import LayerGrid

LAYERS_JOB = "trained_layers"
ABLATION_JOB = "trained_ablation"
IDLE_NOTE = (f"Choose {info.DISPLAY_NAME} under Weights to see all {info.N_LAYERS} layers × "
             f"{info.N_HEADS} heads of a trained model, what each head does, and which heads matter.")


def _all_layers(pieces):
    from mha_explorer.core.display.layers import all_layers  # torch, on the worker

    return all_layers(pieces)


def _layer_ablation(layer, pieces):
    from mha_explorer.core.display.layers import layer_ablation  # torch, on the worker

    return layer_ablation(layer, pieces)


class LayersPanel(QWidget):
    """``scores_ready(layer, heads)`` carries each head's pattern scores for the shown
    layer (a list of {pattern: score}, heads 0-based), for badges elsewhere."""

    scores_ready = Signal(int, object)

    def __init__(self, controller: Controller, jobs: SideJobs,
                 open_head: Callable[[int], object] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("layers_panel")
        self._controller = controller
        self._jobs = jobs
        self._open_head = open_head
        self._asked_maps: tuple[str, ...] | None = None
        self._asked_ablation: tuple[int, tuple[str, ...]] | None = None
        self._scores: list[list[dict]] | None = None
        self._head = 0

        self.note = QLabel(IDLE_NOTE)
        self.note.setObjectName("layers_note")
        self.note.setWordWrap(True)
        # the grid (pyqtgraph) is built when first needed, not with the window
        self._grid: LayerGrid | None = None
        self._grid_slot = QWidget()
        self._trained = False
        self.patterns = PatternsTable()
        self.ranking = AblationRanking()
        tables = QTabWidget()
        tables.addTab(self.patterns, "Head patterns")
        tables.addTab(self.ranking, "Switch a head off")
        tables.setTabToolTip(1, "Each head of the layer switched off in turn, ranked by how much "
                             "the sentence embedding changes")
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self._grid_slot)
        split.addWidget(tables)
        self._split = split
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setSizes([1, 1])  # half each: the scores table needs its columns readable
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.note)
        layout.addWidget(split, 1)

        self.patterns.head_selected.connect(self._select_head)
        self.ranking.head_selected.connect(self._select_head)
        jobs.done.connect(self._on_done)
        jobs.failed.connect(self._on_failed)
        controller.config_changed.connect(self._on_config)
        self._on_config(controller.config)

    # requests ------------------------------------------------------------------------
    def _on_config(self, cfg: MHAConfig) -> None:
        trained = cfg.weights == info.WEIGHTS_NAME and cfg.tokens is not None
        self._trained = trained
        if self._grid is not None:
            self._grid.setEnabled(trained)
        if not trained:
            self.note.setText(IDLE_NOTE)
            return
        pieces = tuple(cfg.tokens)
        if pieces[:1] != (info.CLS,):
            return  # words on their way to becoming word pieces
        if pieces != self._asked_maps:
            self._asked_maps = pieces
            self.note.setText(f"Reading “{' '.join(pieces)}” through all {info.N_LAYERS} layers…")
            self._jobs.submit(LAYERS_JOB, _all_layers, pieces)
        self._ask_ablation()
        self._show_layer(cfg.layer)

    def _ask_ablation(self) -> None:
        """Twelve reruns of the rest of the model: only while the dock is on screen."""
        cfg = self._controller.config
        wanted = (cfg.layer, tuple(cfg.tokens or ()))
        if (self.isVisible() and cfg.weights == info.WEIGHTS_NAME and wanted[1][:1] == (info.CLS,)
                and wanted != self._asked_ablation):
            self._asked_ablation = wanted
            self._jobs.submit(ABLATION_JOB, _layer_ablation, *wanted)

    @property
    def grid(self) -> LayerGrid:
        """The 6 × 12 grid of maps, made on first use (it loads pyqtgraph)."""
        if self._grid is None:
            from mha_explorer.qt.trained.layer_grid import LayerGrid

            grid = LayerGrid()
            grid.setObjectName("layer_grid")
            grid.setEnabled(self._trained)
            grid.head_chosen.connect(self.open_layer_head)
            self._split.replaceWidget(0, grid)
            self._grid_slot.deleteLater()
            self._grid = grid
        return self._grid

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if self._trained:
            self.grid  # noqa: B018 - trained maps to show: build it
        self._ask_ablation()

    def _on_done(self, kind: str, result: object) -> None:
        if kind == LAYERS_JOB and isinstance(result, dict):
            if tuple(result["tokens"]) != self._asked_maps:
                return
            self.grid.set_maps(result["maps"], result["badges"])
            self._scores = result["scores"]
            self.note.setText(f"{info.DISPLAY_NAME}, {len(result['tokens'])} word pieces. Rows are "
                              "layers, columns heads; click a map to open that layer and head.")
            self._show_layer(self._controller.config.layer)
        elif (kind == ABLATION_JOB and isinstance(result, dict)
              and (result["layer"], tuple(result["tokens"])) == self._asked_ablation):
            self.ranking.set_ranking(result["layer"], result["rows"])

    def _on_failed(self, kind: str, message: str) -> None:
        if kind in (LAYERS_JOB, ABLATION_JOB):
            self.note.setText(f"Not computed: {message}")

    def _show_layer(self, layer: int) -> None:
        if self._scores is None or not 1 <= layer <= len(self._scores):
            return
        heads = self._scores[layer - 1]
        self.patterns.set_scores(layer, heads)
        self.grid.set_current(layer, min(self._head, len(heads) - 1))
        self.scores_ready.emit(layer, heads)

    # choices -------------------------------------------------------------------------
    def open_layer_head(self, layer: int, head: int) -> None:
        """Make ``layer`` (1-based) the config's and show ``head`` (0-based) large."""
        self._head = head
        c = self._controller
        if c.config.weights == info.WEIGHTS_NAME and c.config.layer != layer:
            c.update(layer=layer)
        self.grid.set_current(layer, head)
        c.set_stage("softmax")
        if self._open_head is not None:
            self._open_head(head)

    def _select_head(self, head: int) -> None:
        self._head = head
        self.grid.set_current(self._controller.config.layer, head)

    @property
    def head_scores(self) -> list[dict] | None:
        """The shown layer's pattern scores per head, once computed."""
        layer = self._controller.config.layer
        return self._scores[layer - 1] if self._scores and 1 <= layer <= len(self._scores) else None
