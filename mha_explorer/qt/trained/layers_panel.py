"""The Layers dock: every layer's heads at a glance, their pattern scores, and which
heads matter when switched off, for the trained model.

The numbers are computed on the worker thread (core.display.layers through qt.jobs)
and arrive as typed values of numpy arrays and floats. Clicking a thumbnail opens that
layer and head: the layer becomes the config's, the stages move to the softmax,
and ``open_head`` (the heads panel's large view) shows the head.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QTabWidget, QVBoxLayout, QWidget

from mha_explorer.core.config.rules import layer_fields
from mha_explorer.core.display.pattern_columns import pattern_columns
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS, model_named
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.qt.in_sight import SightWatch, in_sight
from mha_explorer.qt.jobs import JobDone, JobFailed, JobKind
from mha_explorer.qt.scrolling import scroll_area
from mha_explorer.qt.tab_names import every_tab_in_sight
from mha_explorer.qt.trained.ablation_ranking import AblationRanking
from mha_explorer.qt.trained.induction_view import InductionView
from mha_explorer.qt.trained.patterns_table import PatternsTable
from mha_explorer.qt.trained.what_if import WhatIfView

if TYPE_CHECKING:
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs
    from mha_explorer.qt.trained.layer_grid import LayerGrid

LAYERS_JOB = JobKind.layers
ABLATION_JOB = JobKind.ablation
IDLE_NOTE = ("Choose a trained model under Weights (" + " or ".join(m.name for m in MODELS.values())
             + ") to see every layer's heads at once, what each head does, and which heads matter.")


def _all_layers(model_key, pieces, *, cancel, progress):
    from mha_explorer.core.display.layers import all_layers  # torch, on the worker

    return all_layers(model_key, pieces, cancel=cancel, progress=progress)


def _layer_ablation(model_key, layer, pieces, *, cancel, progress):
    from mha_explorer.core.display.layers import layer_ablation  # torch, on the worker

    return layer_ablation(model_key, layer, pieces, cancel=cancel, progress=progress)


class LayersPanel(QWidget):
    """``scores_ready(layer, heads)`` carries each head's pattern scores for the shown
    layer (a list of {pattern: score}, heads 0-based), for badges elsewhere."""

    scores_ready = Signal(int, object)

    def __init__(self, controller: Controller, jobs: Jobs,
                 open_head: Callable[[int], object] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("layers_panel")
        self._controller = controller
        self._jobs = jobs
        self._open_head = open_head
        self._asked_maps: tuple[str, tuple[str, ...]] | None = None
        self._asked_ablation: tuple[str, int, tuple[str, ...]] | None = None
        self._scores: list[list[dict]] | None = None
        self._model_key: str | None = None  # the model whose columns the table has
        self._head = 0
        self._split_before_what_if: list[int] | None = None  # the split the What-if tab widened

        self.note = QLabel(IDLE_NOTE)
        self.note.setObjectName("layers_note")
        self.note.setWordWrap(True)
        # the grid (pyqtgraph) is built when first needed, not with the window
        self._grid: LayerGrid | None = None
        self._grid_slot = QWidget()
        self._trained = False
        self.patterns = PatternsTable()
        self.ranking = AblationRanking()
        tables = self.tables = QTabWidget()
        tables.addTab(self.patterns, "Head patterns")
        tables.addTab(self.ranking, "Switch a head off")
        tables.setTabToolTip(1, "Each head of the layer switched off in turn, ranked by how much "
                             "the sentence embedding changes")
        self.induction = InductionView(controller, jobs)
        # scrolled: its minimum never sets the dock's height
        tables.addTab(scroll_area(self.induction, sideways=True), "Induction heads")
        tables.setTabToolTip(2, "A decoder shown random tokens twice: the heads that copy the token "
                             "after an earlier occurrence")
        self.what_if = WhatIfView(controller, jobs)
        self._what_if_area = scroll_area(self.what_if, sideways=True)
        tables.addTab(self._what_if_area, "What if")
        tables.setTabToolTip(3, "A decoder's heads switched off, patched between two prompts, and its "
                             "residual stream read after every layer: what each head does")
        self.what_if.head_chosen.connect(self.open_layer_head)
        every_tab_in_sight(tables)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self._grid_slot)
        split.addWidget(tables)
        self._split = split
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setSizes([1, 1])  # half each: the scores table needs its columns readable
        self._dragged = False  # a person's own split stands (resizeEvent)
        split.splitterMoved.connect(lambda *_: setattr(self, "_dragged", True))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.note)
        layout.addWidget(split, 1)

        tables.currentChanged.connect(self._make_room)
        self._sight = SightWatch(self, self._came_into_sight)
        self.patterns.head_selected.connect(self._select_head)
        self.ranking.head_selected.connect(self._select_head)
        jobs.done.connect(self._on_done)
        jobs.failed.connect(self._on_failed)
        controller.config_changed.connect(self._on_config)
        self._on_config(controller.config)

    def resizeEvent(self, event) -> None:  # Qt's API
        super().resizeEvent(event)
        # a dock taller than wide (a side column) puts the tables under the grid: side by
        # side each had 150 px at 1024×768, the tables' names cut to "H…" and "I…"
        upright = self.height() > self.width()
        wanted = Qt.Orientation.Vertical if upright else Qt.Orientation.Horizontal
        split = self._split
        sizes = split.sizes()
        widened = self._split_before_what_if is not None  # the What-if pages' own split
        lopsided = not self._dragged and not widened and sum(sizes) and min(sizes) < 0.4 * sum(sizes)
        if split.orientation() != wanted or lopsided:
            split.setOrientation(wanted)  # half each, as the panel is now (a dock's first
            length = split.height() if upright else split.width()  # sizes are a tab's few px)
            split.setSizes([length // 2, length - length // 2])
            self._split_before_what_if = None
            self._make_room(self.tables.currentIndex())  # the What-if pages take their room again

    # requests ------------------------------------------------------------------------
    def _on_config(self, cfg: MHAConfig) -> None:
        model = model_named(cfg.weights)
        trained = model is not None and cfg.tokens is not None
        self._trained = trained
        # switching a head off is measured on an encoder's sentence embedding; induction heads
        # are a decoder's
        decoder = model is not None and model.causal
        self.tables.setTabEnabled(1, not decoder)
        self.tables.setTabEnabled(2, decoder)
        self.tables.setTabEnabled(3, decoder)
        self.tables.setTabToolTip(1, "an encoder's measure: a decoder's heads are ranked by their patterns"
                                  if decoder else "Each head of the layer switched off in turn, ranked by "
                                  "how much the sentence embedding changes")
        self._forget_older(cfg)
        if self._grid is not None:
            self._grid.setEnabled(trained)
        if not trained:
            self.note.setText(IDLE_NOTE)
            return
        pieces = tuple(cfg.tokens)
        if not runtime.owns(model, pieces):
            return  # words on their way to becoming the model's tokens
        if (model.key, pieces) != self._asked_maps:
            self._asked_maps = (model.key, pieces)
            self.note.setText(f"Reading “{' '.join(pieces)}” through all {model.layers} layers…")
            self._jobs.submit(LAYERS_JOB, _all_layers, model.key, pieces, cancellable=True)
        self._ask_ablation()
        self._show_layer(cfg.layer)

    def _forget_older(self, cfg: MHAConfig) -> None:
        """Clear what belongs to another model, text or layer than ``cfg``'s (a newer answer is
        asked for): the grid and the scores with the model or the text, the ranking with the
        layer too, and the columns and the induction heads with the model."""
        model = model_named(cfg.weights)
        key = model.key if model is not None else None
        if key != self._model_key:
            self._model_key = key
            self.patterns.set_columns(pattern_columns(model) if model is not None else ())
            self.induction.clear()
        if (key, tuple(cfg.tokens or ())) != self._asked_maps:
            self._asked_maps = None
            self._scores = None
            self.patterns.clear_scores()
            if self._grid is not None:
                self._grid.clear()
            if key is None:  # no model: no job of its answers is wanted any more
                self._jobs.cancel(LAYERS_JOB)
                self._jobs.cancel(ABLATION_JOB)
        if (cfg.weights, cfg.layer, tuple(cfg.tokens or ())) != self._asked_ablation:
            self._asked_ablation = None
            self.ranking.clear_ranking()

    def _ask_ablation(self) -> None:
        """Twelve reruns of the rest of the model: only while the dock is in sight (not behind
        another tab)."""
        cfg = self._controller.config
        model = model_named(cfg.weights)
        wanted = (cfg.weights, cfg.layer, tuple(cfg.tokens or ()))
        if (in_sight(self) and model is not None and not model.causal  # an encoder's embedding
                and runtime.owns(model, wanted[2]) and wanted != self._asked_ablation):
            self._asked_ablation = wanted
            self._jobs.submit(ABLATION_JOB, _layer_ablation, *wanted, cancellable=True)

    def _make_room(self, index: int) -> None:
        """The What-if pages draw two layers × heads maps side by side: while their tab is open,
        the thumbnails give up the width those want, all of it on a narrow dock (a head clicked
        there opens in the stage view, not in the thumbnails); another tab gets the split back."""
        if self.tables.widget(index) is self._what_if_area:
            QTimer.singleShot(0, self._widen_what_if)
        elif self._split_before_what_if is not None:
            self._split.setSizes(self._split_before_what_if)
            self._split_before_what_if = None

    def _widen_what_if(self) -> None:
        """Along the split (across when the tables sit beside the grid, down when under it)."""
        area = self._what_if_area
        if not area.isVisible() or self._split_before_what_if is not None:
            return
        thumbnails, tables = self._split.sizes()
        if thumbnails == 0:
            return
        least = (self._grid or self._grid_slot).minimumSizeHint()
        if self._split.orientation() == Qt.Orientation.Horizontal:
            # all the width the thumbnails can spare: the pages' maps and ranking sit side by
            # side only in more than they ask for alone
            given = thumbnails - least.width()
        else:  # the height the pages lack, or all of it when the thumbnails cannot spare that
            missing = self.what_if.sizeHint().height() - area.viewport().height()
            spare = thumbnails - least.height()
            given = missing if spare >= missing else thumbnails
        if given <= 0:
            return
        self._split_before_what_if = [thumbnails, tables]
        self._split.setSizes([thumbnails - given, tables + given])

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

    def _came_into_sight(self) -> None:
        self._make_room(self.tables.currentIndex())
        if self._trained:
            self.grid  # noqa: B018 - trained maps to show: build it
        self._ask_ablation()

    def _on_done(self, done: JobDone) -> None:
        kind, result = done.kind, done.result
        if kind not in (LAYERS_JOB, ABLATION_JOB):
            return
        # loaded by the job that made the answer; at start-up it would bring numpy in
        from mha_explorer.core.display.layers import AblationData, LayersData

        if kind == LAYERS_JOB and isinstance(result, LayersData):
            if (result.model, result.tokens) != self._asked_maps:
                return
            model = model_named(result.model)
            self.grid.set_maps(result.maps, result.badges, model.layer_kinds)
            self._scores = result.scores
            self.note.setText(f"{model.title}, {len(result.tokens)} tokens. Rows are layers, columns "
                              "heads; click a map to open that layer and head.")
            self._show_layer(self._controller.config.layer)
        elif (kind == ABLATION_JOB and isinstance(result, AblationData)
              and (result.model, result.layer, result.tokens) == self._asked_ablation):
            self.ranking.set_ranking(result.layer, result.rows)

    def _on_failed(self, failed: JobFailed) -> None:
        if failed.kind in (LAYERS_JOB, ABLATION_JOB):
            self.note.setText(f"Not computed: {failed.message}")

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
        model = model_named(c.config.weights)
        if model is not None and c.config.layer != layer:
            c.update(**layer_fields(model, layer))
        self.grid.set_current(layer, head)
        c.set_stage(StageId.softmax)
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
