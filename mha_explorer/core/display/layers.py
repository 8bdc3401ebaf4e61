"""What the window's Layers dock shows for a trained model, as numpy and dicts.

``all_layers`` runs the sentence once and gives every layer's maps (the 6 × 12
grid), each map's badge ("prev 0.98") and each head's pattern scores.
``layer_ablation`` switches off each head of one layer in turn. Both run on the
worker thread; the model is loaded once per process and each sentence's pass is
kept, so a new layer costs only its ablation.
"""

from __future__ import annotations

from typing import Any

from mha_explorer.core.models import patterns
from mha_explorer.core.models.minilm.report import ablation_rows, grid_badges, pieces_maps


def all_layers(pieces: tuple[str, ...]) -> dict[str, Any]:
    """{"tokens", "maps" [layers, H, T, T], "badges" [layers][H], "scores" [layers][H] dicts}."""
    found = pieces_maps(tuple(pieces))
    return {
        "tokens": found.tokens,
        "maps": found.maps,
        "badges": grid_badges(found),
        "scores": [patterns.head_scores(layer_maps, found.tokens) for layer_maps in found.maps],
    }


def layer_ablation(layer: int, pieces: tuple[str, ...]) -> dict[str, Any]:
    """{"layer", "tokens", "rows": [{"head", "embedding_cosine", "layer_output_cosine"}]}."""
    return {"layer": layer, "tokens": tuple(pieces), "rows": ablation_rows(layer, tuple(pieces))}
