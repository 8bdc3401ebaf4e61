"""The Lab opens with its Training tab at once and builds the three tabs behind it in the
event-loop turns after, so opening it never holds the window; a view asked for before its
tab is built is there all the same."""

from __future__ import annotations

from PySide6.QtWidgets import QTableWidget
from waits import UI_MS

from mha_explorer.qt.lab.plots import CurvePlot
from mha_explorer.qt.lab.views import LabViews

LATER_TABS = ("Comparison", "Ablation & pruning", "Induction circuit")


def _names(views: LabViews) -> list[str]:
    return [views.tabs.tabText(i).replace("&&", "&") for i in range(views.tabs.count())]


def _built(views: LabViews, i: int) -> bool:
    return views.tabs.widget(i).layout().count() == 1


def test_the_tabs_behind_training_are_built_in_the_turns_after_and_keep_their_places(qtbot):
    views = LabViews()
    qtbot.addWidget(views)
    assert _names(views) == ["Training", *LATER_TABS]  # every tab named from the start
    assert not any(_built(views, i) for i in (1, 2, 3))
    qtbot.waitUntil(lambda: all(_built(views, i) for i in (1, 2, 3)), timeout=UI_MS)
    assert _names(views) == ["Training", *LATER_TABS]
    assert views.tabs.widget(1).isAncestorOf(views.comparison)
    assert views.tabs.widget(2).isAncestorOf(views.pruning_plot)
    assert views.tabs.widget(3).isAncestorOf(views.phase)


def test_a_view_asked_for_before_its_tab_is_built_is_built_then(qtbot):
    views = LabViews()
    qtbot.addWidget(views)
    assert isinstance(views.ranking, QTableWidget)  # no turn of the loop in between
    assert isinstance(views.pruning_plot, CurvePlot)
    assert all(_built(views, i) for i in (1, 2, 3))
    views.empty(10, _Now())  # what a new run does to every tab
    assert views.comparison.rowCount() == 0


class _Now:
    """Runs what is scheduled at once (the page's StaggeredRefresh spreads it over turns)."""

    def schedule(self, _name, work) -> None:
        work()
