"""Gemma 3 270M run in plain torch: the shared decoder's forward pass (``decoder.model``, a
named place for every activation) over Gemma's weights.

A decoder of 18 layers over token embeddings scaled by sqrt(640): 4 query heads of 256 on
one key/value head, RMSNorm before and after attention and the MLP, q and k RMS-normalised
per head before RoPE (base 10,000 local, 1,000,000 global), scores scaled by 1/16, local
layers keeping the last 512 keys, a gelu_tanh gate, tied embeddings.
"""

from __future__ import annotations

from collections.abc import Sequence

from mha_explorer.core.models.decoder.kit import kit_for
from mha_explorer.core.models.decoder.model import (
    DecoderModel,
    KeyValues,
    LayerActivations,
    LayerInfo,
    TextRun,
)
from mha_explorer.core.models.decoder.model import check_layer as _check_layer
from mha_explorer.core.models.decoder.model import layer_info as _layer_info
from mha_explorer.core.models.gemma3.description import GEMMA3_270M
from mha_explorer.core.models.progress import Cancel, Progress

__all__ = ["D", "Gemma3", "KeyValues", "LayerActivations", "LayerInfo", "TextRun", "check_layer",
           "layer_info", "load_model"]

D = GEMMA3_270M
Gemma3 = DecoderModel  # the shared decoder, holding Gemma's weights


def check_layer(layer: int) -> None:
    _check_layer(D, layer)


def layer_info(layer: int) -> LayerInfo:
    return _layer_info(D, layer)


def load_model(progress: Progress | None = None, cancel: Cancel | None = None) -> DecoderModel:
    """The model and its tokenizer, loaded once per process; later calls return the same one.

    The first call ever converts the packages' GGUF file into the cache (about 15 s, with
    progress); later ones read the converted copy (about 2 s). A copy found altered is
    converted again, once, and ``model.notice`` says so in one sentence. Raises
    GemmaFilesError (one line with the fix) when the extra is missing, Cancelled on cancel.
    """
    return kit_for(D).load_model(progress, cancel)


def _load(progress: Progress | None, cancel: Cancel | None) -> DecoderModel:
    """The model read again from the converted copy (not the one kept for the process)."""
    return kit_for(D).load_fresh(progress, cancel)


def token_ids(pieces: Sequence[str]) -> list[int]:
    return kit_for(D).pieces.token_ids(pieces)
