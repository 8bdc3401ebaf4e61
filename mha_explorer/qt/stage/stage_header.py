"""The stage view's header: the stage counter, the title, the formula, the explanation, the
costs and the notes (the sentence at the input stage, the √d_k numbers at scores and softmax),
the head selector beside the counter, and the type each is set in. A view narrower than
COMPACT_BELOW takes the smaller sizes, and the inherited type wins when it is larger, so
presentation mode's large type enlarges the header too. A mixin of StageView, which decides
where the header goes and how much of it fits (header_fit.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QSpinBox, QVBoxLayout, QWidget

from mha_explorer.qt.every_row import EveryRowBar
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.header_fit import HEADER_MARGINS, SPACING, HeaderFitter

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller

TITLE_PT, FORMULA_PT, TEXT_PT, SMALL_PT = 26, 20, 15, 14
COMPACT_TITLE_PT, COMPACT_FORMULA_PT = 20, 16
# the same sizes relative to the inherited (application) type, which wins when it is
# larger: presentation mode's large type then enlarges the header too
TITLE_SCALE, FORMULA_SCALE = 1.4, 1.15


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


class StageHeader:
    """``counter``, ``title``, ``formula``, ``explanation``, ``costs``, ``sentence``,
    ``scaling``, ``head_spin`` and ``head_label`` in ``header``; ``type_sizes()``. The view
    provides ``_small_header`` and ``_scrolling_box()``."""

    def _make_header(self, controller: Controller) -> None:
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
