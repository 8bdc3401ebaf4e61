"""PySide6 6.12.0 on CPython 3.11 forgets to take a reference to None when a
void method returns, so None's count drifts down until the interpreter aborts
(Fatal Python error: none_dealloc). pyproject.toml excludes that release; this
proves the Qt actually installed does not drift."""

import sys

from PySide6.QtWidgets import QWidget

CALLS = 200_000


def test_void_qt_calls_keep_none_refcount(qtbot):
    widget = QWidget()
    qtbot.addWidget(widget)
    before = sys.getrefcount(None)
    for _ in range(CALLS):
        widget.setEnabled(True)  # a void method: returns None to Python
    after = sys.getrefcount(None)
    # A leak loses one reference per call; unrelated interpreter activity moves
    # the count by a handful at most.
    assert after >= before - 1_000, f"None lost {before - after} references over {CALLS} calls"
