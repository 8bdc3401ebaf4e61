"""Tab bars with every tab in sight: a narrow dock shortens the tabs' names with an ellipsis
(the hover says each whole) instead of scrolling tabs past the bar's edge, where their names
were cut in half."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTabWidget


def every_tab_in_sight(tabs: QTabWidget) -> QTabWidget:
    """Names shortened to fit, never scrolled; call once its tabs are added."""
    tabs.setElideMode(Qt.TextElideMode.ElideRight)
    tabs.setUsesScrollButtons(False)
    for i in range(tabs.count()):
        if not tabs.tabToolTip(i):
            tabs.setTabToolTip(i, tabs.tabText(i).replace("&&", "&"))
    return tabs
