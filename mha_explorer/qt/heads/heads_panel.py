"""A heatmap for every head: the panel that shows the current stage, one map per
head, for the chosen batch element.

Maps come from the trace as the engine computed it (see heatmap_model); this
panel only lays them out and draws them. Cells are kept and refreshed with
setImage, so stepping through stages or moving the batch selector never
rebuilds the grid; only a new head count or a new width does. A cell is built in the
event-loop turn that first draws into it, a few per turn (building DeepSeek-V3's 128 at
once held the loop for 0.6 s); until then a blank stand-in of a cell's size keeps its
place, so the grid's shape is settled at once.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.display.head_maps import ATTENTION_STAGES, StageMaps, head_entropies
from mha_explorer.core.display.variant_maps import offers_tensor_choice, stage_maps
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.qt.every_row import EveryRowBar
from mha_explorer.qt.heads.axis_words import AxisWords
from mha_explorer.qt.heads.cell_grid import CellGrid, CellPlace
from mha_explorer.qt.heads.color_bar import ColorBarView
from mha_explorer.qt.heads.focused_head import PresentingMaps
from mha_explorer.qt.heads.head_cell import HeatmapCell
from mha_explorer.qt.heads.head_zoom import HeadDialog
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.shell.projector_style import grows_with_text
from mha_explorer.qt.stage.stage_notes import weights_note
from mha_explorer.qt.whole_rows import WholeRowsArea

if TYPE_CHECKING:
    from mha_explorer.core.stages.trace import Trace
    from mha_explorer.qt.controller import Controller

# maps set (and so painted) in one event-loop turn: a small config's maps all at once
CELLS_PER_TURN = 4
PIXELS_PER_TURN = 1 << 18
# of a larger set's, cells built in the turn too (a cell's build costs about four draws)
NEW_CELLS_PER_TURN = 2


class HeatmapPanel(PresentingMaps, CellGrid, QWidget):
    """One map per head for the current stage and batch element.

    Public for the main window and the tests: ``cells`` (the visible cells, in
    head order), ``image_items``, ``color_bar``, ``maps`` (the StageMaps drawn),
    ``columns``, ``batch_spin``, ``tensor_combo``, ``stretch_check``, ``rows_spin``, ``caption``,
    ``hover_label``, ``hover_text()``, ``open_head()`` and ``dialog``.
    ``images_updated`` is emitted each time the images show new data.
    """

    images_updated = Signal()

    def __init__(self, controller: Controller, parent=None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.maps: StageMaps | None = None
        self.dialog: HeadDialog | None = None
        self.columns = 0
        self._pool: list[HeatmapCell] = []  # built cells: cell i is map i's
        self._places: list[CellPlace] = []  # stand-ins for the cells not built yet
        self._shown = 0
        self._stale = False
        self._laying_out = False
        self._entropy_key: tuple = (None, -1)  # (trace, batch) the cached entropies belong to
        self._entropies: tuple[float, ...] | None = None
        self._figure_only = False  # an export's picture: no controls, no scroll bar
        self._presenting = False  # projector: the chosen head large, every head small beside it
        self._thumb_footers = True  # presentation may leave the small maps' footers to hover

        self._make_controls()
        self.caption = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.weights_note = QLabel(wordWrap=True)  # random weights: the maps mean nothing yet
        self.weights_note.setObjectName("heads_weights_note")
        self.weights_note.setProperty("role", "muted")
        self.hover_label = QLabel(  # plain: a token such as "<h1>" is a word, not markup
            " ", textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse,
            textFormat=Qt.TextFormat.PlainText)
        self.hover_label.setMinimumHeight(self.hover_label.fontMetrics().height() + 4)

        layout = QVBoxLayout(self)
        controls = nested(layout, QHBoxLayout())
        self.batch_label = batch_label = QLabel("&batch element")
        batch_label.setBuddy(self.batch_spin)
        self.tensor_label = QLabel("&tensor")
        self.tensor_label.setBuddy(self.tensor_combo)
        self.rows_label = QLabel("first &row")
        self.rows_label.setBuddy(self.rows_spin)
        for w in (batch_label, self.batch_spin, self.tensor_label, self.tensor_combo,
                  self.stretch_check, self.rows_label, self.rows_spin):
            controls.addWidget(w)
        # what the pointer is over, in the controls' row: a line of its own under the
        # maps took a line of height from every map
        self.hover_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        controls.addWidget(self.hover_label, 1)

        self._grid_host = QWidget()
        self._grid = QGridLayout(self._grid_host)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setSpacing(4)
        self.scroll = WholeRowsArea()  # a map never half in sight at the grid's edge
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(self._grid_host)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.viewport().installEventFilter(self)

        self.bar_view = ColorBarView()
        self.color_bar = self.bar_view.bar

        layout.addWidget(self.caption)
        self.every_row = EveryRowBar(controller)  # a stage past the softmax of picked rows
        layout.addWidget(self.every_row)
        layout.addWidget(self.weights_note)
        self.axis_words = AxisWords()  # what the maps' rows and columns are, over all of them
        layout.addWidget(self.axis_words)
        maps_row = nested(layout, QHBoxLayout(), 1)
        self._make_pair(maps_row)  # the grid, and beside it presentation's large map
        maps_row.addWidget(self.bar_view)

        self.batch_spin.valueChanged.connect(controller.set_batch_index)
        self.tensor_combo.currentIndexChanged.connect(self.refresh)
        self.stretch_check.toggled.connect(self.refresh)
        self.rows_spin.valueChanged.connect(controller.set_rows_from)
        controller.head_changed.connect(lambda _h: self._show_focus())
        controller.trace_ready.connect(self._on_trace)
        controller.stage_changed.connect(self.refresh)
        controller.batch_index_changed.connect(self._on_batch_index)
        controller.config_changed.connect(self._on_config)
        self._sync_batch_range(controller.config)
        self._show_weights_note(controller.config)
        self.refresh()

    def _make_controls(self) -> None:
        """The batch element, the projection, the colour stretch and the first row."""
        self.batch_spin = QSpinBox(keyboardTracking=False, accelerated=True)
        self.batch_spin.setToolTip("which sequence of the batch the maps show")
        self.tensor_combo = QComboBox()
        self.tensor_combo.addItems(["Q", "K", "V"])
        self.tensor_combo.setToolTip("the projection shown at project, view and transpose")
        self.stretch_check = grows_with_text(QCheckBox("&stretch colours"))
        self.stretch_check.setToolTip(
            "colour the weights from 0 to the largest one shown instead of 0 to 1")
        self.rows_spin = QSpinBox(keyboardTracking=False)
        self.rows_spin.setToolTip("first query row computed exactly and shown")
        for widget, name in ((self.batch_spin, "Batch element shown"),
                             (self.tensor_combo, "Projection shown"),
                             (self.stretch_check, "Stretch colours"),
                             (self.rows_spin, "First query row shown")):
            widget.setAccessibleName(name)  # what a screen reader says for the control

    # what is shown --------------------------------------------------------------
    def hover_text(self, index: int, row: int, col: int) -> str:
        """What the hover line says for map ``index`` at (row, col), rows absolute."""
        return self.maps.describe(index, row, col) if self.maps is not None else ""

    def open_head(self, index: int) -> HeadDialog | None:
        """Show map ``index`` large, with the top-k keys of a chosen query; the stage
        diagram draws that head too (the first head of a K/V head's group). In
        presentation the large map beside the others shows it, no dialog."""
        self.controller.set_head(self.head_of_map(index))
        if self._presenting:
            return None
        tensor, stretch = self.tensor_combo.currentText(), self.stretch_check.isChecked()
        if self.dialog is None:
            self.dialog = HeadDialog(self.controller, index, tensor, stretch, parent=self)
        else:
            self.dialog.set_view(index, tensor, stretch)
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def set_figure_only(self, on: bool) -> None:
        """For an exported picture: the maps, their caption and the colour bar; none of
        the controls, no hover line, no scroll bar."""
        self._figure_only = bool(on)
        self.hover_label.setVisible(not on)
        self.every_row.button.setVisible(not on)  # a picture says the cost, offers nothing
        self._layout_grid(force=True)
        self.refresh()

    def head_of_map(self, index: int) -> int:
        if self.maps is not None and not self.maps.shows_query_heads:
            return index * self.controller.config.group_size  # a map per K/V head
        return index

    # controller signals ---------------------------------------------------------
    def _on_trace(self, _trace: Trace) -> None:
        self._stale = False
        self._entropy_key, self._entropies = (None, -1), None  # let the old trace go
        self.refresh()

    def _on_config(self, _cfg) -> None:
        self._stale = True  # at once: a trace arriving before the update below clears it
        # in a turn of its own: a new caption relays out the grid of maps
        self.controller.later.schedule(self._show_config, self._show_config)

    def _show_config(self) -> None:
        cfg = self.controller.config
        self._sync_batch_range(cfg)
        self._set_caption()
        self._show_weights_note(cfg)

    def _show_weights_note(self, cfg) -> None:
        text = weights_note(cfg)
        self.weights_note.setText(text)
        self.weights_note.setVisible(bool(text) and not self._presenting)

    def _on_batch_index(self, b: int) -> None:
        if self.batch_spin.value() != b:
            self.batch_spin.blockSignals(True)
            self.batch_spin.setValue(b)
            self.batch_spin.blockSignals(False)
        self.refresh()

    def _sync_batch_range(self, cfg) -> None:
        self.batch_spin.blockSignals(True)
        self.batch_spin.setRange(0, cfg.batch - 1)
        self.batch_spin.setValue(self.controller.batch_index)
        self.batch_spin.blockSignals(False)
        self.batch_spin.setSuffix(f"  of {cfg.batch}")

    # drawing ---------------------------------------------------------------------
    def refresh(self, *_args) -> None:
        stage = self.controller.stage
        split = offers_tensor_choice(stage) and not self._figure_only
        self.tensor_label.setVisible(split)
        self.tensor_combo.setVisible(split)
        self.stretch_check.setVisible(stage == StageId.softmax and not self._figure_only)
        self.batch_label.setVisible(not self._figure_only)
        self.batch_spin.setVisible(not self._figure_only)
        trace = self.controller.trace
        if trace is None:
            self.caption.setText("waiting for the first computation…")
            self.axis_words.set_axes(None)
            return
        self._sync_rows(trace)
        b = self.controller.batch_index
        try:
            maps = stage_maps(trace, stage, b, self.tensor_combo.currentText(),
                              self._cached_entropies(trace, b, stage),
                              self.stretch_check.isChecked())
        except IndexError:  # windowed: that batch element is on its way
            self.caption.setText(f"computing batch element {b}…")
            return
        self._draw(maps)
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.set_view(self.dialog.index, self.tensor_combo.currentText(),
                                 self.stretch_check.isChecked())

    def _sync_rows(self, trace: Trace) -> None:
        windowed = (trace.mode == "windowed" and self.controller.stage in ATTENTION_STAGES
                    and not self._figure_only)
        self.rows_label.setVisible(windowed)
        self.rows_spin.setVisible(windowed)
        if windowed:
            r0, r1 = trace.rows
            self.rows_spin.blockSignals(True)
            self.rows_spin.setRange(0, max(0, trace.config.T - (r1 - r0)))
            self.rows_spin.setSingleStep(r1 - r0)
            self.rows_spin.setValue(r0)
            self.rows_spin.blockSignals(False)

    def _cached_entropies(self, trace: Trace, b: int, stage: str) -> tuple[float, ...] | None:
        """Entropies cost a log per attention cell: once per trace and batch element."""
        if stage != StageId.softmax or "weights" not in trace.tensors[StageId.softmax]:
            return None
        if self._entropy_key[0] is not trace or self._entropy_key[1] != b:
            self._entropies = head_entropies(trace, b)  # IndexError: element not kept
            self._entropy_key = (trace, b)
        return self._entropies

    def _draw(self, maps: StageMaps) -> None:
        self.maps = maps
        self._set_caption()
        self.axis_words.set_axes(maps.axes if maps.maps else None)
        self._show_count(len(maps.maps))
        self._grid.activate()  # place new cells now: each map is drawn once, at its size
        self.controller.later.cancel(self._draw_from)  # an older set of maps waiting: not drawn
        for cell in self.cells:  # a map waiting for its turn keeps its old picture, unpainted:
            cell.setUpdatesEnabled(False)  # the grid's relayout would paint it twice otherwise
        self._show_focus()  # presentation's large map first: the one the room is looking at
        self._draw_from(maps, 0)

    def _draw_from(self, maps: StageMaps, start: int) -> None:
        """Draw the maps from ``start`` on, as many as one event-loop turn should hold, building
        their cells first where they are new; the rest come a turn later, each turn's maps
        painted before the next are set. Sixteen maps of 4096 keys, set and painted at once,
        held the window for half a second."""
        if maps is not self.maps:  # newer maps came meanwhile
            return
        stop, pixels = start, 0
        small = len(maps.maps) <= CELLS_PER_TURN  # a small config's maps all at once
        while stop < len(maps.maps) and (stop == start or (
                stop - start < CELLS_PER_TURN and pixels + maps.maps[stop].image.size <= PIXELS_PER_TURN
                and (small or stop - max(start, len(self._pool)) < NEW_CELLS_PER_TURN))):
            pixels += maps.maps[stop].image.size
            stop += 1
        self._build_cells(stop)
        for cell, heatmap in zip(self.cells[start:stop], maps.maps[start:stop], strict=False):
            cell.setUpdatesEnabled(True)
            cell.show_map(heatmap, maps)
        if stop < len(maps.maps):
            self.controller.later.schedule(self._draw_from, partial(self._draw_from, maps, stop))
            return
        self.bar_view.show_scale(maps)  # pushes the same levels to every item
        self.images_updated.emit()

    def _set_caption(self) -> None:
        text = self.maps.caption if self.maps is not None else ""
        if self._stale:
            text = "updating for the new settings… · " + text
        self.caption.setText(text)
        # a stage the picked rows cannot show: the line under it says why, what every row costs
        self.caption.setVisible(not self.every_row.applies() and not self._presenting)

    def _on_hover(self, index: int, row: int, col: int) -> None:
        if self.maps is not None and index < len(self.maps.maps):
            self.hover_label.setText(self.hover_text(index, row, col))

    def eventFilter(self, watched, event) -> bool:
        if watched is self.scroll.viewport() and event.type() == QEvent.Type.Resize:
            self._layout_grid()
        return super().eventFilter(watched, event)
