"""Layouts inside layouts, nested before they are filled.

PySide wraps every item of a layout that already holds widgets when it is added to
another layout, and keeps those wrappers; Qt later deletes the items without a word,
and a wrapper left behind can come back for a new object at the same address (a
widget's style() once returned a QWidgetItem). A layout nested while still empty
gives its items no wrappers (tests/qt/test_layout_item_wrappers.py)."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtWidgets import QBoxLayout, QLayout

L = TypeVar("L", bound=QLayout)


def nested(parent: QBoxLayout, child: L, stretch: int = 0) -> L:
    """``child`` added to ``parent`` now, empty; fill it afterwards."""
    parent.addLayout(child, stretch)
    return child
