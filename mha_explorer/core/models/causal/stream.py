"""One text through a decoder with what the causal tools edit kept, and the run taken up again
from one layer with a head edited.

A head is edited in its slice of the merged heads (W_O's input), at every position. Since the
layers before it are untouched, the run resumes from that layer's kept input: the edited merged
heads go through the rest of the layer (``finish_layer``) and the later layers run as usual.
The heads of one layer are edited side by side, one per row of a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mha_explorer.core.models.progress import Cancel, Progress, stop_if_asked

# a decoder layer costs about this many multiply-adds per token, in units of D² (Gemma 3's
# gated MLP and attention come to 27, SmolLM2's to 21): only to pace a progress bar
LAYER_COST_PER_TOKEN = 24


@dataclass(frozen=True)
class Recorded:
    """A run of one text: the residual stream between layers, every layer's merged heads, and
    at the last position what a logit's attribution needs."""

    ids: tuple[int, ...]
    stream: tuple[torch.Tensor, ...]  # layers + 1 of [1, T, D]: [k] after k layers (0: the embedding)
    merged: tuple[torch.Tensor, ...]  # layers of [1, T, H*hd], W_O's input
    attn_scale_last: tuple[torch.Tensor, ...]  # layers of [D]: attn_out = attn_proj · this, last position
    mlp_last: tuple[torch.Tensor, ...]  # layers of [D]: the MLP's output at the last position

    @property
    def final(self) -> torch.Tensor:
        """[1, T, D]: the last layer's output (before the final norm)."""
        return self.stream[-1]


class Work:
    """Progress over work measured in about-equal units (multiply-adds), and the cancel check
    between its pieces."""

    def __init__(self, total: float, progress: Progress | None, cancel: Cancel | None):
        self.total, self.done = max(float(total), 1.0), 0.0
        self.progress, self.cancel = progress, cancel
        self.text = ""

    def check(self) -> None:
        stop_if_asked(self.cancel)

    def add(self, units: float) -> None:
        self.done += units
        if self.progress is not None:
            self.progress(min(self.done / self.total, 1.0), self.text)
        stop_if_asked(self.cancel)


def layer_cost(model, batch: int, tokens: int) -> float:
    return LAYER_COST_PER_TOKEN * batch * tokens * model.description.d_model ** 2


def head_slice(model, head: int) -> slice:
    """The columns of W_O's input [..., H*hd] that hold head ``head`` (0-based)."""
    hd = model.description.head_dim
    return slice(head * hd, (head + 1) * hd)


def record(model, ids: Sequence[int], work: Work | None = None) -> Recorded:
    """Run ``ids`` through every layer, keeping the stream, the merged heads and the last
    position's norm multiplier and MLP output."""
    d = model.description
    stream, merged, scales, mlps = [], [], [], []
    with torch.inference_mode():
        x = model.embed(list(ids))  # [1, T, D]
        stream.append(x)
        for layer in range(1, d.layers + 1):
            if work is not None:
                work.check()
            acts = model.layer(layer, x)
            merged.append(acts.merged)
            scales.append(model.post_attention_scale(layer, acts.attn_proj[:, -1:])[0, -1])  # [D]
            mlps.append(acts.mlp_out[0, -1])
            x = acts.hidden_out
            stream.append(x)
            if work is not None:
                work.add(layer_cost(model, 1, len(ids)))
    return Recorded(tuple(int(i) for i in ids), tuple(stream), tuple(merged), tuple(scales), tuple(mlps))


def resume(model, layer: int, x: torch.Tensor, merged: torch.Tensor,
           work: Work | None = None) -> torch.Tensor:
    """[B, T, D]: the last layer's output when layer ``layer`` (1-based) gets input x [1, T, D]
    and merged heads ``merged`` [B, T, H*hd] (one edit per row), and every later layer runs."""
    d = model.description
    B, T = merged.shape[:2]
    with torch.inference_mode():
        x = model.finish_layer(layer, x, merged)["hidden_out"]  # [B, T, D]
        for later in range(layer + 1, d.layers + 1):
            if work is not None:
                work.add(layer_cost(model, B, T))
            x = model.layer(later, x).hidden_out
    if work is not None:
        work.add(layer_cost(model, B, T))
    return x


def each_head_edited(model, merged: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """[H, T, H*hd]: ``merged`` [1, T, H*hd] repeated once per head, row h with head h's slice
    taken from ``source`` ([1, T, H*hd], or [1, 1, H*hd] for a value shared by every position)."""
    heads = model.description.heads
    edited = merged.expand(heads, -1, -1).clone()  # [H, T, H*hd]
    for h in range(heads):
        cols = head_slice(model, h)
        edited[h, :, cols] = source[0, :, cols]
    return edited
