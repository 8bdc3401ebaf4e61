"""The Layers dock's What-if tab: what a trained decoder's heads *do*, in three pages.

- *Switch heads off*: random tokens shown twice; every head zeroed (or set to its mean) in
  turn, the second copy's loss beside the head's induction score: pattern against effect.
- *Patch two prompts*: every head carried from a clean prompt into a corrupted one, the
  fraction of the logit difference it brings back as a layers × heads map.
- *Logit lens*: the residual stream after every layer read as the output (a layers × tokens
  table of top tokens, coloured by probability) and the last token's logit split into bars.

Each page runs one job on the jobs thread (core.models.causal.report, imported there), with
its progress and Cancel; the results arrive as numpy arrays and numbers. Clicking a head in any
of them emits ``head_chosen(layer, head)``, which opens it in the stage view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QTabWidget, QWidget

from mha_explorer.qt.tab_names import every_tab_in_sight
from mha_explorer.qt.trained.head_effects import HeadEffects
from mha_explorer.qt.trained.lens_view import LensView
from mha_explorer.qt.trained.patching_view import PatchingView

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

class WhatIfView(QTabWidget):
    """The three pages; ``head_chosen(layer, head)`` from any of them."""

    head_chosen = Signal(int, int)

    def __init__(self, controller: Controller, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("what_if")
        self.effects = HeadEffects(controller, jobs)
        self.patching = PatchingView(controller, jobs)
        self.lens = LensView(controller, jobs)
        for page, title, tip in (
                (self.effects, "Switch heads off", "Each head zeroed in turn on random tokens shown twice: "
                 "how much the copied second copy's loss rises, beside the head's induction score"),
                (self.patching, "Patch two prompts", "Each head carried from a clean prompt into a corrupted "
                 "one: how much of the clean answer it brings back"),
                (self.lens, "Logit lens", "The residual stream after every layer read as the output, and the "
                 "last token's logit split into the parts that add up to it")):
            self.setTabToolTip(self.addTab(page, title), tip)
            page.head_chosen.connect(self.head_chosen)
        every_tab_in_sight(self)
