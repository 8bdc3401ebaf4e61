"""The stage diagram's central map names its tokens: the query words down its
left, the key words along its top, thinned or turned when crowded, never one
word printed over another."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QGraphicsSimpleTextItem

from mha_explorer.core.config import MHAConfig

SIX = ("the", "cat", "sat", "on", "the", "mat")
SIXTY_FOUR = tuple(f"w{i}" + "x" * (i % 7) for i in range(64))  # words of varied length


def _window(make_window, words, stage, size=(1280, 720)):
    window = make_window(MHAConfig(d_model=64, n_heads=4, batch=1, seq=len(words), tokens=words,
                                   device="cpu"), size=size)
    window.stage_view.diagram.set_reduced_motion(True)  # items where they end, not mid-slide
    window.controller.set_stage(stage)
    return window.stage_view.diagram


def _words(diagram, axis: str) -> dict[int, QGraphicsSimpleTextItem]:
    """Position -> label item for axis 'q' (rows) or 'k' (columns)."""
    prefix = f"tok.{axis}"
    return {int(key[len(prefix):]): item for key, item in diagram.items_by_key().items()
            if key.startswith(prefix)}


def _assert_no_overprint(diagram) -> None:
    labels = [item for key, item in diagram.items_by_key().items() if key.startswith("tok.")]
    rects = [item.sceneBoundingRect() for item in labels]
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            overlap = a.intersected(b)
            assert overlap.width() <= 0.5 or overlap.height() <= 0.5, (a, b)


@pytest.mark.parametrize("stage", ["scores", "softmax", "weighted_sum"])
def test_six_tokens_are_all_named_on_both_axes(qtbot, make_window, stage):
    diagram = _window(make_window, SIX, stage)
    rows, cols = _words(diagram, "q"), _words(diagram, "k")
    assert [rows[i].text() for i in sorted(rows)] == list(SIX)
    assert [cols[j].text() for j in sorted(cols)] == list(SIX)
    _assert_no_overprint(diagram)
    grid = diagram.items_by_key()["grid"].sceneBoundingRect()
    canvas = diagram.sceneRect()
    for item in (*rows.values(), *cols.values()):
        box = item.sceneBoundingRect()
        assert canvas.contains(box), (item.text(), box)  # not cut at the canvas edge
        assert not box.intersects(grid.adjusted(2, 2, -2, -2)), item.text()  # beside it, not on it
    assert all(box.sceneBoundingRect().right() < grid.left() for box in rows.values())
    assert all(box.sceneBoundingRect().bottom() < grid.top() for box in cols.values())


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_sixty_four_tokens_are_thinned_keeping_the_first_and_the_last(qtbot, make_window, size):
    diagram = _window(make_window, SIXTY_FOUR, "softmax", size)
    rows, cols = _words(diagram, "q"), _words(diagram, "k")
    for shown in (rows, cols):
        assert 0 in shown and 63 in shown
        assert shown[0].text() == SIXTY_FOUR[0] and shown[63].text() == SIXTY_FOUR[63]
        assert all(item.text() == SIXTY_FOUR[i] for i, item in shown.items())
    assert len(rows) < 64  # 64 lines of text do not fit beside this grid
    _assert_no_overprint(diagram)


def test_a_tag_is_shown_as_the_characters_it_is(qtbot, make_window):
    words = ("<h1>BIG</h1>", "is", "a", "tag")
    diagram = _window(make_window, words, "softmax")
    for axis in ("q", "k"):
        item = _words(diagram, axis)[0]
        assert item.text() == "<h1>BIG</h1>"
        # as wide as its characters: rendered as a heading it would drop the tags
        plain = QFontMetricsF(item.font()).horizontalAdvance("<h1>BIG</h1>")
        assert item.boundingRect().width() >= plain - 1


def test_a_long_token_is_cut_with_an_ellipsis(qtbot, make_window):
    words = ("supercalifragilistic", "is", "long")
    diagram = _window(make_window, words, "softmax")
    first = _words(diagram, "q")[0].text()
    assert first.endswith("…") and "supercalifragilistic".startswith(first[:-1]) and len(first) < 20
