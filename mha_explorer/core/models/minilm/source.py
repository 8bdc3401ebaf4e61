"""The engine's weight source for ``weights="minilm-l6"``: a trained layer and its real input.

For ``cfg.layer`` L (1-based) it hands the engine layer L's self-attention
weights in nn.Linear layout and, as the input X, the hidden states that really
enter layer L for the sentence in ``cfg.tokens`` (its word pieces): embeddings,
their LayerNorm, and layers 1..L−1 with their feed-forwards, computed by
``model.MiniLM`` (only as far as layer L needs). Every batch element is the same sentence. The model is loaded
once per process and each sentence's forward pass is kept, so moving between
layers or editing other settings reuses them.
"""

from __future__ import annotations

import torch

from mha_explorer.core.models.minilm import info
from mha_explorer.core.models.minilm.model import MiniLM, load_model
from mha_explorer.core.models.minilm.tokenizer import token_ids


class Weights:
    """The engine's weight source for this model (the config already fits it: its rules say so)."""

    def __init__(self, cfg, progress=None):
        if cfg.weights != info.WEIGHTS_NAME:
            raise ValueError(f"this source serves weights {info.WEIGHTS_NAME!r}, not {cfg.weights!r}")
        self.model: MiniLM = load_model(progress)

    def _ids(self, cfg) -> list[int]:
        return token_ids(cfg.tokens)

    def tokens(self, cfg) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(cfg.tokens), tuple(cfg.tokens)

    def weights(self, cfg, device: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        # copies: the engine may work in place, and the loaded model stays untouched
        layer = self.model.attention_weights(cfg.layer - 1)
        return {k: v.to(device, dtype, copy=True) for k, v in layer.items()}

    def inputs(self, cfg, batch: range, device: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.model.forward(self._ids(cfg)).input_of(cfg.layer - 1)  # [1, T, D]
        x = hidden.expand(len(batch), -1, -1).to(device, dtype, copy=True)  # [nb, T, D], same sentence
        return x, x

    def notes(self, cfg) -> tuple[str, ...]:
        return (f"MiniLM-L6 layer {cfg.layer} (trained)",)
