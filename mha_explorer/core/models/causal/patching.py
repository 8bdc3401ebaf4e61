"""Activation patching: a head's output carried from a clean run into a corrupted one.

Two prompts of the same length differ where it matters ("... John gave a drink to" against
"... Mary gave a drink to"); the logit difference LD = logit(answer) − logit(wrong) at the last
position says which way the model leans. For each head, its slice of W_O's input is taken from
the clean run at every position of the corrupted run, the rest of the model runs on, and

    recovered = (LD_patched − LD_corrupt) / (LD_clean − LD_corrupt)

is the part of the way back to the clean answer that this head alone carries: 1 all of it,
0 nothing, negative a head that pushes the other way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from mha_explorer.core.models.causal import readout, stream
from mha_explorer.core.models.causal.results import Patched
from mha_explorer.core.models.causal.stream import Recorded, Work


def logit_diff(model, hidden: torch.Tensor, answer: int, wrong: int) -> torch.Tensor:
    """[B]: logit(answer) − logit(wrong) at the last position of each row of ``hidden`` [B, T, D]."""
    both = readout.logits_of(model, hidden[:, -1], torch.tensor([answer, wrong]))  # [B, 2]
    return both[:, 0] - both[:, 1]


def patching_cost(model, tokens: int) -> float:
    d = model.description
    return stream.layer_cost(model, d.heads, tokens) * d.layers * (d.layers + 1) // 2


def patch_heads(model, clean: Recorded, corrupt: Recorded, answer: int, wrong: int,
                work: Work | None = None, layers: Sequence[int] | None = None) -> Patched:
    """Each head of every layer patched from ``clean`` into ``corrupt`` (runs of the same length);
    only the heads of ``layers`` (1-based) when given, the other rows NaN."""
    d = model.description
    found = np.full((d.layers, d.heads), np.nan)
    for layer in layers or range(1, d.layers + 1):
        if work is not None:
            work.text = f"patching layer {layer}'s heads from the clean run…"
        merged, source = corrupt.merged[layer - 1], clean.merged[layer - 1]  # [1, T, H*hd]
        edited = stream.each_head_edited(model, merged, source)  # [H, T, H*hd]
        final = stream.resume(model, layer, corrupt.stream[layer - 1], edited, work)  # [H, T, D]
        found[layer - 1] = logit_diff(model, final, answer, wrong).numpy()
    return Patched(float(logit_diff(model, clean.final, answer, wrong)[0]),
                   float(logit_diff(model, corrupt.final, answer, wrong)[0]), found)
