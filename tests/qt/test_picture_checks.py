"""The picture checks themselves, on pictures made for them: each fault is found where it is,
named with its texts, and a clean picture passes."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from mha_explorer.core.display.colors import contrast_ratio
from mha_explorer.qt.gallery.faults import faults
from mha_explorer.qt.gallery.read import NO_INK, Picture
from mha_explorer.qt.picture import DrawnShape, DrawnText

pytestmark = pytest.mark.usefixtures("qapp")  # fonts and painting need the application

PAGE = QRectF(0, 0, 400, 300)
INK, GROUND = QColor("#111111"), QColor("#FFFFFF")


def _text(words: str, x: float, y: float, w: float = 60, h: float = 20, **kw) -> DrawnText:
    fields = {"pixel_size": 20.0, "ink": INK, "owner": "test", "clip": PAGE, "ground": GROUND} | kw
    return DrawnText(words, QRectF(x, y, w, h), **fields)


def _picture(texts, shapes=(), presenting=False, paint=None) -> Picture:
    image = QImage(400, 300, QImage.Format.Format_RGB32)
    image.fill(GROUND)
    if paint is not None:
        painter = QPainter(image)
        paint(painter)
        painter.end()
    return Picture("made", list(texts), list(shapes), image, 768.0, presenting)


def _kinds(picture: Picture) -> list[tuple[str, tuple[str, ...]]]:
    return [(f.kind, f.texts) for f in faults(picture)]


def test_a_clean_picture_passes():
    texts = [_text("Q", 10, 10), _text("K", 80, 10), _text("V", 10, 40)]
    assert _kinds(_picture(texts, [DrawnShape(QRectF(200, 100, 80, 80), "test", "Q", label_px=20)])) == []


def test_texts_on_each_other_are_named_but_side_by_side_are_not():
    spaced = [_text("a", 10, 10), _text("b", 80, 10)]  # half an em apart
    assert _kinds(_picture(spaced)) == []
    piled = [_text("B=2", 10, 10), _text("H=8", 50, 15)]
    assert _kinds(_picture(piled)) == [("text on text", ("B=2", "H=8"))]


def test_texts_on_one_line_closer_than_a_space_run_together():
    touching = [_text("h0", 10, 10), _text("h1", 70, 10)]  # edge to edge: 'h0h1'
    assert _kinds(_picture(touching)) == [("run together", ("h0", "h1"))]
    lines = [_text("h0", 10, 10), _text("h1", 70, 40)]  # one under the other
    assert _kinds(_picture(lines)) == []


def test_a_text_on_a_tensor_is_a_fault_unless_it_is_drawn_on_it():
    block = DrawnShape(QRectF(100, 100, 80, 80), "test", "Q")
    part = DrawnShape(QRectF(100, 100, 20, 80), "test", "Q.h0")
    assert _kinds(_picture([_text("… 8", 110, 120)], [block])) == [("text on a tensor", ("… 8",))]
    assert _kinds(_picture([_text("h0", 100, 100, 20, 20, on="Q.h0")], [block, part])) == []
    # another view's words: that view is beside this one, whatever this one's tensor reaches
    assert _kinds(_picture([_text("… 8", 110, 120, owner="header")], [block])) == []


def test_a_text_past_its_view_is_cut():
    clip = QRectF(0, 0, 100, 100)
    assert _kinds(_picture([_text("B=2", -33, 10, clip=clip)])) == [("cut", ("B=2",))]
    assert _kinds(_picture([_text("B=2", 10, 10, clip=clip)])) == []


def test_type_under_the_mode_s_least_is_small():
    # presentation on a 768 px screen: 2.5 % is 19.2 px
    assert _kinds(_picture([_text("Σ=1", 10, 10, pixel_size=18.0)], presenting=True)) == [("small", ("Σ=1",))]
    assert _kinds(_picture([_text("Σ=1", 10, 10, pixel_size=18.0)])) == []  # the window's least: 11 px


@pytest.mark.parametrize(("ink", "ground"), [("#3B4A5C", "#0A4F8F"), ("#969696", "#FFFFFF")])
def test_faint_words_are_found_whether_their_ground_is_said_or_read(ink, ground):
    assert contrast_ratio(ink, ground) < 4.5
    said = _text("MQA", 10, 10, ink=QColor(ink), ground=QColor(ground))
    assert _kinds(_picture([said])) == [("contrast", ("MQA",))]

    def paint(painter: QPainter) -> None:  # a plain widget: words and ground read from the grab
        painter.fillRect(QRectF(100, 100, 80, 30), QColor(ground))
        font = QFont()
        font.setPixelSize(20)
        painter.setFont(font)
        painter.setPen(QColor(ink))
        painter.drawText(QRectF(100, 100, 80, 30), Qt.AlignmentFlag.AlignCenter, "MQA")

    read = _text("MQA", 100, 100, 80, 30, ink=NO_INK, ground=None)
    assert _kinds(_picture([read], paint=paint)) == [("contrast", ("MQA",))]


def test_a_tensor_smaller_than_its_label_is_an_icon():
    icon = DrawnShape(QRectF(100, 100, 13, 13), "test", "W_Q", label_px=20)
    assert _kinds(_picture([], [icon])) == [("icon", ("W_Q",))]


def test_axis_words_must_name_what_the_map_holds():
    x_map = DrawnShape(QRectF(100, 100, 120, 80), "test", "X", "map", axes=("token", "feature"))
    wrong = _text("columns: key →", 100, 70, 120, 20, role="columns", of="X")
    right = _text("columns: feature →", 100, 70, 140, 20, role="columns", of="X")
    assert _kinds(_picture([wrong], [x_map])) == [("axis words", ("columns: key →",))]
    assert _kinds(_picture([right], [x_map])) == []
