"""What the heatmap panel draws for one stage of a trace, as plain numpy.

No Qt and no torch: this module only picks the engine's arrays out of a Trace,
turns them into C-contiguous float32 images and says how to colour and label
them. Keeping it apart from the widgets lets the tests check the numbers without
a window and keeps the panel itself to drawing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mha_explorer.core.display.colors import DIVERGING_COLORMAP, WEIGHTS_COLORMAP
from mha_explorer.core.models.patterns import row_entropy_bits
from mha_explorer.core.stages.catalog import ATTENTION_STAGES as ATTENTION_STAGES  # its old home
from mha_explorer.core.stages.catalog import STAGES, Maps, StageId

if TYPE_CHECKING:
    from mha_explorer.core.stages.trace import Trace


@dataclass(frozen=True)
class HeatMap:
    """One image of the grid (a head, a key/value head, or a whole tensor)."""

    title: str
    image: np.ndarray  # [rows, cols] float32, C-contiguous; masked cells are NaN
    head: int | None = None  # query head, when the map belongs to one
    kv_group: int | None = None  # key/value head it reads or is (GQA/MQA badge)
    footer: str = ""


@dataclass(frozen=True)
class StageMaps:
    """Everything needed to draw one stage for one batch element."""

    stage: str
    maps: tuple[HeatMap, ...]
    levels: tuple[float, float]
    colormap: str
    value_name: str  # what a cell holds: "score", "weight", "Q", ...
    row_kind: str  # ROW_WORDS: "query" / "key" / "token"
    row_labels: tuple[str, ...]  # one per shown row
    row_start: int  # absolute position of the first shown row
    col_kind: str  # COLUMN_WORDS: "key", "feature", "head_dim" or "width"
    col_labels: tuple[str, ...]  # tokens for key columns; empty for feature dims
    caption: str
    column_lines: tuple[float, ...] = ()  # head boundaries, in column units
    d_k: int = 0  # for naming merged columns (head, index within head)
    masked: bool = False  # some cells are masked (NaN): draw the hatch behind them
    empty_reason: str = ""  # set when the trace holds nothing to draw here
    row_positions: tuple[int, ...] = ()  # rows spread over a sequence: each map row's query
    col_size: str = ""  # the columns' dim and count, for the axis words: "D = 512"
    clipped: bool = False  # values past the levels, drawn in the end colours (SignedScale)
    total_rows: int = 0  # the sequence's rows, when the map's rows are picked out of them

    @property
    def axes(self) -> MapAxes:
        return MapAxes(self.row_kind, self.col_kind, self.col_size, len(self.row_positions),
                       self.total_rows)

    @property
    def bar_title(self) -> str:
        """The colour bar's title: what a cell holds, and that outliers sit at its ends."""
        return f"{self.value_name} (outliers clipped)" if self.clipped else self.value_name

    def position(self, row: int) -> int:
        """The sequence position of map row ``row`` (rows are positions unless picked)."""
        return self.row_positions[row - self.row_start] if self.row_positions else row

    @property
    def shows_query_heads(self) -> bool:
        return bool(self.maps) and self.maps[0].head is not None

    def row_label(self, row: int) -> str:
        return self.row_labels[row - self.row_start]

    def describe(self, index: int, row: int, col: int) -> str:
        """'head 2 · query 'cat' (3) → key 'sat' (5) · weight 0.1234567'."""
        cell = self.maps[index]
        value = cell.image[row - self.row_start, col]
        where = f"{self.row_kind} '{self.row_label(row)}' ({self.position(row):,})"
        if self.col_kind == "key":
            where += f" → key '{self.col_labels[col]}' ({col})"
        elif self.d_k and len(self.column_lines):
            owner = "kv head" if self.value_name in ("K", "V") else "head"
            where += f", dim {col} ({owner} {col // self.d_k}, d_k index {col % self.d_k})"
        else:
            where += f", dim {col}"
        shown = "masked (−∞)" if np.isnan(value) else str(np.float32(value))
        return f"{cell.title} · {where} · {self.value_name} {shown}"


