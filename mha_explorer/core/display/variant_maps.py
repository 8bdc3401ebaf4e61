"""Heatmaps for the stages beyond the classic nine (positions, RoPE, latent attention's own
steps), as plain numpy: whatever the trace stored for the stage, one map per matrix and
one per head for per-head tensors.

``stage_maps`` is the panel's single entry: the classic stages go to head_maps as before;
latent attention keeps the classic maps where its tensors have the classic layout
(input, scores, softmax, ·V, output) and is drawn generically elsewhere. No Qt, no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mha_explorer.core.display.colors import DIVERGING_COLORMAP
from mha_explorer.core.display.head_maps import (
    HeatMap,
    StageMaps,
    build_stage_maps,
    signed_scale,
    width_words,
)
from mha_explorer.core.stages.catalog import STAGES, Maps, StageId, is_stage
from mha_explorer.core.variants.registry import family_of

if TYPE_CHECKING:
    from mha_explorer.core.stages.trace import Trace

UNBATCHED = ("PE",)  # the same for every batch element: stored without the batch dim


def is_variant_stage(trace: Trace, stage: str) -> bool:
    """Whether ``stage`` of ``trace`` is drawn here (whatever the stage stored) rather than
    by head_maps in the classic layout: the family says which of its stages keep that layout."""
    return STAGES[StageId(stage)].maps is Maps.STORED or stage not in family_of(trace.config).classic_maps


def offers_tensor_choice(stage: str) -> bool:
    return is_stage(stage) and STAGES[StageId(stage)].tensor_choice


def stage_maps(trace: Trace, stage: str, batch: int, tensor: str = "Q",
               entropies: tuple[float, ...] | None = None,
               stretch_weights: bool = False) -> StageMaps:
    """The maps of ``stage`` for batch element ``batch`` (IndexError: element not kept)."""
    if not is_variant_stage(trace, stage):
        return build_stage_maps(trace, stage, batch, tensor, entropies, stretch_weights)
    return variant_maps(trace, stage, batch, tensor)


def _labels(trace: Trace, rows: int) -> tuple[str, ...]:
    """Token labels when the rows are the queries' or the keys' tokens, else positions."""
    for tokens in (trace.tokens_q, trace.tokens_kv):
        if len(tokens) == rows:
            return tuple(tokens)
    return tuple(str(i) for i in range(rows))


def _per_head_choice(stored: dict[str, np.ndarray], tensor: str, stage: str) -> str | None:
    """The per-head tensor to show: the first whose name starts with the chosen letter,
    else the first per-head one. Merge's 4-D context is [nb, T, H, d_v], heads second:
    the merged matrix says the same, so it is left out."""
    if stage == StageId.merge:
        return None
    per_head = [n for n, a in stored.items() if a.ndim == 4 and n not in UNBATCHED]
    for name in per_head:
        if name.lower().startswith(tensor.lower()):
            return name
    return per_head[0] if per_head else None


def variant_maps(trace: Trace, stage: str, batch: int, tensor: str = "Q") -> StageMaps:
    """Each matrix of the stage as one map ([rows, width]) and the chosen per-head tensor
    ([heads, rows, width]) as one map per head; colour centred on 0."""
    cfg, slot = trace.config, trace.batch_slot(batch)
    stored = trace.tensors.get(stage, {})
    chosen = _per_head_choice(stored, tensor, stage)
    maps, shapes, per_head = [], [], []
    for name, array in stored.items():
        if array.ndim == 4 and name != chosen:
            continue
        a = array if name in UNBATCHED else array[slot]  # [rows, width] or [heads, rows, width]
        shapes.append(f"{name} {' × '.join(f'{n:,}' for n in a.shape)}")
        per_head.append(a.ndim == 3)
        if a.ndim == 2:
            maps.append(HeatMap(name, np.ascontiguousarray(a, dtype=np.float32)))
        elif a.ndim == 3:
            maps += [HeatMap(f"{name} · head {h}", np.ascontiguousarray(a[h], dtype=np.float32),
                             head=h if a.shape[0] == cfg.H else None) for h in range(a.shape[0])]
    if not maps:
        reason = f"this trace holds no tensors of the {stage} stage to draw"
        return StageMaps(stage=stage, maps=(), levels=(0.0, 1.0), colormap=DIVERGING_COLORMAP,
                         value_name="", row_kind="token", row_labels=(), row_start=0, col_kind="width",
                         col_labels=(), caption=reason, empty_reason=reason)
    rows = maps[0].image.shape[0]
    same_rows = all(m.image.shape[0] == rows for m in maps)
    scale = signed_scale([m.image for m in maps])
    caption = (f"{stage}: {', '.join(shapes)} · batch element {batch} of {cfg.batch} · "
               f"{scale.words(chosen or maps[0].title)}")
    # a per-head tensor's columns are one head's dims; a matrix's, each token's features
    columns = "head_dim" if all(per_head) else "feature" if not any(per_head) else "width"
    widths = {m.image.shape[1] for m in maps}
    size = width_words(cfg, widths.pop(), columns == "head_dim") if len(widths) == 1 else ""
    return StageMaps(stage=stage, maps=tuple(maps), levels=scale.levels, colormap=DIVERGING_COLORMAP,
                     value_name=chosen or maps[0].title, row_kind="token",
                     row_labels=_labels(trace, rows) if same_rows else tuple(
                         str(i) for i in range(max(m.image.shape[0] for m in maps))),
                     row_start=0, col_kind=columns, col_labels=(), caption=caption,
                     clipped=scale.clipped, col_size=size)
