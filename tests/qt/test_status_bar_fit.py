"""The status bar at 1024 px while the trace and another job both run: two bars and two
Cancel buttons beside the messages. Words that do not fit are cut with "…" (the whole text
in the tip), never clipped mid-letter, and the device and the time stay whole."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QLabel, QWidget
from waits import UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.shell.elided_label import ElidedLabel

SMALL = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu")


def busy_status_bar(window):
    """The trace's bar and Cancel and a second job's words, bar and Cancel, all on show."""
    view = window.status_view
    view._set_message("computing the trace of the largest config you asked for…", "neutral")
    view.progress_bar.setValue(45)
    view.progress_bar.show()
    view.cancel_button.show()
    jobs = view.job_progress
    jobs.label.setText("decoding step by step… · computing the tiles…")
    jobs.bar.setValue(30)
    jobs.show()
    return view


def test_a_crowded_status_bar_cuts_words_with_an_ellipsis_and_keeps_device_and_time(qtbot, make_window):
    window = make_window(SMALL, size=(1024, 768))
    qtbot.waitUntil(lambda: window.status_view.memory_label.text() != "", timeout=UI_MS)  # after 1st paint
    view = busy_status_bar(window)
    qtbot.waitUntil(lambda: view.job_progress.isVisible() and view.cancel_button.isVisible(), timeout=UI_MS)
    view.layout().activate()
    parts = (view, view.job_progress)
    shown = [w for w in view.findChildren(QWidget)
             if w.isVisible() and w.parent() in parts and w is not view.job_progress]
    bounds = view.rect()
    rects = [(w, QRect(w.mapTo(view, QPoint(0, 0)), w.size())) for w in shown]
    for widget, rect in rects:
        assert bounds.contains(rect), widget.objectName()
    for i, (a, ra) in enumerate(rects):
        for b, rb in rects[i + 1:]:
            assert not ra.intersects(rb), (a.objectName(), b.objectName())
    labels = [w for w in shown if isinstance(w, QLabel) and w.text()]
    assert {w.objectName() for w in labels} >= {"status_message", "job_words", "memory_estimate",
                                                 "device", "compute_time"}
    cut = []
    for label in labels:
        assert isinstance(label, ElidedLabel), label.objectName()
        drawn = label.shown_text()
        fits = label.fontMetrics().horizontalAdvance(drawn) <= label.contentsRect().width()
        assert fits, (label.objectName(), drawn)
        if drawn != label.text():
            assert drawn.endswith("…") and label.text().startswith(drawn[:-1]), label.objectName()
            assert label.toolTip().startswith(label.text())
            cut.append(label.objectName())
    assert cut  # 1024 px is too narrow for every word: something had to give
    assert "device" not in cut and "compute_time" not in cut
    assert window.status_view.device_label.shown_text().startswith("device: ")