# What a map's rows and columns are, by the kind each builder below gives them: the stage's
# kind of maps (catalog.Maps) decides the columns, the tensor shown decides the rows.
ROW_WORDS = {"query": "queries", "key": "keys", "token": "tokens"}
COLUMN_WORDS = {
    "key": "keys",  # Maps.ATTENTION: one column per key
    "feature": "features",  # Maps.TOKENS: each row is a token's whole vector
    "head_dim": "dims of one head",  # Maps.SPLIT, Maps.CONTEXT: a head's slice of the vector
    "width": "each matrix's columns",  # Maps.STORED with matrices of several kinds
}
# the columns each kind of stage draws, where the stage (not the tensor) decides them
STAGE_COLUMNS = {Maps.ATTENTION: "key", Maps.CONTEXT: "head_dim", Maps.SPLIT: "head_dim",
                 Maps.TOKENS: "feature"}


@dataclass(frozen=True)
class MapAxes:
    """What the rows and the columns of a set of maps are, and the words that say it."""

    rows: str  # a key of ROW_WORDS
    columns: str  # a key of COLUMN_WORDS
    size: str = ""  # the columns' dim: "D = 512"
    picked: int = 0  # rows picked out of the sequence (0: every row, or a window of them)
    total: int = 0  # the sequence's rows, when picked

    @property
    def row_words(self) -> str:
        words = ROW_WORDS[self.rows]
        if self.picked and self.total > self.picked:
            return f"{self.picked:,} of {self.total:,} {words}, spread evenly, each exact"
        return words

    @property
    def column_words(self) -> str:
        words = COLUMN_WORDS[self.columns]
        return f"{words} ({self.size})" if self.size else words

    def lines(self) -> tuple[str, str]:
        """('rows: queries ↓', 'columns: keys →'), as the maps' axes are drawn:
        row 0 at the top, column 0 at the left."""
        return f"rows: {self.row_words} ↓", f"columns: {self.column_words} →"


BULK_SPAN = 10.0  # signed maps: colours reach this many times the median |value| at least
SCALE_SAMPLE = 1 << 18  # values the median is read from, at most (spread evenly)


@dataclass(frozen=True)
class SignedScale:
    """Levels centred on 0 for signed values: the largest |value|, or, where a few values
    lie far past the rest (the outlier dimensions of a trained model's residual stream), ten
    times the median |value|, so that the rest are not all drawn in the middle colour. Random
    normal values never reach ten times their median (that is 6.7 standard deviations)."""

    levels: tuple[float, float]
    peak: float  # the largest finite |value|
    past: float = 0.0  # the share of the values past the levels (read from a sample)

    @property
    def clipped(self) -> bool:
        return self.levels[1] < self.peak

    def words(self, name: str) -> str:
        """The caption's words for the colours: 'colour centred on 0, ±3.68' or the clip."""
        high = self.levels[1]
        if not self.clipped:
            return f"colour centred on 0, ±{high:.3g}"
        share = f"{self.past:.1%} of the values" if self.past >= 0.001 else "a few values"
        return (f"colour centred on 0, clipped at ±{high:.3g} ({BULK_SPAN:g} × the median |{name}|); "
                f"{share} lie past it, up to ±{self.peak:.3g}")


