"""The centre of the window: the current stage as a diagram, and beside it the
stage's title, formula, a plain explanation and the code, lit at its lines.

Everything here renders what the controller's plan and trace already hold.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QSplitter, QVBoxLayout, QWidget

from ..core.plan import STAGE_IDS
from . import diagram_style as style
from .code_panel import CodePanel
from .diagram import StageDiagram

TITLE_PT, FORMULA_PT, TEXT_PT, SMALL_PT = 26, 20, 15, 14
COMPACT_TITLE_PT = 20
COMPACT_BELOW = 1300  # narrower than this, the header moves above the diagram
CODE_SHARE_WIDE, CODE_SHARE_COMPACT = 0.4, 0.36  # of the width, at first show


def _si(n: int) -> str:
    """12,582,912 -> '12.6 M': a count a person can say aloud."""
    for factor, suffix in ((10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= factor:
            return f"{n / factor:.3g} {suffix}"
    return f"{n}"


def _bytes(n: int) -> str:
    for factor, suffix in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n >= factor:
            return f"{n / factor:.3g} {suffix}"
    return f"{n} bytes"


def _label(name: str, points: float, *, bold: bool = False, wrap: bool = True) -> QLabel:
    label = QLabel()
    label.setObjectName(name)
    label.setFont(style.font(points, bold))
    label.setWordWrap(wrap)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
    return label


class StageView(QWidget):
    """``diagram`` (StageDiagram), ``code_panel`` (CodePanel), the labels ``counter``,
    ``title``, ``formula``, ``explanation`` and ``costs`` (together ``header``), and
    the ``splitter`` between the diagram and the text.

    Wide (a full screen): the header and the code share a column beside the
    diagram. Compact (a window's centre between docks): the header spans the
    top and only the code sits beside the diagram, so the diagram keeps room.
    """

    def __init__(self, controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._controller = controller
        self._compact: bool | None = None
        self._sized = False
        self.setObjectName("stageView")

        self.diagram = StageDiagram(controller, self)
        self.code_panel = CodePanel(controller, self)
        self.counter = _label("stageCounter", SMALL_PT)
        self.title = _label("stageTitle", TITLE_PT, bold=True)
        self.formula = _label("stageFormula", FORMULA_PT)
        self.explanation = _label("stageExplanation", TEXT_PT)
        self.costs = _label("stageCosts", SMALL_PT)
        for quiet in (self.counter, self.costs):
            quiet.setStyleSheet("color: #4A4A4A;")

        self.header = QWidget(self)
        header = QVBoxLayout(self.header)
        header.setContentsMargins(16, 10, 12, 6)
        header.setSpacing(8)
        for widget in (self.counter, self.title, self.formula, self.explanation, self.costs):
            header.addWidget(widget)

        side = QWidget(self)
        self._side = QVBoxLayout(side)
        self._side.setContentsMargins(0, 0, 12, 12)
        self._side.setSpacing(4)
        self._side.addWidget(self.code_panel, 1)

        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.diagram)
        self.splitter.addWidget(side)
        self.splitter.setChildrenCollapsible(False)
        self._outer = QVBoxLayout(self)
        self._outer.setContentsMargins(0, 0, 0, 0)
        self._outer.setSpacing(0)
        self._outer.addWidget(self.splitter, 1)
        self._set_compact(False)

        controller.stage_changed.connect(self._show_text)
        controller.config_changed.connect(self._show_text)
        self._show_text()

    # public -------------------------------------------------------------------------------
    def set_reduced_motion(self, reduced: bool) -> None:
        self.diagram.set_reduced_motion(reduced)

    @property
    def reduced_motion(self) -> bool:
        return self.diagram.reduced_motion

    def is_animating(self) -> bool:
        return self.diagram.is_animating()

    @property
    def compact(self) -> bool:
        return bool(self._compact)

    # rendering ---------------------------------------------------------------------------
    def _show_text(self, *_args) -> None:
        c = self._controller
        stage = c.plan.stage(c.stage)
        self.counter.setText(f"Stage {c.stage_index + 1} of {len(STAGE_IDS)}  ·  {c.config.variant}")
        self.title.setText(stage.title)
        self.formula.setText(stage.formula)
        self.explanation.setText(stage.explanation)
        memory = f"new memory {_bytes(stage.bytes)}" if stage.bytes else "no new memory (a view)"
        self.costs.setText(f"{_si(stage.flops)} FLOPs  ·  {memory}" if stage.flops
                           else f"no arithmetic  ·  {memory}")

    def _set_compact(self, compact: bool) -> None:
        """Move the header above everything (compact) or beside the diagram (wide)."""
        if compact == self._compact:
            return
        self._compact = compact
        if compact:
            self._side.removeWidget(self.header)
            self._outer.insertWidget(0, self.header)
        else:
            self._outer.removeWidget(self.header)
            self._side.insertWidget(0, self.header)
        title, text = (COMPACT_TITLE_PT, SMALL_PT) if compact else (TITLE_PT, TEXT_PT)
        self.title.setFont(style.font(title, bold=True))
        self.explanation.setFont(style.font(text))
        self._sized = False  # share the width again for the new arrangement

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._set_compact(self.width() < COMPACT_BELOW)
        if not self._sized and self.width() > 0:
            self._sized = True
            w = self.width()
            share = CODE_SHARE_COMPACT if self._compact else CODE_SHARE_WIDE
            self.splitter.setSizes([w - int(w * share), int(w * share)])
