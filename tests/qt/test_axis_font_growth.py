"""A heads axis named before presentation mode enlarges the application font
spaces its names for the font it paints with, not the one it was named in."""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QApplication

from mha_explorer.qt.heads.token_axis import TokenAxis

WORDS = ("the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired")


def test_names_are_thinned_again_when_the_application_font_grows(qtbot):
    axis = TokenAxis("left")
    axis.set_labels(WORDS)
    before = QApplication.font()
    length = 10 * (QFontMetrics(before).height() + 1) + 2  # room for every name at this size
    assert len(axis.tickValues(-0.5, 9.5, length)[0][1]) == 10
    big = QFont(before)
    big.setPointSizeF(before.pointSizeF() * 2)
    QApplication.setFont(big)
    try:
        (spacing, ticks), = axis.tickValues(-0.5, 9.5, length)
        line = QFontMetrics(big).height()
        assert len(ticks) < 10 and spacing * length / 10 >= line  # a line apart, not overprinted
    finally:
        QApplication.setFont(before)