def signed_scale(arrays) -> SignedScale:
    """The colour scale of signed maps (see SignedScale); NaN (masked) cells left out."""
    arrays = [a for a in arrays if a.size]
    _, peak = symmetric_levels(arrays)
    total = sum(a.size for a in arrays)
    stride = max(1, total // SCALE_SAMPLE)
    sample = np.concatenate([np.abs(a.reshape(-1)[::stride]) for a in arrays]) if arrays else \
        np.zeros(0, np.float32)
    sample = sample[np.isfinite(sample)]
    bulk = BULK_SPAN * float(np.median(sample)) if sample.size else 0.0
    if 0 < bulk < peak:
        return SignedScale((-bulk, bulk), peak, float(np.mean(sample > bulk)))
    return SignedScale((-peak, peak), peak)


def symmetric_levels(arrays) -> tuple[float, float]:
    """±max|finite value| over all arrays: a diverging map centred on 0."""
    peak = 0.0
    for a in arrays:
        if not a.size:
            continue
        # fmax/fmin skip NaN without copying the array: a map of 4096 keys per row was
        # masked, copied and made absolute once per head, most of drawing a large trace
        hi, lo = np.fmax.reduce(a, axis=None), np.fmin.reduce(a, axis=None)
        if np.isfinite(hi) and np.isfinite(lo):
            peak = max(peak, float(hi), float(-lo))
            continue
        finite = a[np.isfinite(a)]  # ±inf present (or every value NaN): the slow, exact way
        if finite.size:
            peak = max(peak, float(np.abs(finite).max()))
    peak = peak or 1.0  # an all-zero or all-masked tensor still gets a usable bar
    return -peak, peak


def head_entropies(trace: Trace, batch: int) -> tuple[float, ...]:
    """Per query head, the mean entropy in bits of the shown attention rows."""
    weights = trace.tensors[StageId.softmax]["weights"][trace.batch_slot(batch)]  # [H, r, S]
    keep = ~np.asarray(trace.masked_rows, dtype=bool)[list(trace.shown_rows)]
    return tuple(row_entropy_bits(weights[h], keep) for h in range(weights.shape[0]))


def top_keys(weights_row: np.ndarray, k: int,
             visible: np.ndarray | None = None) -> list[tuple[int, float]]:
    """The k largest (key position, weight) pairs of one attention row, largest first.

    ``visible`` (bool per key) leaves masked keys out: their weight is 0 by the
    mask, not by the model, and listing them would read as "attends to nothing".
    """
    keys = np.arange(weights_row.size) if visible is None else np.flatnonzero(visible)
    if not keys.size:
        return []
    k = max(1, min(int(k), keys.size))
    w = weights_row[keys]
    order = np.lexsort((keys, -w))[:k]  # largest weight first; ties: lower position
    return [(int(keys[i]), float(w[i])) for i in order]


def _image(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _batch_note(trace: Trace, b: int) -> str:
    return f"batch element {b} of {trace.config.batch}"


def _rows_note(start: int, stop: int, total: int) -> str:
    return f"rows {start}–{stop - 1} of {total:,}"


def statistics_rows(trace: Trace) -> str:
    """The query rows a statistic of the kept attention maps is over, as a sentence ("" when
    the trace keeps every row)."""
    if trace.row_ids is not None:
        return f"Over {picked_rows_note(trace.row_ids, trace.config.T)}."
    if trace.mode == "windowed":
        return f"Over query {_rows_note(*trace.rows, trace.config.T)}."
    return ""


def picked_rows_note(rows: tuple[int, ...], total: int) -> str:
    """'query rows 0, 11,111, …, 99,999 (10 of 100,000, spread evenly, each exact)'."""
    named = ", ".join(f"{r:,}" for r in rows[:4]) + (f", …, {rows[-1]:,}" if len(rows) > 4 else "")
    return f"query rows {named} ({len(rows):,} of {total:,}, spread evenly, each exact)"


@dataclass(frozen=True)
class _Pick:
    """What every stage's maps are picked from: one batch element of one trace."""

    trace: Trace
    stage: str
    batch: int
    slot: int  # the batch element's index in the stored arrays

    @property
    def cfg(self):
        return self.trace.config

    @property
    def stored(self) -> dict[str, np.ndarray]:
        return self.trace.tensors.get(self.stage, {})

    @property
    def note(self) -> str:
        return _batch_note(self.trace, self.batch)

    def base(self, **overrides) -> dict:
        return {"stage": self.stage, "row_start": 0, "d_k": self.cfg.d_k, **overrides}

    @property
    def columns(self) -> str:
        """What this stage's maps have as columns, from the stage's kind of maps."""
        return STAGE_COLUMNS.get(STAGES[StageId(self.stage)].maps, "width")

    def q_heads(self, arrays, value_name, levels, colormap, col_labels, caption, rows,
                footers=None, masked=False, row_ids=None, **extra) -> StageMaps:
        """One map per query head, each tagged with the key/value head it reads."""
        cfg = self.cfg
        shared_kv = cfg.Hkv != cfg.H
        maps = tuple(
            HeatMap(f"head {h}", arrays[h], head=h,
                    kv_group=cfg.kv_head_of(h) if shared_kv else None,
                    footer=footers[h] if footers else "")
            for h in range(cfg.H))
        r0, r1 = rows
        tokens = tuple(self.trace.tokens_q)
        labels = tokens[r0:r1] if row_ids is None else tuple(tokens[i] for i in row_ids)
        return StageMaps(maps=maps, levels=levels, colormap=colormap, value_name=value_name,
                         row_kind="query", row_labels=labels,
                         col_kind=self.columns, col_labels=col_labels, caption=caption,
                         masked=masked, row_positions=tuple(row_ids or ()),
                         total_rows=self.cfg.T if row_ids else 0, **self.base(row_start=r0), **extra)

    def empty(self, reason: str) -> StageMaps:
        return StageMaps(maps=(), levels=(0.0, 1.0), colormap=WEIGHTS_COLORMAP, value_name="",
                         row_kind="query", row_labels=(), col_kind=self.columns,
                         col_labels=(), caption=reason, empty_reason=reason, **self.base())


def build_stage_maps(trace: Trace, stage: str, batch: int, tensor: str = "Q",
                     entropies: tuple[float, ...] | None = None,
                     stretch_weights: bool = False) -> StageMaps:
    """Pick ``stage``'s arrays for batch element ``batch`` out of ``trace``.

    ``tensor`` chooses Q, K or V at project, view and transpose. ``entropies``
    (from head_entropies) saves recomputing them when only the stage changed.
    ``stretch_weights`` colours weights from 0 to the largest shown instead of
    0 to 1: over thousands of keys every weight is near 0 and [0, 1] shows none.
    Raises IndexError when the trace does not keep that batch element
    (windowed mode).
    """
    pick = _Pick(trace, stage, batch, trace.batch_slot(batch))
    kind = STAGES[StageId(stage)].maps
    if kind is Maps.ATTENTION:
        return _attention_maps(pick, entropies, stretch_weights)
    if kind is Maps.CONTEXT:
        return _context_maps(pick)
    if kind is Maps.SPLIT:
        return _split_maps(pick, tensor)
    return _matrix_maps(pick, tensor)


# weights all below this read as one flat colour on the 0-to-1 scale
FAINT_WEIGHT = 0.05


def _attention_maps(pick: _Pick, entropies: tuple[float, ...] | None,
                    stretch_weights: bool) -> StageMaps:
    """Scores or softmax weights: one T×S map per query head (windowed: the kept rows)."""
    trace, cfg, stage = pick.trace, pick.cfg, pick.stage
    T, S, H = cfg.T, cfg.S, cfg.H
    tkv = tuple(trace.tokens_kv)
    name = "scores" if stage == StageId.scores else "weights"
    if name not in pick.stored:
        return pick.empty(f"this trace kept no {name} to draw (the engine stored none for "
                          f"{_rows_note(*trace.rows, T)})")
    block = pick.stored[name][pick.slot]  # [H, r, S]
    r0, r1 = trace.rows
    ids = trace.row_ids
    if ids is not None:  # rows spread over the sequence: the map's rows are these, in order
        r0, r1 = 0, len(ids)
        rows_note = picked_rows_note(ids, T)
    elif trace.mode == "windowed":
        rows_note = _rows_note(r0, r1, T) + " (windowed: exact rows for what is shown)"
    else:
        rows_note = f"all {T:,} query rows"
    if stage == StageId.scores:
        arrays = [_image(np.where(np.isneginf(block[h]), np.float32(np.nan), block[h]))
                  for h in range(H)]
        scale = signed_scale(arrays)
        masked = " · hatched: masked (−∞)" if cfg.causal else ""
        caption = (f"scores Q·Kᵀ/√d_k per head, {pick.note}, "
                   f"{rows_note} · {scale.words('score')}{masked}")
        return pick.q_heads(arrays, "score", scale.levels, DIVERGING_COLORMAP, tkv, caption,
                            (r0, r1), masked=cfg.causal, row_ids=ids, clipped=scale.clipped)
    arrays = [_image(block[h]) for h in range(H)]
    bits = head_entropies(trace, pick.batch) if entropies is None else entropies
    footers = [f"entropy {e:.2f} bits" for e in bits]
    # trained heads only: on random weights a "prev 0.11" reads as meaning where there is none
    whole = ids is None and (r0, r1) == (0, T) and T == S
    badges = pattern_badges(block, tkv) if whole and cfg.weights_spec.trained else None
    if badges:
        footers = [f"{foot} · {b}" for foot, b in zip(footers, badges, strict=True)]
    levels, scale = (0.0, 1.0), "0 to 1"
    top = max((float(np.nanmax(a)) for a in arrays if a.size), default=0.0)
    if stretch_weights:
        levels, scale = (0.0, top or 1.0), f"0 to {top or 1.0:.3g} (stretched to the largest)"
    elif 0.0 < top < FAINT_WEIGHT:  # over many keys every weight is tiny: the maps look empty
        scale += (f" (the largest weight shown is {top:.2g}, too faint to see on that scale: "
                  "stretch colours shows the pattern)")
    caption = (f"attention weights softmax(scores) per head, "
               f"{pick.note}, {rows_note} · colour {scale} · entropy in bits, mean over the "
               f"shown rows (uniform over {S:,} keys: {np.log2(S):.2f} bits)")
    return pick.q_heads(arrays, "weight", levels, WEIGHTS_COLORMAP, tkv, caption,
                        (r0, r1), footers, row_ids=ids)


_NOT_COMPUTED = ("not computed: only the attention rows the picture shows were computed, and this "
                 "stage needs every row")


def _context_maps(pick: _Pick) -> StageMaps:
    cfg = pick.cfg
    if "context" not in pick.stored:  # rows mode stops at the softmax
        return pick.empty(_NOT_COMPUTED)
    ctx = pick.stored["context"][pick.slot]  # [H, T, d_k]
    arrays = [_image(ctx[h]) for h in range(cfg.H)]
    scale = signed_scale(arrays)
    caption = (f"context = A·V per head (T × d_k = {cfg.T:,} × {cfg.d_k}), {pick.note} · "
               f"{scale.words('context')}")
    return pick.q_heads(arrays, "context", scale.levels, DIVERGING_COLORMAP, (), caption,
                        (0, cfg.T), clipped=scale.clipped,
                        col_size=width_words(cfg, ctx.shape[-1], per_head=True))


def _split_maps(pick: _Pick, tensor: str) -> StageMaps:
    """View or transpose: Q per query head, K or V per key/value head."""
    cfg, stage = pick.cfg, pick.stage
    T, S, dk = cfg.T, cfg.S, cfg.d_k
    src = pick.stored[tensor][pick.slot]  # view: [T|S, H|Hkv, d_k]; transpose: [H|Hkv, T|S, d_k]
    heads = src.shape[1] if stage == StageId.view else src.shape[0]
    arrays = [_image(src[:, h] if stage == StageId.view else src[h]) for h in range(heads)]
    scale = signed_scale(arrays)
    levels, size = scale.levels, width_words(cfg, src.shape[-1], per_head=True)
    how = ("view: the same numbers read as heads, no copy" if stage == StageId.view
           else "transpose: heads moved in front, strides swapped, no copy")
    if tensor == "Q":
        caption = (f"Q per head (T × d_k = {T:,} × {dk}), {pick.note} · {how} · "
                   f"{scale.words('Q')}")
        return pick.q_heads(arrays, "Q", levels, DIVERGING_COLORMAP, (), caption, (0, T),
                            clipped=scale.clipped, col_size=size)
    readers = cfg.group_size
    shared_kv = cfg.Hkv != cfg.H
    maps = tuple(
        HeatMap(f"kv head {g}", arrays[g], kv_group=g if shared_kv else None,
                footer=(f"read by heads {g * readers}–{(g + 1) * readers - 1}"
                        if readers > 1 else ""))
        for g in range(heads))
    caption = (f"{tensor} per key/value head (S × d_k = {S:,} × {dk}), {pick.note} · {how} · "
               f"{scale.words(tensor)}")
    return StageMaps(maps=maps, levels=levels, colormap=DIVERGING_COLORMAP, value_name=tensor,
                     row_kind="key", row_labels=tuple(pick.trace.tokens_kv), col_kind=pick.columns,
                     col_labels=(), caption=caption, clipped=scale.clipped, col_size=size,
                     **pick.base())


def width_words(cfg, width: int, per_head: bool = False) -> str:
    """A map's column count as the config names it: 'D = 512', 'H·d_k = 1,024' (a model whose
    heads are not D / H wide), 'Hkv·d_k = 128', 'd_k = 64' (first, for a head's own columns)."""
    names = (("D", cfg.d_model), ("H·d_k", cfg.H * cfg.d_k), ("Hkv·d_k", cfg.kv_dim), ("d_k", cfg.d_k))
    for name, size in (names[-1:] + names[:-1]) if per_head else names:
        if width == size:
            return f"{name} = {size:,}"
    return f"{width:,}"


def _matrix_maps(pick: _Pick, tensor: str) -> StageMaps:
    """One whole [rows, width] matrix: input X, a projection, merged, Y."""
    cfg, stage = pick.cfg, pick.stage
    T, dk = cfg.T, cfg.d_k
    tq, tkv = tuple(pick.trace.tokens_q), tuple(pick.trace.tokens_kv)
    name = {StageId.input: "X", StageId.project: tensor, StageId.merge: "merged"}.get(stage, "Y")
    if name not in pick.stored:  # rows mode stops at the softmax
        return pick.empty(_NOT_COMPUTED)
    image = _image(pick.stored[name][pick.slot])
    width = image.shape[1]  # D, or the heads side by side (H·d_k need not be D)
    size = width_words(cfg, width)
    heads = tuple(float(c) - 0.5 for c in range(dk, width, dk))  # where one head's columns end
    if stage == StageId.input:
        rows_kind, labels, lines = "token", tq, ()
        what = f"X, the token vectors (T × D = {T:,} × {width:,})"
    elif stage == StageId.project:
        rows_kind, labels = ("query", tq) if tensor == "Q" else ("key", tkv)
        lines = heads
        src = "X_kv" if cfg.is_cross and tensor != "Q" else "X"
        plus_b = f" + b_{tensor}" if cfg.bias else ""
        what = (f"{tensor} = {src}·W_{tensor}ᵀ{plus_b} ({len(labels):,} × {width:,}); dashed "
                f"lines: where view will cut it into heads of d_k = {dk}")
    elif stage == StageId.merge:
        rows_kind, labels, lines = "query", tq, heads
        what = (f"merged heads ({len(tq):,} × {width:,}); dashed lines: head boundaries "
                f"every d_k = {dk} columns")
    else:  # output
        rows_kind, labels, lines = "query", tq, ()
        what = (f"Y = merged·W_Oᵀ ({len(tq):,} × {width:,}); W_O mixes the heads, so "
                "no column belongs to one head any more")
    scale = signed_scale([image])
    caption = f"{what}, {pick.note} · {scale.words(name)}"
    return StageMaps(maps=(HeatMap(name, image),), levels=scale.levels, colormap=DIVERGING_COLORMAP,
                     value_name=name, row_kind=rows_kind, row_labels=labels,
                     col_kind=pick.columns, col_labels=(), caption=caption, column_lines=lines,
                     clipped=scale.clipped, col_size=size, **pick.base())


def pattern_badges(maps: np.ndarray, tokens_kv) -> list[str]:
    """Each head's strongest pattern as a badge ("prev 0.98"), for whole self-attention
    maps [H, T, T]; the same scores the Layers dock sorts by."""
    from mha_explorer.core.models import patterns  # it reads this module's entropy rule

    labels = list(tokens_kv) if tokens_kv is not None and len(tokens_kv) == maps.shape[-1] else None
    return [patterns.badge(head) for head in patterns.head_scores(maps, labels)]
