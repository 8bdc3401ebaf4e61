"""Reaching a trained model's own package from its description, without naming the model.

A model's package (``ModelDescription.home``) holds the same modules for every model:
``files`` (``is_available``: is it installed, cheaply), ``pieces`` (``as_pieces``: a text or
tokens as the model's own tokens), ``source`` (the engine's weight source) and ``report``
(``heads_report``, ``all_layers``, ``layer_ablation``: what the CLI and the Layers dock show).
Only ``source`` and ``report`` import torch, and only when their work is asked for. A model
whose installed files are converted into the cache before use (a GGUF decoder) also has
``convert``, with ``prepare(progress, cancel)`` and ``is_prepared()`` (``converted``, ``convert``).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from types import ModuleType

from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.progress import Cancel, Progress


def part(model: ModelDescription, name: str) -> ModuleType:
    """The model's module ``name`` (files, pieces, source, report)."""
    return importlib.import_module(f"{model.home}.{name}")


def _converter(model: ModelDescription) -> ModuleType | None:
    name = f"{model.home}.convert"
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None


def converted(model: ModelDescription) -> bool:
    """Whether the model can be read at once: its files are read as installed, or their
    converted copy is whole in the cache (a manifest and file sizes: milliseconds)."""
    module = _converter(model)
    return module is None or module.is_prepared()


def convert(model_key: str, *, progress: Progress | None = None, cancel: Cancel | None = None) -> None:
    """Convert the installed files of the model ``model_key`` into the cache, as its first use
    does otherwise: the window runs this in a process of its own (system.elsewhere)."""
    from mha_explorer.core.models.catalog import model_named

    module = _converter(model_named(model_key))
    if module is not None:
        module.prepare(progress, cancel)


def is_available(model: ModelDescription) -> tuple[bool, str]:
    """(True, where) when the model's packages are installed, else (False, how to add them)."""
    return part(model, "files").is_available()


def words_of(tokens: Sequence[str] | None, models: Sequence[ModelDescription]) -> list[str] | None:
    """The words behind ``tokens``, whichever model split them (its first token says which):
    what a switch from one trained model to another carries over."""
    if not tokens:
        return None
    for model in models:
        if tokens[0] == model.first_token:
            return part(model, "pieces").detokenize(tokens).split()
    return list(tokens)


def as_pieces(model: ModelDescription, tokens: Sequence[str] | None, progress: Progress | None = None,
              cancel: Cancel | None = None) -> tuple[str, ...]:
    """``tokens`` (words, or the model's own pieces) as the model reads them; its default text
    when there are none. ConfigError for an empty or too long text, or without the package.
    ``progress(fraction, words)`` and ``cancel()`` reach a tokenizer that must first be made
    (a decoder's converted on first use): the window reads on its jobs thread with them."""
    return part(model, "pieces").as_pieces(tokens, progress, cancel)


def are_pieces(model: ModelDescription, tokens: Sequence[str] | None) -> bool:
    """Whether ``tokens`` are already the model's own pieces (its first token leads them), so
    nothing needs to be read; words typed or carried from another model do not."""
    return bool(tokens) and tokens[0] == model.first_token
