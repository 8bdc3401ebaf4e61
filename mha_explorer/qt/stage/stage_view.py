"""The centre of the window: the current stage as a diagram, and beside it the
stage's title, formula, a plain explanation and the code, lit at its lines.

Everything here renders what the controller's plan and trace already hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.units import format_bytes, format_count
from mha_explorer.qt.every_row import EveryRowBar
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.code_panel import CodePanel
from mha_explorer.qt.stage.diagram import MIN_CANVAS, StageDiagram
from mha_explorer.qt.stage.header_fit import HEADER_MARGINS, SPACING, HeaderBox, HeaderFitter
from mha_explorer.qt.stage.scaling_notes import ScalingNotes
from mha_explorer.qt.stage.stage_notes import input_sentence

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller

TITLE_PT, FORMULA_PT, TEXT_PT, SMALL_PT = 26, 20, 15, 14
COMPACT_TITLE_PT, COMPACT_FORMULA_PT = 20, 16
# the same sizes relative to the inherited (application) type, which wins when it is
# larger: presentation mode's large type then enlarges the header too
TITLE_SCALE, FORMULA_SCALE = 1.4, 1.15
COMPACT_BELOW = 1300  # narrower than this, the header may move above the diagram
CODE_SHARE_WIDE, CODE_SHARE_COMPACT = 0.4, 0.36  # of the width, at first show
SIDE_MIN_WIDTH = 360  # a header column narrower than this wraps its title word by word
CODE_ROOM = 760  # a centre narrower than this gives the code's width to the diagram
PICTURE_ROWS = 300  # a header above the diagram is cut to fit before the picture gets fewer
ROPE_DIAGRAM_LEAST = 150  # the diagram over the RoPE plot may be this short


def _label(name: str, points: float, *, bold: bool = False, wrap: bool = True) -> QLabel:
    label = QLabel()
    label.setObjectName(name)
    label.setFont(style.font(points, bold))
    label.setWordWrap(wrap)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    # Preferred, not Minimum: the view's minimum height counts one line per label, not
    # the label wrapped to its narrowest (which made the window taller than 720 px);
    # laid out, a wrapped label still gets the height its width needs (height for width)
    policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
    policy.setHeightForWidth(wrap)
    label.setSizePolicy(policy)
    return label


class StageView(QWidget):
    """``diagram`` (StageDiagram), ``code_panel`` (CodePanel), the labels ``counter``,
    ``title``, ``formula``, ``explanation`` and ``costs`` (together ``header``), and
    the ``splitter`` between the diagram and the text.

    Wide (a full screen): the header and the code share a column beside the
    diagram. Compact (a window's centre between docks): the header spans the
    top and only the code sits beside the diagram, so the diagram keeps room.
    """

    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._controller = controller
        self._compact: bool | None = None
        self._small_header = False
        self._sized = False
        self._figure_only = False
        self._presenting = False
        self._code_wanted = True
        self.setObjectName("stageView")

        self.diagram = StageDiagram(controller, self)
        self._diagram_least = self.diagram.minimumHeight()
        self.code_panel = CodePanel(controller, self)
        self.counter = _label("stageCounter", SMALL_PT)
        self.title = _label("stageTitle", TITLE_PT, bold=True)
        self.formula = _label("stageFormula", FORMULA_PT)
        self.explanation = _label("stageExplanation", TEXT_PT)
        self.costs = _label("stageCosts", SMALL_PT)
        self.sentence = _label("stageSentence", TEXT_PT)  # the words, at the input stage
        self.sentence.setTextFormat(Qt.TextFormat.PlainText)  # a token is never markup
        self.scaling = _label("stageScaling", TEXT_PT)  # √d_k in numbers, at scores and softmax
        for quiet in (self.counter, self.costs):
            quiet.setProperty("role", "muted")  # the theme colours it
        self.head_spin = QSpinBox()
        self.head_spin.setObjectName("headShown")
        self.head_spin.setAccessibleName("Head shown in the diagram")
        self.head_spin.setToolTip("Which query head the diagram draws (or click a map in Heads)")
        self.head_spin.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # arrows step the stages
        self.head_label = QLabel("&head shown")
        self.head_label.setBuddy(self.head_spin)

        self.header = QWidget(self)
        header = QVBoxLayout(self.header)
        header.setContentsMargins(*HEADER_MARGINS)
        header.setSpacing(SPACING)
        top_row = nested(header, QHBoxLayout())
        top_row.addWidget(self.counter, 1)
        top_row.addWidget(self.head_label)
        top_row.addWidget(self.head_spin)
        self.every_row = EveryRowBar(controller)  # a stage past the softmax of picked rows
        for widget in (self.title, self.formula, self.every_row, self.explanation, self.sentence,
                       self.scaling, self.costs):
            header.addWidget(widget)
        self._header_box = self._scrolling_box()
        self._fitter = HeaderFitter(self.header, header, top_row, title=self.title,
                                    counter=self.counter, costs=self.costs,
                                    cuttable=(self.explanation, self.scaling, self.sentence),
                                    formula=self.formula)

        self._side_widget = side = QWidget(self)
        self._side = QVBoxLayout(side)
        self._side.setContentsMargins(0, 0, 12, 12)
        self._side.setSpacing(4)
        self._side.addWidget(self.code_panel, 1)
        # in a short window the code gives way before the header does: a clipped
        # explanation reads as broken, two lines of code still show where we are
        self.code_panel.setMinimumHeight(2 * self.code_panel.fontMetrics().lineSpacing() + 8)

        # the diagram, and under it at the RoPE stage the q·k-against-distance plot
        self.picture = QSplitter(Qt.Orientation.Vertical, self)
        self.picture.setChildrenCollapsible(False)
        self.picture.addWidget(self.diagram)
        self.rope_plot = None  # pyqtgraph loads when a RoPE stage is first shown

        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.picture)
        self.splitter.addWidget(side)
        self.splitter.setChildrenCollapsible(False)
        self._outer = QVBoxLayout(self)
        self._outer.setContentsMargins(0, 0, 0, 0)
        self._outer.setSpacing(0)
        self._outer.addWidget(self.splitter, 1)
        self._set_compact(False)

        self._scaling_notes = ScalingNotes(controller, self)  # √d_k's numbers, off the GUI thread
        for said in (controller.stage_changed, controller.config_changed, controller.trace_ready,
                     controller.batch_index_changed, self._scaling_notes.ready):
            said.connect(self._show_text)
        controller.head_changed.connect(self._show_head)
        self.head_spin.valueChanged.connect(controller.set_head)
        self._show_text()

    def _scrolling_box(self) -> QScrollArea:
        """On a short screen the header scrolls rather than pushing the window past it
        (where cutting its words at whole lines still leaves them too tall)."""
        box = HeaderBox(self)
        box.setWidgetResizable(True)
        box.setFrameShape(QFrame.Shape.NoFrame)
        box.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        box.setObjectName("stageHeaderBox")
        box.hide()
        # may shrink to two lines: the words scroll, the window stays on the screen
        self._box_floor = 2 * self.fontMetrics().lineSpacing()
        box.setMinimumHeight(self._box_floor)
        box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        return box

    # code and head ---------------------------------------------------------------------------
    @property
    def code_visible(self) -> bool:
        """Whether the code is wanted beside the diagram (a narrow view still leaves it out)."""
        return self._code_wanted

    def set_code_visible(self, visible: bool) -> None:
        """The code is optional (presentation hides it): without it the header goes
        above the diagram and the diagram takes the whole width. A view narrower than
        CODE_ROOM leaves it out until it is wider again: the diagram needs the width more."""
        self._code_wanted = bool(visible)
        self._place_code()

    def _code_fits(self) -> bool:
        return self._figure_only or self.width() >= CODE_ROOM or not self.isVisible()

    def _place_code(self) -> None:
        shown = self._code_wanted and self._code_fits()
        self.code_panel.setVisible(shown)
        self._set_compact(self._prefer_compact())
        self._side_widget.setVisible(shown or not self._compact)
        self._sized = False
        self._share_width()

    def set_figure_only(self, on: bool) -> None:
        """For an exported picture: no head selector, no scroll bars on the code."""
        self._figure_only = bool(on)
        for widget in (self.head_label, self.head_spin):
            widget.setVisible(not on and self._controller.config.H > 1)
        self.every_row.button.setVisible(not on)  # a picture says the cost, offers nothing
        policy = Qt.ScrollBarPolicy.ScrollBarAlwaysOff if on else Qt.ScrollBarPolicy.ScrollBarAsNeeded
        self.code_panel.setVerticalScrollBarPolicy(policy)
        self.code_panel.setHorizontalScrollBarPolicy(policy)
        self._place_header()

    def set_presenting(self, on: bool) -> None:
        """Projector: the title and the formula over a large diagram; the explanation,
        the scaling numbers and the costs are the teacher's to say (and the desk's to read)."""
        self._presenting = bool(on)
        self._show_text()
        self._place_header()  # measured again: the hidden words give their height back
        self._sized = False
        self._share_width()

    def _show_head(self, head: int) -> None:
        if self.head_spin.value() != head:
            self.head_spin.blockSignals(True)  # a reflection, not a new request
            self.head_spin.setValue(head)
            self.head_spin.blockSignals(False)

    # public -------------------------------------------------------------------------------
    def set_reduced_motion(self, reduced: bool) -> None:
        self.diagram.set_reduced_motion(reduced)

    @property
    def reduced_motion(self) -> bool:
        return self.diagram.reduced_motion

    def is_animating(self) -> bool:
        return self.diagram.is_animating()

    def type_sizes(self) -> dict[str, float]:
        """Point sizes of the header's labels for the view's width and the inherited type.
        A view narrower than COMPACT_BELOW takes the smaller title and text wherever the
        header sits: beside the diagram its column is narrow, above it the height is."""
        base = self.font().pointSizeF()
        small = self._small_header
        title = COMPACT_TITLE_PT if small else TITLE_PT
        formula = COMPACT_FORMULA_PT if small else FORMULA_PT
        text = SMALL_PT if small else TEXT_PT
        return {
            "title": max(title, base * TITLE_SCALE),
            "formula": max(formula, base * FORMULA_SCALE),
            "explanation": max(text, base),
            "small": max(SMALL_PT, base),
        }

    @property
    def compact(self) -> bool:
        return bool(self._compact)

    # rendering ---------------------------------------------------------------------------
    def _show_text(self, *_args) -> None:
        c = self._controller
        stage = c.plan.stage(c.stage)
        count = len(c.plan.stages)
        self.counter.setText(f"Stage {c.stage_index + 1} of {count}  ·  {c.config.variant}")
        self._show_rope_plot(c.stage == StageId.rope)
        self.title.setText(stage.title)
        self._fitter.say(self.formula, stage.formula)
        self._fitter.say(self.explanation, stage.explanation)
        memory = f"new memory {format_bytes(stage.bytes)}" if stage.bytes else "no new memory (a view)"
        self.costs.setText(f"{format_count(stage.flops)} FLOPs  ·  {memory}" if stage.flops
                           else f"no arithmetic  ·  {memory}")
        cfg = c.config
        self.head_spin.blockSignals(True)
        self.head_spin.setRange(0, cfg.H - 1)
        self.head_spin.setSuffix(f"  of {cfg.H:,}")
        self.head_spin.setValue(c.head)
        self.head_spin.blockSignals(False)
        for widget in (self.head_label, self.head_spin):
            widget.setVisible(cfg.H > 1 and not self._figure_only)
        on_input = c.stage == StageId.input
        self._set_note(self.sentence, input_sentence(cfg, c.current_trace) if on_input else "")
        self._set_note(self.scaling, "" if self._presenting else self._scaling_notes.text(c.stage))
        for words in (self.explanation, self.costs):
            words.setVisible(not self._presenting)
        self._fit_header()

    def _set_note(self, label: QLabel, text: str) -> None:
        self._fitter.say(label, text)
        label.setVisible(bool(text))

    # fitting the words above a short diagram ------------------------------------------------
    def _fit_header(self) -> None:
        """Above a short diagram every line of the header shows whole (HeaderFitter), and one
        cut to fit still shows its title's row whole: at the RoPE stage the q·k plot gives
        some of its least height to the header's box (the view's least, and so the window,
        stay as they were). ``room``: what the diagram and plot keep before the words: at
        1280×720 a long explanation left the picture 249 rows of the 446."""
        active = self._compact and not self._figure_only and self.isVisible()
        plot = self.rope_plot if self.rope_plot is not None and not self.rope_plot.isHidden() else None
        # the picture (the diagram, and the RoPE plot under it) keeps PICTURE_ROWS at least
        room = max(PICTURE_ROWS, self.diagram.minimumHeight()
                   + (self.picture.handleWidth() + plot.least() if plot else 0))
        budget = self.height() - room if active else None
        bar = self._header_box.verticalScrollBar().sizeHint().width()
        self._fitter.fit(self.width(), budget, bar, self._presenting, plot.LEAST - plot.FLOOR if plot else 0)
        short = self._fitter.title_room(self.width() - bar) - budget if active else 0
        self._header_box.setMinimumHeight(self._box_floor + (plot.give_height(short) if plot else 0))
        self._header_box.updateGeometry()

    def _show_rope_plot(self, show: bool) -> None:
        if show and self.rope_plot is None:
            from mha_explorer.qt.stage.rope_plot import RopePlot

            self.rope_plot = RopePlot.under(self.picture, self._controller)
        if self.rope_plot is None:
            return
        shown = not self.rope_plot.isHidden()
        self.rope_plot.setVisible(show)
        # the RoPE stage draws two tensors above the plot: the diagram may be shorter there,
        # and the two share the height, so a laptop's plot is more than a strip of ticks
        self.diagram.setMinimumHeight(ROPE_DIAGRAM_LEAST if show else self._diagram_least)
        if show and not shown:
            h = max(self.picture.height(), 2 * ROPE_DIAGRAM_LEAST)
            self.picture.setSizes([h - h // 2, h // 2])

    def _set_compact(self, compact: bool) -> None:
        """Move the header above everything (compact) or beside the diagram (wide)."""
        if compact == self._compact:
            return
        self._compact = compact
        self._place_header()

    def _place_header(self) -> None:
        """Above the diagram (compact) or atop the code (wide); inside a scroll area
        on screen, so a short window scrolls the words instead of growing past the
        screen, and bare in an exported picture, which has no scroll bars."""
        for layout in (self._outer, self._side):
            layout.removeWidget(self._header_box)
            layout.removeWidget(self.header)
        if self._header_box.widget() is self.header:
            self._header_box.takeWidget()
        boxed = not self._figure_only
        if boxed:
            self._header_box.setWidget(self.header)
        item = self._header_box if boxed else self.header
        (self._outer if self._compact else self._side).insertWidget(0, item)
        self._header_box.setVisible(boxed)
        self.header.show()  # moving between parents hides a widget until shown again
        self._apply_type()
        self._sized = False  # share the width again for the new arrangement
        self._fit_header()

    def _apply_type(self) -> None:
        sizes = self.type_sizes()
        self.title.setFont(style.font(sizes["title"], bold=True))
        self.formula.setFont(style.font(sizes["formula"]))
        self.explanation.setFont(style.font(sizes["explanation"]))
        self.sentence.setFont(style.font(sizes["explanation"], bold=True))
        self.scaling.setFont(style.font(sizes["explanation"]))
        self.every_row.label.setFont(style.font(sizes["explanation"]))
        for quiet in (self.counter, self.costs):
            quiet.setFont(style.font(sizes["small"]))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # presentation mode in or out
            self._apply_type()
            self.code_panel.refit()
            self._fit_header()

    def _prefer_compact(self) -> bool:
        """Header above the diagram only when that leaves the diagram larger: a narrow
        centre gains width by it, a short and wide one would lose too much height.
        Without the code beside the diagram the header always goes above."""
        w, h = self.width(), self.height()
        if self.code_panel.isHidden():
            return True
        if w >= COMPACT_BELOW:
            return False
        if w * CODE_SHARE_WIDE < SIDE_MIN_WIDTH:
            return True
        header_h = self.header.heightForWidth(w)
        if header_h < 0:
            header_h = self.header.sizeHint().height()
        cw, ch = MIN_CANVAS
        beside = min(w * (1 - CODE_SHARE_WIDE) / cw, h / ch)
        above = min(w * (1 - CODE_SHARE_COMPACT) / cw, (h - header_h) / ch)
        return above >= beside

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._code_wanted and self.code_panel.isHidden() == self._code_fits():
            self._place_code()  # the view crossed CODE_ROOM
        small = self.width() < COMPACT_BELOW
        if small != self._small_header:
            self._small_header = small
            self._apply_type()
        self._set_compact(self._prefer_compact())
        self._share_width()
        self._fit_header()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._fit_header()

    def _share_width(self) -> None:
        if not self._sized and self.width() > 0:
            self._sized = True
            w = self.width()
            share = CODE_SHARE_COMPACT if self._compact else CODE_SHARE_WIDE
            if self._side_widget.isHidden():
                share = 0.0
            self.splitter.setSizes([w - int(w * share), int(w * share)])
