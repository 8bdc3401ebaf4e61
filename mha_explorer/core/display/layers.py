"""What the window's Layers dock shows for a trained model, as typed values of numpy and floats.

``all_layers`` runs the text once and gives every layer's maps (the layers × heads grid), each
map's badge ("prev 0.98") and each head's pattern scores. ``layer_ablation`` switches off each
head of one layer in turn. Both run on the worker thread and reach the model through its own
package (models.runtime), so nothing here names a model.

Each head's scores are the ones ``pattern_columns`` names for the model (an encoder's or a
decoder's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mha_explorer.core.models import head_patterns, patterns, runtime
from mha_explorer.core.models.catalog import model_named
from mha_explorer.core.models.description import ModelDescription

__all__ = ["AblationData", "LayersData", "all_layers", "head_scores", "layer_ablation", "layer_words"]


def head_scores(model: ModelDescription, maps: np.ndarray, tokens: tuple[str, ...],
                token_ids: tuple[int, ...] | None) -> list[dict[str, float | None]]:
    """One dict per head of the scores ``pattern_columns(model)`` names, for one layer's maps
    [H, T, S] (a decoder's induction needs the text's ids; None where nothing repeats)."""
    if not model.causal:
        return patterns.head_scores(maps, tokens)
    table = head_patterns.pattern_scores(maps, list(token_ids or ()))
    return [{name: None if values is None else float(values[h]) for name, values in table.items()}
            for h in range(maps.shape[0])]


@dataclass(frozen=True)
class LayersData:
    model: str  # the model's key
    tokens: tuple[str, ...]
    maps: np.ndarray  # [layers, H, T, T] float32
    badges: list[list[str]]  # [layers][H], e.g. "prev 0.98"
    scores: list[list[dict[str, float | None]]]  # [layers][H] the scores pattern_columns names


@dataclass(frozen=True)
class AblationData:
    model: str
    layer: int
    tokens: tuple[str, ...]
    rows: list[dict[str, Any]]  # {"head", "embedding_cosine", ...}, most consequential first


def all_layers(model_key: str, pieces: tuple[str, ...], *, cancel: Callable[[], bool] | None = None,
               progress: Callable[[float, str], None] | None = None) -> LayersData:
    """Every layer's maps, badges and pattern scores for ``pieces``; Cancelled (between the
    model's layers, and while a decoder's copy is converted or loaded) when ``cancel`` says so.
    ``progress(fraction, words)`` hears of each layer read ("reading layer 3 of 18…")."""
    model = model_named(model_key)
    report = runtime.part(model, "report")

    def each_layer(done: int, of: int) -> None:
        if progress is not None:
            progress(done / of, layer_words(done, of))

    found = report.pieces_maps(tuple(pieces), cancel, each_layer)
    ids = getattr(found, "token_ids", None)  # a decoder's text as ids, for its induction score
    return LayersData(model_key, tuple(found.tokens), found.maps, report.grid_badges(found),
                      [head_scores(model, layer_maps, tuple(found.tokens), ids) for layer_maps in found.maps])


def layer_words(layer: int, of: int) -> str:
    """What a status line says while a model's layers are read one after another."""
    return f"reading layer {layer} of {of}…"


def layer_ablation(model_key: str, layer: int, pieces: tuple[str, ...], *,
                   cancel: Callable[[], bool] | None = None,
                   progress: Callable[[float], None] | None = None) -> AblationData:
    """Each head of ``layer`` switched off in turn, most consequential first; Cancelled before
    the model is loaded and before it runs when ``cancel`` says so."""
    report = runtime.part(model_named(model_key), "report")
    return AblationData(model_key, layer, tuple(pieces), report.ablation_rows(layer, tuple(pieces), cancel))
