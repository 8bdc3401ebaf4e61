"""What the window's Layers dock shows for a trained model, as typed values of numpy and floats.

``all_layers`` runs the text once and gives every layer's maps (the layers × heads grid), each
map's badge ("prev 0.98") and each head's pattern scores. ``layer_ablation`` switches off each
head of one layer in turn. Both run on the worker thread and reach the model through its own
package (models.runtime), so nothing here names a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mha_explorer.core.models import patterns, runtime
from mha_explorer.core.models.catalog import model_named


@dataclass(frozen=True)
class LayersData:
    model: str  # the model's key
    tokens: tuple[str, ...]
    maps: np.ndarray  # [layers, H, T, T] float32
    badges: list[list[str]]  # [layers][H], e.g. "prev 0.98"
    scores: list[list[dict[str, float]]]  # [layers][H] pattern scores


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
    report = runtime.part(model_named(model_key), "report")

    def each_layer(done: int, of: int) -> None:
        if progress is not None:
            progress(done / of, layer_words(done, of))

    found = report.pieces_maps(tuple(pieces), cancel, each_layer)
    return LayersData(model_key, tuple(found.tokens), found.maps, report.grid_badges(found),
                      [patterns.head_scores(layer_maps, found.tokens) for layer_maps in found.maps])


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
