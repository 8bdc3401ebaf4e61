"""Switch off one head of a trained layer and measure what changes downstream.

Switching off head h of layer L sets its context (weights @ V, [T, d_k]) to zero
before the output projection W_O, so the layer's output is what the other heads
(and W_O's bias) produce; the rest of the network then runs on as usual. Two
numbers say how much it mattered, each a cosine similarity to the unablated run
(1.0: nothing changed):

- ``embedding_cosine``: of the final sentence embedding (mean pooling + L2 norm);
- ``layer_output_cosine``: of layer L's output, the mean over tokens of each
  token's cosine.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mha_explorer.core.models.minilm import info
from mha_explorer.core.models.minilm.model import MiniLM


@dataclass(frozen=True)
class HeadAblation:
    head: int  # 0-based
    embedding_cosine: float
    layer_output_cosine: float


def ablate_each_head(model: MiniLM, ids: list[int] | tuple[int, ...], layer: int) -> list[HeadAblation]:
    """Every head of ``layer`` (1-based) switched off in turn, most consequential first
    (lowest embedding cosine; ties by head number)."""
    base = model.forward(ids)
    start = base.layer(layer - 1)
    heads = list(range(info.N_HEADS))
    with torch.inference_mode():
        x = start.hidden_in.expand(len(heads), -1, -1)  # [H, T, D]: copy b loses head b
        run = model.run_from(layer - 1, x, ablate=heads)
        emb = F.cosine_similarity(run.embedding, base.embedding, dim=-1)  # [H]
        out = F.cosine_similarity(run.layers[0].hidden_out, start.hidden_out, dim=-1)  # [H, T]
    results = [HeadAblation(h, float(emb[h]), float(out[h].mean())) for h in heads]
    return sorted(results, key=lambda r: (r.embedding_cosine, r.head))
