"""The stage diagram: the current stage's tensors as labelled blocks, and an
animated move into the next stage.

The scene is laid out in view pixels (one scene unit is one pixel at the
canvas size), so the type is as large as its point size says; when the widget
is smaller than MIN_CANVAS the layout is made for MIN_CANVAS and scaled down.
Then the view zooms onto what the stage drew (up to MAX_GROWTH times), so a
stage of one small tensor fills its pane as a busy one does, its type growing
with it; between stages the zoom slides with the items.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QPainter, QTransform
from PySide6.QtWidgets import QFrame, QGraphicsScene, QGraphicsView, QWidget

from mha_explorer.core.display.diagram import head_matrix
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.trace import current_trace
from mha_explorer.core.variants.registry import family_of
from mha_explorer.qt.picture import DrawnShape, DrawnText, seen_rect
from mha_explorer.qt.shell.first_paint import FirstPaint
from mha_explorer.qt.shell.theme import theme_of
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_attention import build_scores, build_softmax, build_weighted_sum
from mha_explorer.qt.stage.diagram_compose import Composer, StageContext
from mha_explorer.qt.stage.diagram_data import scores_image, weights_image
from mha_explorer.qt.stage.diagram_items import BlockItem, GapItem, GridItem
from mha_explorer.qt.stage.diagram_linear import build_input, build_output, build_project
from mha_explorer.qt.stage.diagram_motion import Transition, duration_for
from mha_explorer.qt.stage.diagram_reshape import build_merge, build_transpose
from mha_explorer.qt.stage.diagram_view import build_view
from mha_explorer.qt.stage.generic_stage import GenericStageView, is_generic

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller

MIN_CANVAS = (980.0, 640.0)  # below this the picture is scaled, not squeezed...
MIN_TEXT_PX = 11.0  # ...but never so far that its smallest type is under this on screen
WIDE = 1.8  # a canvas wider than this for its height puts the closing sentence beside the picture
MAX_GROWTH = 2.4  # the zoom onto a sparse stage: past this its type would shout
FIT_MARGIN = 12  # pixels kept free around the picture

BUILDERS = {
    StageId.input: build_input,
    StageId.project: build_project,
    StageId.view: build_view,
    StageId.transpose: build_transpose,
    StageId.scores: build_scores,
    StageId.softmax: build_softmax,
    StageId.weighted_sum: build_weighted_sum,
    StageId.merge: build_merge,
    StageId.output: build_output,
}


class StageDiagram(FirstPaint, QGraphicsView):
    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._controller = controller
        self._scene = QGraphicsScene(self)
        self._scene.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)  # items move every frame
        self._ink = style.ink_for(theme_of(self).diagram)
        self._scene.setBackgroundBrush(QBrush(self._ink.background))
        self.setScene(self._scene)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.FullViewportUpdate)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumSize(320, 240)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # arrow keys belong to the stage stepper

        self._items: list = []
        self._stage = controller.stage
        self._canvas = (0.0, 0.0)
        self._reduced_motion = False
        self._type_floor: float | None = None  # presentation: no text below this many points
        self._scene_floor = 0.0  # the type floor in scene points, for the current zoom
        self._transition = Transition(self._scene, self)
        self._base_scale = 1.0  # the canvas's own scale, before the zoom onto the picture
        self._view_from = self._view_to = (1.0, QPointF())  # zoom and centre, start and end
        self._transition.animation.valueChanged.connect(self._slide_view)
        # stages the classic drawings do not know (positions, RoPE, every stage of latent
        # attention, whose plan has no classic projection, view or transpose) are drawn generically
        self.generic = GenericStageView(self)
        self.generic.setMinimumSize(0, 0)  # it covers the view, whatever size the view is given
        self.generic.setAutoFillBackground(True)
        self.generic.hide()

        controller.stage_changed.connect(self._on_stage_changed)
        # in a turn of its own: the scene is rebuilt and painted again
        controller.later.on(controller.config_changed, self._redraw)
        controller.trace_ready.connect(self._redraw)
        controller.batch_index_changed.connect(self._redraw)
        controller.head_changed.connect(self._redraw)
        self.hold(self._redraw)  # drawn when first painted or read, at the size it then has

    # public ---------------------------------------------------------------------------
    @property
    def stage(self) -> str:
        return self._stage

    @property
    def reduced_motion(self) -> bool:
        return self._reduced_motion

    def set_reduced_motion(self, reduced: bool) -> None:
        """Jump between stages instead of sliding (for people who get motion sick,
        and for slides exported mid-talk)."""
        self._reduced_motion = bool(reduced)
        if self._reduced_motion:
            self._transition.finish()

    def set_type_floor(self, points: float | None) -> None:
        """Presentation: the picture fills the view (growing past its design size) and
        no text is drawn smaller than ``points`` on screen; None: the everyday fit."""
        self._type_floor = points
        self._redraw()

    def smallest_text_points(self) -> float:
        """On-screen size of the smallest type the diagram draws, in points."""
        return max(style.SMALLEST_PT, self._scene_floor) * self.transform().m11()

    def is_animating(self) -> bool:
        return self._transition.is_running()

    @property
    def transition(self) -> Transition:
        return self._transition

    def duration_ms(self) -> int:
        return duration_for(self._controller.speed)

    def items_by_key(self) -> dict[str, object]:
        self.run_held()
        return {item.key: item for item in self._items}

    def label_texts(self) -> list[str]:
        """Every piece of text the current stage shows (chips, captions, notes)."""
        self.run_held()
        shown = self.generic.stage if not self.generic.isHidden() else None
        if shown is not None:  # the header above or beside it has the title and formula
            blocks = [f"{b.name} {b.caption}" for b in self.generic.blocks]
            chips = [label for placed in self.generic.placed() for label, _ in placed.chips]
            note = [self.generic.matrix_note] if self.generic.matrices else []
            return [*blocks, *chips, *note, *shown.notes]
        texts = []
        for item in self._items:
            text = getattr(item, "text", None)
            if callable(text):
                texts.append(text())
        return texts

    # what is drawn, for the picture checks (qt/picture.py) ---------------------------------
    def _shown_items(self) -> list:
        """The current stage's items as they stand (none while the generic view draws)."""
        self.run_held()
        if not self.generic.isHidden():
            return []
        return [i for i in self._items if i.isVisible() and i.opacity() > 0.5]

    def _to_window(self, item, rect: QRectF) -> QRectF:
        """``rect`` in ``item``'s coordinates as window coordinates."""
        on_view = self.viewportTransform().mapRect(item.sceneTransform().mapRect(rect))
        return on_view.translated(self.viewport().mapTo(self.window(), QPoint(0, 0)))

    def _px_per_point(self) -> float:
        return self.logicalDpiY() / 72 * self.transform().m11()

    def _clip(self) -> QRectF:
        return seen_rect(self.viewport())

    def drawn_texts(self) -> list[DrawnText]:
        px, clip = self._px_per_point(), self._clip()
        texts = []
        for item in self._shown_items():
            runs = getattr(item, "runs", None)
            if runs is None:
                continue
            on = item.key if isinstance(item, BlockItem) else ""  # a block's tag lies on it
            unit = str(id(item))  # an item's runs are one text, read together
            turned = item.sceneTransform().m12() != 0  # a column's name, upright
            for run in runs():
                texts.append(DrawnText(run.text, self._to_window(item, run.rect), run.points * px,
                                       run.ink, "diagram", clip, run.ground or self._ink.background,
                                       on=on, unit=unit, turned=turned))
        return texts

    def drawn_shapes(self) -> list[DrawnShape]:
        px = self._px_per_point()
        shapes = []
        for item in self._shown_items():
            if isinstance(item, BlockItem | GridItem | GapItem):
                kind = "map" if isinstance(item, GridItem) else "tensor"
                axes = ("query", "key") if isinstance(item, GridItem) else ("", "")
                label = getattr(item, "label_points", 0.0)  # a gap is a part of a tensor
                shapes.append(DrawnShape(self._to_window(item, item.body()), "diagram", item.key,
                                         kind, label * px, axes))
        return shapes

    # building ---------------------------------------------------------------------------
    def _context(self) -> StageContext:
        c = self._controller
        w, h = self._canvas
        # the everyday pane is short and wide: a sentence under the picture would take the
        # height the picture needs (presentation keeps its own layout)
        beside = self._type_floor is None and w > WIDE * h
        return StageContext(c.config, c.plan, c.trace, c.batch_index, w, h, self._ink,
                            head=min(c.head, c.config.H - 1), note_beside=beside,
                            presenting=self._type_floor is not None)

    def uses_generic(self, stage: str) -> bool:
        """Whether ``stage`` is drawn by the generic view rather than the classic builders."""
        cfg = self._controller.config
        # the classic drawings take each family's widths from its plan where its tensors keep
        # the classic layout (latent attention after its softmax); its other stages (wider
        # keys, the latent cache) are drawn from its own plan
        return (is_generic(stage) or stage not in BUILDERS
                or stage not in family_of(cfg).classic_diagrams)

    def _build(self, stage: str) -> list:
        if self._show_generic(stage):
            return []
        style.set_type_floor(self._scene_floor)
        try:
            composer = Composer(self._context())
            BUILDERS[stage](composer)
            composer.settle_note()
            composer.settle()
        finally:
            style.set_type_floor(0.0)  # the header and an export measure at their own size
        return composer.items

    def _show_generic(self, stage: str) -> bool:
        """Show (and fill) the generic view for ``stage``, or hide it; True when shown."""
        plan = self._controller.plan
        if not self.uses_generic(stage) or not plan.has_stage(stage):
            self.generic.hide()
            return False
        c = self._controller
        head = min(c.head, c.config.H - 1)
        self.generic.type_floor_px = (self._type_floor or 0.0) * self.logicalDpiY() / 72
        self.generic.set_stage(plan.stage(stage), self._matrices(plan.stage(stage), head),
                               f"head {head} of {c.config.H:,}")
        self.generic.setGeometry(self.rect())
        self.generic.show()
        self.generic.raise_()
        return True

    def _matrices(self, stage, head: int) -> dict:
        """The shown head's [T, S] matrices of ``stage`` as pictures, by tensor name."""
        from mha_explorer.qt.stage.generic_stage import is_matrix, stage_blocks

        c = self._controller
        trace = current_trace(c.trace, c.config)
        pictures = {}
        for block in filter(is_matrix, stage_blocks(stage)):
            values = head_matrix(trace, stage.id, block.name, c.batch_index, head)
            if values is not None:
                draw = scores_image if block.name == "scores" else weights_image
                pictures[block.name] = draw(values)
        return pictures

    def _fit_canvas(self) -> None:
        vw, vh = max(1, self.viewport().width()), max(1, self.viewport().height())
        if self._type_floor is None:
            # a pane smaller than MIN_CANVAS scales the picture down; the canvas then takes
            # the pane's shape, so a short, wide pane lays the stage out wide, not in its middle
            scale = max(min(vw / MIN_CANVAS[0], vh / MIN_CANVAS[1], 1.0), self._least_scale())
            w, h = vw / scale, vh / scale
            self._scene_floor = 0.0
        else:  # grow or shrink the whole picture to the view, then the type to the floor
            scale = min(vw / MIN_CANVAS[0], vh / MIN_CANVAS[1])
            w, h = vw / scale, vh / scale
            self._scene_floor = self._type_floor / scale
        self._canvas = (float(w), float(h))
        self._base_scale = scale
        self._scene.setSceneRect(QRectF(0, 0, w, h))
        self.resetTransform()
        self.scale(scale, scale)

    def _least_scale(self) -> float:
        """The smallest scale at which the smallest type still reads (MIN_TEXT_PX): below
        it the canvas shrinks with the pane instead, and the stage lays itself out tighter."""
        return min(1.0, MIN_TEXT_PX / (style.SMALLEST_PT * self.logicalDpiY() / 72))

    def _zoom_onto(self, items: list) -> tuple[float, QPointF]:
        """The zoom and centre that fill the view with ``items`` (never below the
        canvas's own scale, so the type floor holds; never past MAX_GROWTH)."""
        w, h = self._canvas
        rect = QRectF()
        for item in items:
            rect = rect.united(item.sceneBoundingRect())
        if rect.isEmpty():
            return self._base_scale, QPointF(w / 2, h / 2)
        vw = max(1.0, self.viewport().width() - 2 * FIT_MARGIN)
        vh = max(1.0, self.viewport().height() - 2 * FIT_MARGIN)
        zoom = min(vw / rect.width(), vh / rect.height())
        zoom = min(max(zoom, self._base_scale), self._base_scale * MAX_GROWTH)
        # the scene reaches past the canvas where a picture does, so centring can reach it
        self._scene.setSceneRect(QRectF(0, 0, w, h).united(rect.adjusted(-w, -h, w, h)))
        return zoom, rect.center()

    def _set_view(self, zoom: float, centre: QPointF) -> None:
        self.setTransform(QTransform.fromScale(zoom, zoom))
        self.centerOn(centre)

    def _slide_view(self, t) -> None:
        (z0, c0), (z1, c1) = self._view_from, self._view_to
        t = float(t)
        self._set_view(z0 + (z1 - z0) * t, c0 + (c1 - c0) * t)

    def _show_without_motion(self, items: list) -> None:
        self._transition.finish()
        for item in self._items:
            self._scene.removeItem(item)
        for item in items:
            self._scene.addItem(item)
        self._items = items
        self._view_from = self._view_to = self._zoom_onto(items)
        self._set_view(*self._view_to)

    def _redraw(self, *_args) -> None:
        """Redraw the current stage in place: new config, new trace, new size."""
        self._fit_canvas()
        self._stage = self._controller.stage
        self._show_without_motion(self._build(self._stage))

    def _on_stage_changed(self, stage: str) -> None:
        self.run_held()  # sized, not yet painted: the stage it leaves at that size first
        self._transition.finish()
        items = self._build(stage)
        self._stage = stage
        if self._reduced_motion or not self.isVisible():
            self._show_without_motion(items)
            return
        old, self._items = self._items, items
        self._view_from = (self.transform().m11(), self.mapToScene(self.viewport().rect().center()))
        self._view_to = self._zoom_onto(items)
        self._transition.run(old, items, self.duration_ms())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.generic.setGeometry(self.rect())
        # drawn at the size it has when next painted or read: the window passes the view through
        # ten sizes before its first frame, and presentation's re-arrangement through several in
        # one turn, each of which was drawn (130 ms of the turn that entered presentation)
        self.hold(self._redraw)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # a theme switch: the page and its ink
            ink = style.ink_for(theme_of(self).diagram)
            if ink != self._ink:
                self._ink = ink
                self._scene.setBackgroundBrush(QBrush(ink.background))
                self._redraw()
