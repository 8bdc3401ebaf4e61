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
    """``diagram`` (StageDiagram), ``code_panel`` (CodePanel) and the text labels
    ``title``, ``formula``, ``explanation``, ``notes`` and ``costs``."""

    def __init__(self, controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._controller = controller
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

        side = QWidget(self)
        column = QVBoxLayout(side)
        column.setContentsMargins(16, 12, 12, 12)
        column.setSpacing(10)
        for widget in (self.counter, self.title, self.formula, self.explanation, self.costs):
            column.addWidget(widget)
        column.addWidget(self.code_panel, 1)

        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.diagram)
        self.splitter.addWidget(side)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)

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

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if not event.oldSize().isValid() or event.oldSize().width() <= 0:
            # first real size: 60 % diagram, 40 % text and code
            w = max(1, self.width())
            self.splitter.setSizes([int(w * 0.6), w - int(w * 0.6)])
