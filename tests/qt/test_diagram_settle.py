"""The composer's settling of a picture's texts: a text placed on a tensor or on another text
moves to the nearest clear place inside the canvas, a pinned detail with no room goes to its
tensor's hover, and a text already clear stays where its stage put it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF

from mha_explorer.qt.stage.diagram_items import BlockItem, ChipItem, TextItem
from mha_explorer.qt.stage.diagram_settle import settle
from mha_explorer.qt.stage.diagram_style import LIGHT_INK

pytestmark = pytest.mark.usefixtures("qapp")  # fonts need the application
CANVAS = QRectF(0, 0, 400, 300)


def _block(x: float, y: float, w: float = 100, h: float = 60) -> BlockItem:
    block = BlockItem("Q", w, h, fill=LIGHT_INK.block_fill)
    block.setPos(x, y)
    return block


def _placed(item, x: float, y: float):
    item.setPos(x, y)
    return item


def _words(item) -> QRectF:
    """Where an item's words are on the page (a chip: its plate)."""
    rect = QRectF()
    for run in item.runs():
        rect = rect.united(item.sceneTransform().mapRect(run.rect))
    return rect


def _clear(a, b) -> bool:
    shared = a.sceneBoundingRect().intersected(b.sceneBoundingRect())
    return shared.width() <= 1 or shared.height() <= 1


def test_a_chip_on_a_tensor_moves_off_it_and_stays_near():
    block = _block(150, 120)
    chip = _placed(ChipItem("Q.top.D", "D=512", LIGHT_INK.ink), 170, 130)  # on the block
    start = chip.pos()
    items = [block, chip]
    settle(items, CANVAS, 14)
    body = block.sceneTransform().mapRect(block.body())
    assert not _words(chip).intersects(body)
    assert CANVAS.contains(_words(chip))
    assert (chip.pos() - start).manhattanLength() < 100  # beside its tensor, not across the page


def test_two_piled_texts_are_set_apart_and_a_clear_one_stays():
    first = _placed(TextItem("a", "B=2"), 20, 20)
    second = _placed(TextItem("b", "H=8"), 30, 22)
    alone = _placed(TextItem("c", "head 0 of 8"), 200, 250)
    items = [first, second, alone]
    settle(items, CANVAS, 14)
    assert _clear(first, second)
    assert alone.pos().toTuple() == (200, 250)


def test_a_pinned_detail_with_no_room_goes_to_its_tensor_s_hover():
    block = _block(100, 100)
    total = _placed(TextItem("sum.0", "Σ=1"), 120, 120)
    total.placement, total.detail = "pin", True
    items = [block, total]
    done = settle(items, CANVAS, 14)
    assert total not in items and done.hovers == {block: ["Σ=1"]}


def test_a_text_off_the_canvas_comes_back_onto_it():
    chip = _placed(ChipItem("X.left.B", "B=2", LIGHT_INK.ink), -30, 100)
    items = [chip]
    settle(items, CANVAS, 14)
    assert CANVAS.contains(_words(chip))


def test_a_line_of_words_ending_at_a_chip_is_set_a_space_apart_from_it():
    line = _placed(TextItem("shape", "K, V  [2, 10, 512]"), 20, 100)
    chip = ChipItem("K.left.B", "B=2", LIGHT_INK.ink)
    chip.placement = "fixed"  # the chip stays by its tensor: the words make the room
    _placed(chip, _words(line).right() + 1 - _words(chip).left(), 100)
    settle([line, chip], CANVAS, 14)
    words, plate = _words(line), _words(chip)
    apart = max(plate.left() - words.right(), words.left() - plate.right(),
                plate.top() - words.bottom(), words.top() - plate.bottom())
    assert apart >= 0.25 * words.height()  # a space of the line's type, or a line apart
