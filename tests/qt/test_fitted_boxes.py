"""Boxes of words that keep every line whole: the stage header's box follows its content when a
line inside it shows again, and the Lab's pruning note never grows past its few lines."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget
from waits import UI_MS

from mha_explorer.core.lab.lesson import HONEST_PRUNING, MICHEL
from mha_explorer.qt.lab.short_note import ShortNote
from mha_explorer.qt.stage.header_fit import HeaderBox


def _header_over_a_picture(qtbot) -> tuple[QWidget, HeaderBox, list[QLabel]]:
    window = QWidget()
    column = QVBoxLayout(window)
    box = HeaderBox()
    box.setWidgetResizable(True)
    words = QWidget()
    lines = QVBoxLayout(words)
    labels = [QLabel(f"line {i} of the stage's words", wordWrap=True) for i in range(4)]
    for label in labels:
        lines.addWidget(label)
    box.setWidget(words)
    picture = QWidget()
    picture.setMinimumHeight(120)
    column.addWidget(box)
    column.addWidget(picture, 1)
    qtbot.addWidget(window)
    window.resize(400, 500)
    window.show()
    qtbot.waitExposed(window, timeout=UI_MS)
    return window, box, labels


def test_a_line_shown_again_gets_its_height_back_in_the_header_box(qtbot):
    _window, box, labels = _header_over_a_picture(qtbot)
    labels[-1].hide()  # as presentation hides the costs
    qtbot.waitUntil(lambda: box.height() < box.widget().heightForWidth(box.viewport().width()) + 20
                    and box.verticalScrollBar().maximum() == 0, timeout=UI_MS)
    shorter = box.height()
    labels[-1].show()  # and shows them again on leaving it

    def whole() -> None:
        assert box.height() > shorter
        assert box.verticalScrollBar().maximum() == 0  # every line in sight, nothing to scroll
        assert labels[-1].geometry().bottom() < box.viewport().height()

    qtbot.waitUntil(whole, timeout=UI_MS)


def _note(qtbot, width: int) -> ShortNote:
    note = ShortNote(f"{HONEST_PRUNING} {MICHEL}", lines=4)
    qtbot.addWidget(note)
    note.resize(width, note.heightForWidth(width))
    note.show()
    qtbot.waitExposed(note, timeout=UI_MS)
    return note


def test_a_long_note_in_a_narrow_column_shows_four_whole_lines_and_the_rest_on_hover(qtbot):
    note = _note(qtbot, 200)
    shown = note.shown_text().split("\n")
    assert len(shown) == 4 and shown[-1].endswith("…")
    assert note.heightForWidth(200) == 4 * note.fontMetrics().lineSpacing()
    assert note.text() == f"{HONEST_PRUNING} {MICHEL}"  # the words themselves stay whole
    assert note.toolTip() == note.text()
    for line in shown:  # each line as the label draws it, not wrapped again
        assert note.fontMetrics().horizontalAdvance(line) <= note.contentsRect().width()


def test_a_note_with_the_room_shows_every_word_and_no_hover(qtbot):
    note = _note(qtbot, 4000)
    assert note.shown_text() == note.text()
    assert note.toolTip() == ""
    assert note.heightForWidth(4000) == note.fontMetrics().lineSpacing()
