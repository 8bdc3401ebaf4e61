"""Reaching a trained model's own package from its description, without naming the model.

Every model offers the same parts: ``files`` (``is_available``: is it installed, cheaply),
``pieces`` (``as_pieces``: a text or tokens as the model's own tokens), ``source`` (the
engine's weight source) and ``report`` (``heads_report``, ``pieces_maps``, ``ablation_rows``:
what the CLI and the Layers dock show). An encoder's are modules of its package
(``ModelDescription.home``); a decoder's ``pieces`` and ``report`` are the shared decoder
core's, bound to it (``decoder.kit``). Only ``source`` and ``report`` import torch, and only
when their work is asked for. A model whose installed files are converted into the cache
before use (a GGUF decoder) also has ``convert``, with ``prepare(progress, cancel)``
(``converts``, ``convert``).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from typing import Any

from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.progress import Cancel, Progress

SHARED_DECODER_PARTS = ("pieces", "report")


def part(model: ModelDescription, name: str) -> Any:
    """The model's part ``name`` (files, pieces, source, report): a module of its package, or
    for a decoder's pieces and report the shared decoder's, bound to the model."""
    if model.decoder is not None and name in SHARED_DECODER_PARTS:
        from mha_explorer.core.models.decoder.kit import kit_for

        return getattr(kit_for(model), name)
    return importlib.import_module(f"{model.home}.{name}")


def is_available(model: ModelDescription) -> tuple[bool, str]:
    """(True, where) when the model's packages are installed, else (False, how to add them)."""
    return part(model, "files").is_available()


def owns(model: ModelDescription, tokens: Sequence[str] | None) -> bool:
    """Whether ``tokens`` are already the model's own pieces (not words on their way to them):
    its first token says so, or, for a model without one, its pieces' own marks."""
    if not tokens:
        return False
    if model.first_token:
        return tokens[0] == model.first_token
    return part(model, "pieces").owns(tokens)


def words_of(tokens: Sequence[str] | None, models: Sequence[ModelDescription]) -> list[str] | None:
    """The words behind ``tokens``, whichever model split them: what a switch from one trained
    model to another carries over. Models with a first token are asked first (it is certain)."""
    if not tokens:
        return None
    for model in sorted(models, key=lambda m: not m.first_token):
        if owns(model, tokens):
            return part(model, "pieces").detokenize(tokens).split()
    return list(tokens)


def as_pieces(model: ModelDescription, tokens: Sequence[str] | None) -> tuple[str, ...]:
    """``tokens`` (words, or the model's own pieces) as the model reads them; its default text
    when there are none. ConfigError for an empty or too long text, or without the package."""
    return part(model, "pieces").as_pieces(tokens)


def converts(model: ModelDescription) -> bool:
    """Whether the model's installed files are converted into the cache before use (a GGUF
    decoder: its package has a ``convert`` module whose ``prepare`` makes the copy once)."""
    return importlib.util.find_spec(f"{model.home}.convert") is not None


def convert(model_key: str, *, progress: Progress | None = None, cancel: Cancel | None = None) -> None:
    """Make the converted copy of the model ``model_key`` (at once when it is there already),
    as its first use does otherwise: the window runs this in a process of its own
    (system.elsewhere), since building a vocabulary holds the interpreter lock for seconds."""
    from mha_explorer.core.models.catalog import model_named

    importlib.import_module(f"{model_named(model_key).home}.convert").prepare(progress, cancel)
