"""What the window's Generation dock shows, as numpy and dicts (computed on the worker).

``decode_data`` gives the decode view its rows: the plan's steps for a prompt of
P tokens and N generated ones, the score rows and softmax of every step when
the layer is small enough to compute here, and the caches of the other
variants (MHA, GQA, MQA, a sliding window) growing beside this one.
``tiles_data`` gives the tiles view the tile grid, the plan's numbers and, when
small enough, every tile's running m, l and rescaled output for one head.

Generation is a decoder's business: a trained encoder layer sees the
whole sentence at once, so its shape is used with random weights here and a
note says so. The torch work is imported only inside the functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.display.tile_words import peak_words
from mha_explorer.core.models.catalog import model_named
from mha_explorer.core.plan.decode import cache_growth, decode_steps
from mha_explorer.core.plan.tiles import tile_plan, tile_states
from mha_explorer.core.specs.weights import RANDOM

COMPUTE_MAX_WEIGHTS = 1 << 24  # 4·D² numbers: the layer built here (64 MiB in float32)
COMPUTE_MAX_TOKENS = 512  # P + N decoded step by step for the score rows
TILES_MAX_CELLS = 1 << 22  # B·H·T·S for which the tiles are really computed
TILE_RECORDS = 2048  # tiles kept with their m, l and output


def generation_config(cfg: MHAConfig) -> tuple[MHAConfig, list[str]]:
    """The config the dock runs, and notes: random weights for a trained encoder layer,
    float32 (the step-by-step paths compute in float32 on the CPU)."""
    notes = []
    changes: dict[str, Any] = {}
    if cfg.weights_spec.trained:
        changes.update(weights=RANDOM, weights_path=None)
        model = model_named(cfg.weights)
        notes.append("the cache arithmetic uses this layer's shape with random weights; the tab "
                     "'A trained model writes' runs the real model" if model is not None and model.causal else
                     "a trained encoder layer reads its whole sentence at once; generation is shown with "
                     "its shape and random weights")
    if cfg.dtype != "float32":
        changes["dtype"] = "float32"
    return (cfg.replace(**changes) if changes else cfg), notes


def _computable(cfg: MHAConfig, tokens: int) -> bool:
    return 4 * cfg.d_model ** 2 <= COMPUTE_MAX_WEIGHTS and cfg.batch * tokens * cfg.d_model <= 1 << 24


def _window_only(cfg: MHAConfig, window: int, seen: list[int]) -> dict[str, list[int]]:
    with_window = cache_growth(cfg.replace(window=window), seen)
    return {label: sizes for label, sizes in with_window.items() if "window" in label}


def decode_data(cfg: MHAConfig, prompt: int, steps: int, layers: int | None = None,
                show_batch: int = 0, *, cancel: Callable[[], bool] | None = None,
                progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """{"steps": [DecodeStep dicts], "scores"/"weights": one [H, n, keys] per step or None,
    "growth": {label: cache bytes per step}, "layers", "notes"}; ConfigError for bad P or N,
    Cancelled (between steps) when ``cancel`` says so."""
    cfg, notes = generation_config(cfg)
    rows = decode_steps(cfg, prompt, steps, layers)
    seen = [r.seen_tokens for r in rows]
    growth = cache_growth(cfg, seen)
    if cfg.window is None:  # a sliding window beside them: a cache that stops growing
        window = max(1, (prompt + steps) // 2)
        growth.update(_window_only(cfg, window, seen))
    scores = weights = None
    if prompt + steps > COMPUTE_MAX_TOKENS or not _computable(cfg, prompt + steps):
        notes.append(f"score rows are computed up to {COMPUTE_MAX_TOKENS} tokens and a layer of "
                     "moderate width; the cache and the costs are counted for any size")
    else:
        from mha_explorer.core.engine.decode import run_decode  # torch

        run = run_decode(cfg, prompt, steps, show_batch=show_batch, cancel=cancel, progress=progress)
        scores = [s.scores for s in run.steps]
        weights = [s.weights for s in run.steps]
    return {"steps": [r.to_dict() for r in rows], "scores": scores, "weights": weights,
            "growth": growth, "layers": layers, "notes": notes}


def tiles_data(cfg: MHAConfig, block: tuple[int, int], head: int = 0, *,
               cancel: Callable[[], bool] | None = None,
               progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """{"states": int8 [row blocks, key blocks], "plan": TilePlan dict, "records": tile dicts
    for batch element 0 and ``head`` (empty when too large to compute), "notes", "peak_words"
    (the tiled peak against the full matrix, in words)}; Cancelled (between tiles) when
    ``cancel`` says so."""
    cfg, notes = generation_config(cfg)
    plan = tile_plan(cfg, block)
    states = tile_states(cfg.mask_spec, cfg.T, cfg.S, block)
    records: list[dict] = []
    cells = plan.heads_times_batch * cfg.T * cfg.S
    if cells > TILES_MAX_CELLS or not _computable(cfg, cfg.T + cfg.S):
        notes.append(f"B·H·T·S is {cells:,} cells: the tiles are counted, not computed, above "
                     f"{TILES_MAX_CELLS:,}")
    else:
        records = _records(cfg, block, min(max(0, head), cfg.H - 1), cancel, progress)
    return {"states": states, "plan": plan.to_dict(), "records": records, "notes": notes,
            "peak_words": peak_words(cfg, block)}


def _records(cfg: MHAConfig, block: tuple[int, int], head: int, cancel, progress) -> list[dict]:
    from mha_explorer.core.engine.decode import compute_module, layer_tensors  # torch
    from mha_explorer.core.engine.tiled import record_tiles

    # the Q, K and V the family scores: [B, H, T, w], [B, Hkv, S, w], [B, Hkv, S, v]
    q, k, v = compute_module(cfg).attention_inputs(cfg, layer_tensors(cfg, cancel))
    _out, records = record_tiles(q.detach(), k.detach(), v.detach(), cfg.mask_spec, block,
                                 head=head, max_tiles=TILE_RECORDS, cancel=cancel, progress=progress)
    return [dataclasses.asdict(r) for r in records]


__all__ = ["ConfigError", "decode_data", "generation_config", "tiles_data"]
