"""The engine's weight source for a trained decoder: one layer's attention and its true input.

For ``cfg.layer`` L (1-based) the engine gets layer L's projections in nn.Linear layout, the
RMSNorm scale of its input ("norm") and, with q/k norms, of each head's q and k ("q_norm",
"k_norm"), and, as X, the hidden state that really enters layer L for the text in
``cfg.tokens``: the token embeddings (times the model's embedding scale) through layers
1..L−1 (computed only as far as L needs). The engine then runs every stage itself: RMSNorm,
projections, q/k norms, RoPE with the layer's base, a local layer's sliding window, softmax,
W_O. The model is loaded once per process.
"""

from __future__ import annotations

import torch

from mha_explorer.core.models.catalog import model_named
from mha_explorer.core.models.decoder.kit import kit_for


class Weights:
    """WeightSource for the decoder ``cfg.weights`` names (its rules made the config fit it)."""

    def __init__(self, cfg, progress=None):
        model = model_named(cfg.weights)
        if model is None or model.decoder is None:
            raise ValueError(f"this source serves trained decoders, not {cfg.weights!r}")
        self.description = model
        self.kit = kit_for(model)
        self.model = self.kit.load_model(None if progress is None else lambda f, _text="": progress(f))

    def tokens(self, cfg) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(cfg.tokens), tuple(cfg.tokens)

    def weights(self, cfg, device: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        layer = self.model.attention_weights(cfg.layer)
        norm = self.model.input_norm(cfg.layer)
        # copies: the engine may work in place, and the loaded model stays untouched
        return {k: v.to(device, dtype, copy=True) for k, v in {**layer, "norm": norm}.items()}

    def inputs(self, cfg, batch: range, device: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        ids = self.kit.pieces.token_ids(cfg.tokens)
        hidden = self.model.run(ids).input_of(cfg.layer)  # [1, T, D]
        x = hidden.expand(len(batch), -1, -1).to(device, dtype, copy=True)  # [nb, T, D], same text
        return x, x

    def notes(self, cfg) -> tuple[str, ...]:
        d = self.description
        kind = d.layer_kind(cfg.layer)
        window = d.layer_window(cfg.layer)
        where = f"local: the last {window} tokens" if window else "global: every earlier token"
        base = d.rope_base(cfg.layer)
        notes = [f"{d.name} layer {cfg.layer} ({kind}, {where}; RoPE base {base:,.0f}) (trained)"]
        if d.decoder.post_norms:
            notes.append(f"after W_O {d.name} normalises the attention output again (RMSNorm) "
                         "before adding it back")
        return tuple(notes)
