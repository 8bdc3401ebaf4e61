"""Building the window leaves no Python wrapper on a layout item.

PySide wraps the items of a layout that is filled before it is nested in another,
and Qt deletes those items without telling it; a wrapper left behind then stands at
an address Qt may reuse, and a later ``widget.style()`` came back as a QWidgetItem
("'QWidgetItem' object has no attribute 'standardIcon'": fifteen windows failed that
way in one test run). The rule: nest a layout before filling it, and never ask a
layout for its items."""

from __future__ import annotations

import shiboken6
from PySide6.QtWidgets import QLayout, QLayoutItem

from mha_explorer.core.config import MHAConfig


def _item_wrappers() -> list:
    """Widget and spacer items that C++ made and Python wrapped afterwards: Qt deletes
    them unannounced. (Layouts are QObjects, whose end Qt announces; an item made in
    Python, as pyqtgraph's forms make spacers, tells its wrapper when it goes.)"""
    return [w for w in shiboken6.getAllValidWrappers()
            if isinstance(w, QLayoutItem) and not isinstance(w, QLayout) and not shiboken6.createdByPython(w)]


def test_the_window_its_docks_the_lab_a_head_and_the_key_help_leave_no_layout_item_wrappers(
        qtbot, make_window):
    before = {id(w) for w in _item_wrappers()}
    window = make_window(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu"))
    window.lab.show()
    window.heatmaps.open_head(0).close()
    window.show_key_help()
    new = [w for w in _item_wrappers() if id(w) not in before]
    # (only their type is read: the item behind one may already be gone)
    assert not new, f"{len(new)} layout items wrapped: {sorted({type(w).__name__ for w in new})}"
