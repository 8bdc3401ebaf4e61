"""The tokens along a one-head T×S picture: the query words down its left, the
key words along its top, upright when they fit side by side, else turned a
quarter and, when still crowded, every k-th one (core.token_ticks, as the heads
panel thins its axes). Plain text: a token like <h1>BIG</h1> reads literally."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF

from mha_explorer.core.display.token_ticks import elide, label_step, spaced_positions
from mha_explorer.core.stages.trace import current_trace
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_items import EDGE, TextItem

LABEL_AIR = 6  # between neighbouring words, and between the words and the grid


@dataclass(frozen=True)
class TokenBands:
    """Room the words take beside the grid: ``left`` wide, ``top`` tall."""

    q: tuple[str, ...]
    kv: tuple[str, ...]
    left: float
    top: float
    turned: bool  # the key words read upwards, one line per column
    picked: tuple[int, ...] | None = None  # a long sequence's computed query rows: only these are named


def token_names(ctx) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Query-side and key-side names: the trace's, else the config's sentence,
    else positions."""
    cfg = ctx.config
    trace = current_trace(ctx.trace, cfg)
    if trace is not None and len(trace.tokens_q) == cfg.T and len(trace.tokens_kv) == cfg.S:
        return tuple(trace.tokens_q), tuple(trace.tokens_kv)
    q = cfg.tokens if cfg.tokens is not None and len(cfg.tokens) == cfg.T \
        else tuple(str(i) for i in range(cfg.T))
    kv = q if not cfg.is_cross else tuple(str(j) for j in range(cfg.S))
    return q, kv


@lru_cache(maxsize=8)
def _widest(names: tuple[str, ...], points: float) -> float:
    metrics = QFontMetricsF(style.font(points))
    return max((metrics.horizontalAdvance(elide(t)) for t in set(names)), default=0.0)


def _points() -> float:
    return max(style.LABEL_PT, style.type_floor())


def line_height() -> float:
    return QFontMetricsF(style.font(style.LABEL_PT)).height()


def widest(names: tuple[str, ...]) -> float:
    return _widest(names, _points())


def bands(ctx, top_fits) -> TokenBands:
    """``top_fits(left, top)``: whether upright key words fit their columns when
    the layout keeps that much room for the words."""
    q, kv = token_names(ctx)
    trace = current_trace(ctx.trace, ctx.config)
    picked = trace.row_ids if trace is not None else None
    left = widest(q) + 2 * LABEL_AIR + EDGE
    upright = line_height() + 2 * LABEL_AIR + EDGE
    if top_fits(left, upright):
        return TokenBands(q, kv, left, upright, False, picked)
    return TokenBands(q, kv, left, widest(kv) + 2 * LABEL_AIR + EDGE, True, picked)


def _centres(count: int, length: float, need: float) -> list[tuple[int, float]]:
    """(position, centre along the axis) of the words shown on an axis ``length``
    long, each needing ``need``. Words taller than their rows are spread over the
    length less one word, so the first and last stay within the grid's ends."""
    pitch = length / count
    if need <= pitch:
        return [(i, (i + 0.5) * pitch) for i in range(count)]
    span = length - need
    if span <= 0 or count == 1:
        return [(0, length / 2)]
    step = label_step(count - 1, need, span)
    return [(i, need / 2 + i * span / (count - 1)) for i in spaced_positions(count, step)]


def _picked_centres(picked: tuple[int, ...], count: int, length: float,
                    need: float) -> list[tuple[int, float]]:
    """As ``_centres``, but naming only rows of ``picked`` (the rows the maps show), each at
    its own row's place: from the first, every picked row a word's height past the last
    named, and the last picked row (in place of the one before it when they would touch)."""
    if need <= length / count:  # every row has room for its word
        return [(i, (i + 0.5) * length / count) for i in picked]
    span = length - need  # as _centres: the ends stay within the grid
    if span <= 0 or count == 1:
        return [(picked[0], length / 2)]
    shown: list[tuple[int, float]] = []
    for i in picked:
        y = need / 2 + i * span / (count - 1)
        if not shown or y - shown[-1][1] >= need:
            shown.append((i, y))
    last = picked[-1]
    y = need / 2 + last * span / (count - 1)
    if shown[-1][0] != last:
        if len(shown) > 1 and y - shown[-1][1] < need:
            shown.pop()
        if y - shown[-1][1] >= need:
            shown.append((last, y))
    return shown


def draw(c, rect: QRectF, b: TokenBands, *, rows: bool = True, cols: bool = True) -> None:
    """The words beside ``rect``: rows down its left, columns along its top."""
    line = line_height()
    if rows and b.q:
        centres = _centres(len(b.q), rect.height(), line) if b.picked is None else \
            _picked_centres(b.picked, len(b.q), rect.height(), line)
        for i, y in centres:
            word = c.text(f"tok.q{i}", elide(b.q[i]), rect.left() - LABEL_AIR - EDGE, rect.top() + y,
                          "cr", points=style.LABEL_PT)
            word.placement, word.detail = "pin", True  # beside its row, or on the grid's hover
    if cols and b.kv:
        need = line if b.turned else widest(b.kv) + LABEL_AIR
        bottom = rect.top() - LABEL_AIR - EDGE
        for j, x in _centres(len(b.kv), rect.width(), need):
            cx = rect.left() + x
            if not b.turned:
                word = c.text(f"tok.k{j}", elide(b.kv[j]), cx, bottom, "bc", points=style.LABEL_PT)
            else:
                word = TextItem(f"tok.k{j}", elide(b.kv[j]), points=style.LABEL_PT, color=c.ink.ink)
                word.setRotation(-90)  # reads upwards; its start sits next to the grid
                word.setPos(cx - word.boundingRect().height() / 2, bottom)
                c.items.append(word)
            word.placement, word.detail = "pin", True  # over its column, or on the grid's hover
