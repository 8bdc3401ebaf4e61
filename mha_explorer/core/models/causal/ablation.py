"""Switching a head off and measuring the model's loss.

A head is switched off in its slice of W_O's input, at every position: set to zero, or to its
mean over the text (mean-ablation: the head still adds its average, only what it adds *for this
token* is gone). The loss is the mean next-token cross-entropy, in nats, over chosen positions.

On random tokens shown twice (<bos>, r, r) the first copy cannot be predicted and the second can
be copied from the first; a head whose removal raises the second copy's loss is one the copying
needs, whatever its attention pattern looks like.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from mha_explorer.core.models.causal import readout, stream
from mha_explorer.core.models.causal.stream import Recorded, Work


def repeat_positions(n: int, tokens: int) -> tuple[list[int], list[int]]:
    """For <bos> + r + r (r of n tokens; r + r for a model without a first token, ``tokens``
    says which): the positions whose next token is r[2..n] in the first copy, and r[2..n] again
    in the second. Each copy's first token is left out: nothing before it says what comes."""
    start = tokens - 2 * n  # where r begins: 1 after <bos>, else 0
    return list(range(start, start + n - 1)), list(range(start + n, start + 2 * n - 1))


def position_losses(model, hidden: torch.Tensor, ids: Sequence[int], positions: Sequence[int],
                    work: Work | None = None) -> torch.Tensor:
    """[B, P]: for each row of ``hidden`` [B, T, D] (the last layer's output), the loss in nats
    of predicting ids[p + 1] at each of the P ``positions`` p."""
    B = hidden.shape[0]
    rows = hidden[:, list(positions)].reshape(-1, hidden.shape[-1])  # [B*P, D]
    targets = torch.tensor([ids[p + 1] for p in positions]).repeat(B)  # [B*P]
    read = readout.read(model, rows, work)
    target_logits = readout.logits_of(model, rows, targets[:, None])[:, 0]  # [B*P]
    return (read.logsumexp - target_logits).view(B, -1)  # [B, P]


def ablation_cost(model, tokens: int, positions: int) -> float:
    """The work of ``ablate_heads`` in the units ``Work`` counts."""
    d = model.description
    later_layers = d.layers * (d.layers + 1) // 2  # a head of layer L reruns layers L..last
    return (stream.layer_cost(model, d.heads, tokens) * later_layers
            + d.layers * readout.read_cost(model, d.heads * positions))


def ablate_heads(model, rec: Recorded, positions: Sequence[int], mean: bool = False,
                 work: Work | None = None, layers: Sequence[int] | None = None) -> np.ndarray:
    """[layers, H]: the mean loss at ``positions`` with each head switched off in turn (zeroed,
    or set to its mean over the text when ``mean``); only the heads of ``layers`` (1-based) when
    given, the other rows NaN."""
    d = model.description
    found = np.full((d.layers, d.heads), np.nan)
    for layer in layers or range(1, d.layers + 1):
        if work is not None:
            work.text = f"switching off layer {layer}'s heads, one at a time…"
        merged = rec.merged[layer - 1]  # [1, T, H*hd]
        off = merged.mean(dim=1, keepdim=True) if mean else torch.zeros_like(merged[:, :1])  # [1, 1, H*hd]
        edited = stream.each_head_edited(model, merged, off)  # [H, T, H*hd]
        final = stream.resume(model, layer, rec.stream[layer - 1], edited, work)  # [H, T, D]
        found[layer - 1] = position_losses(model, final, rec.ids, positions, work).mean(-1).numpy()
    return found
