"""The engine's weight source for Gemma 3 270M: one layer's attention and its true input.

For ``cfg.layer`` L (1-based) the engine gets layer L's projections in nn.Linear layout, the
RMSNorm scales of its input and of each head's q and k ("norm", "q_norm", "k_norm"), and, as
X, the hidden state that really enters layer L for the text in ``cfg.tokens``: the token
embeddings scaled by √640 and layers 1..L−1 (computed only as far as L needs). The engine
then runs every stage itself: RMSNorm, projections, q/k norms, RoPE with the layer's base,
the local layers' sliding window, softmax, W_O. The model is loaded once per process.
"""

from __future__ import annotations

import torch

from mha_explorer.core.models.gemma3.description import GEMMA3_270M
from mha_explorer.core.models.gemma3.model import load_model
from mha_explorer.core.models.gemma3.pieces import token_ids


class Weights:
    """WeightSource for Gemma 3 270M (the config already fits the model: its rules say so)."""

    def __init__(self, cfg, progress=None):
        if cfg.weights != GEMMA3_270M.key:
            raise ValueError(f"this source serves weights {GEMMA3_270M.key!r}, not {cfg.weights!r}")
        self.model = load_model(None if progress is None else lambda f, _text="": progress(f))

    def tokens(self, cfg) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(cfg.tokens), tuple(cfg.tokens)

    def weights(self, cfg, device: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        layer = self.model.attention_weights(cfg.layer)
        norm = self.model.t[f"layers.{cfg.layer - 1}.attn_norm.scale"]
        # copies: the engine may work in place, and the loaded model stays untouched
        return {k: v.to(device, dtype, copy=True) for k, v in {**layer, "norm": norm}.items()}

    def inputs(self, cfg, batch: range, device: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.model.run(token_ids(cfg.tokens)).input_of(cfg.layer)  # [1, T, D]
        x = hidden.expand(len(batch), -1, -1).to(device, dtype, copy=True)  # [nb, T, D], same text
        return x, x

    def notes(self, cfg) -> tuple[str, ...]:
        kind = GEMMA3_270M.layer_kind(cfg.layer)
        window = GEMMA3_270M.layer_window(cfg.layer)
        where = f"local: the last {window} tokens" if window else "global: every earlier token"
        return (f"{GEMMA3_270M.name} layer {cfg.layer} ({kind}, {where}; RoPE base "
                f"{GEMMA3_270M.rope_base(cfg.layer):,.0f}) (trained)",
                "after W_O Gemma normalises the attention output again (RMSNorm) before adding it back")
