"""PySide6 6.12.0 on CPython 3.11 forgets to take a reference to None when a
void method returns, so None's count drifts down until the interpreter aborts
(Fatal Python error: none_dealloc). pyproject.toml excludes that release; this
proves the Qt actually installed does not drift."""

import sys

from PySide6.QtWidgets import QWidget

CALLS = 200_000
BLOCK = 1_000
# A leak loses one reference per call; unrelated interpreter activity moves the
# count by a handful at most.
TOLERANCE = 500


def test_void_qt_calls_keep_none_refcount(qtbot):
    widget = QWidget()
    qtbot.addWidget(widget)
    before = sys.getrefcount(None)
    for done in range(BLOCK, CALLS + 1, BLOCK):
        for _ in range(BLOCK):
            widget.setEnabled(True)  # a void method: returns None to Python
        lost = before - sys.getrefcount(None)
        # stop at the first sign of drift, before None's count can reach zero
        assert lost <= TOLERANCE, f"None lost {lost} references after {done} void Qt calls"
