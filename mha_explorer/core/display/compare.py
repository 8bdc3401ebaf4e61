"""Every trained model side by side on one text: MHA (MiniLM), MQA (Gemma 3) and GQA (SmolLM2).

For each model in the catalogue, from its description and the core's own formulas (the
plan's parameter count, the KV-cache formula of the attention family) and from one run of
the text through all its layers:

- its shape: layers, query heads, K/V heads, head width;
- ``kv_bytes_per_token``: what its KV cache grows by per token, all layers together, at the
  dtype the app holds the model in (``kv_dtype``): layers × the family's per-token elements
  (2 × Hkv × d_k) × the dtype's bytes. (A sliding-window layer stops growing at its window;
  an encoder keeps no cache: the figure is what its K and V of one token weigh.)
- ``attention_params_per_layer``: the attention's weights, biases and norms of one layer, as
  the Parameters panel counts them;
- ``induction``: the strongest head on the text's own repeats ({"layer", "head", "score"},
  layers 1-based), or None when the text repeats nothing;
- ``first_token_weight``: per layer, the mean weight every head puts on the first token (a
  head that parks its attention there is a sink).

A model that is not installed is listed with how to add it, its shape and arithmetic still
there, its run's figures None. Torch is reached only through each model's report, on the
caller's thread (the window's jobs thread).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.errors import ConfigError, check_cancel
from mha_explorer.core.models import head_patterns, runtime
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.progress import Share
from mha_explorer.core.models.texts import check_text
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.plan.kv_cache import kv_formula
from mha_explorer.core.units import format_bytes, format_count
from mha_explorer.core.variants.registry import family_of

COMPARE_MAX_TOKENS = 128  # every map of every model is kept: SmolLM2's 270 at 128² are 18 MB
DIGITS = 6
DEFAULT_TEXT = "The cat sat on the mat. The cat sat on the mat."


@dataclass(frozen=True)
class ModelShape:
    """A model's attention as arithmetic: no weights needed."""

    key: str
    title: str
    name: str
    kind: str  # "MHA", "GQA" or "MQA"
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    kv_bytes_per_token: int  # the whole model, at kv_dtype
    kv_dtype: str
    kv_formula: str  # e.g. "30 × 2 × 3 × 64 × 4"
    attention_params_per_layer: int


@dataclass(frozen=True)
class ModelRun:
    """One model's run of the text (numpy only)."""

    tokens: tuple[str, ...]
    maps: np.ndarray  # [layers, H, T, T] float32
    induction: tuple[int, int, float] | None  # (layer 1-based, head, score); None: nothing repeats
    first_token_weight: tuple[float, ...]  # per layer, mean over heads and queries


@dataclass(frozen=True)
class ModelComparison:
    shape: ModelShape
    run: ModelRun | None  # None when the model is not installed
    install: str | None  # how to add it, when it is not installed

    def to_json(self) -> dict[str, Any]:
        s, run = self.shape, self.run
        induction = None if run is None or run.induction is None else {
            "layer": run.induction[0], "head": run.induction[1], "score": round(run.induction[2], DIGITS)}
        row: dict[str, Any] = {
            "key": s.key, "title": s.title, "attention": s.kind, "layers": s.layers, "heads": s.heads,
            "kv_heads": s.kv_heads, "head_dim": s.head_dim, "kv_bytes_per_token": s.kv_bytes_per_token,
            "kv_dtype": s.kv_dtype, "kv_formula": s.kv_formula,
            "attention_params_per_layer": s.attention_params_per_layer, "installed": run is not None,
            "tokens": None if run is None else len(run.tokens), "induction": induction,
            "first_token_weight": None if run is None else [round(w, DIGITS) for w in run.first_token_weight],
        }
        if self.install is not None:
            row["install"] = self.install
        return row


@dataclass(frozen=True)
class Comparison:
    text: str
    models: tuple[ModelComparison, ...]

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "models": [m.to_json() for m in self.models]}


def model_shape(model: ModelDescription) -> ModelShape:
    """The model's attention arithmetic, from the core's own formulas for its first layer."""
    cfg = MHAConfig(**trained_fields(model, 1), batch=1, seq=1, dtype=model.dtype)
    per_layer = kv_formula(cfg)  # one token, one layer, at the dtype
    return ModelShape(
        model.key, model.title, model.name, family_of(cfg).kind(cfg), model.layers, model.heads,
        model.kv_heads, model.head_dim, model.layers * per_layer.per_token, model.dtype,
        f"{model.layers} × {per_layer.token_numbers}", build_plan(cfg).params.total)


def strongest_induction(maps: np.ndarray, ids: Sequence[Any]) -> tuple[int, int, float] | None:
    """(layer 1-based, head, score) of the head with the highest prefix-matching score on the
    text's repeats, for maps [layers, H, T, T]; None when the text repeats nothing."""
    scores = head_patterns.induction(maps, ids)  # [layers, H]
    if scores is None:
        return None
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return int(layer) + 1, int(head), float(scores[layer, head])


def first_token_weights(maps: np.ndarray) -> tuple[float, ...]:
    """Per layer, the mean over heads and queries of the weight on the first token."""
    return tuple(float(w) for w in head_patterns.first_token(maps).mean(axis=-1))  # [layers]


def _run(model: ModelDescription, text: str, share: Share, cancel: Callable[[], bool] | None) -> ModelRun:
    pieces = runtime.as_pieces(model, text.split())
    if len(pieces) > COMPARE_MAX_TOKENS:
        raise ConfigError("tokens", f"the text is {len(pieces):,} tokens for {model.name}; the comparison "
                          f"reads at most {COMPARE_MAX_TOKENS:,} (it keeps every map of every model); "
                          "shorten it")
    share(0.0, f"{model.name}: loading…")

    def each_layer(done: int, of: int) -> None:
        share(done / of, f"{model.name}: reading layer {done} of {of}…")

    found = runtime.part(model, "report").pieces_maps(tuple(pieces), cancel, each_layer)
    ids = getattr(found, "token_ids", None) or found.tokens  # an encoder's pieces stand for its ids
    return ModelRun(tuple(found.tokens), found.maps, strongest_induction(found.maps, list(ids)),
                    first_token_weights(found.maps))


def compare(text: str, models: Sequence[ModelDescription] | None = None, *,
            cancel: Callable[[], bool] | None = None,
            progress: Callable[[float, str], None] | None = None) -> Comparison:
    """Every model (the catalogue's, by default) on ``text``; ConfigError (one line) for an
    empty or too long text, Cancelled between layers when ``cancel`` says so."""
    check_text(text)
    models = tuple(MODELS.values()) if models is None else tuple(models)
    shares = Share(progress)
    found = []
    for index, model in enumerate(models):
        check_cancel(cancel)
        share = shares.part(index / len(models), (index + 1) / len(models))
        available, _why = runtime.is_available(model)
        run = _run(model, text, share, cancel) if available else None
        found.append(ModelComparison(model_shape(model), run,
                                     None if available else model.distribution.install_hint))
    if progress is not None:
        progress(1.0, "compared")
    return Comparison(text, tuple(found))


# What a person reads in the table (the window's and the command line's alike) ------------------

COLUMNS = ("model", "attention", "layers", "heads", "K/V heads", "d_k", "KV cache / token",
           "params / layer", "induction head", "first-token weight")


def cells(m: ModelComparison) -> tuple[str, ...]:
    """One row of the table, in COLUMNS' order: short, for a projector."""
    s, run = m.shape, m.run
    if run is None:
        induction = first = "not installed"
    else:
        induction = ("nothing repeats" if run.induction is None else
                     f"layer {run.induction[0]}, head {run.induction[1]}: {run.induction[2]:.2f}")
        weights = run.first_token_weight
        peak = int(np.argmax(weights))
        first = f"mean {np.mean(weights):.2f}, layer {peak + 1}: {weights[peak]:.2f}"
    return (s.name, f"{s.kind} {s.heads}:{s.kv_heads}", str(s.layers), str(s.heads), str(s.kv_heads),
            str(s.head_dim), f"{format_bytes(s.kv_bytes_per_token)} ({s.kv_dtype})",
            format_count(s.attention_params_per_layer), induction, first)


def notes(m: ModelComparison) -> tuple[str, ...]:
    """What each cell means, in COLUMNS' order (a hover's words, the command line's second half)."""
    s, run = m.shape, m.run
    missing = f"not installed: {m.install}"
    return (
        f"{s.title}, --weights {s.key}",
        f"{s.heads} query heads read {s.kv_heads} key/value heads ({s.kind})", "", "", "",
        f"each head's query, key and value width: {s.head_dim}",
        f"{s.kv_formula} B = {s.kv_bytes_per_token:,} B per token: layers × 2 (K and V) × Hkv × d_k × "
        f"bytes of {s.kv_dtype}",
        f"{s.attention_params_per_layer:,} in one layer's attention: W_Q, W_K, W_V, W_O, their biases "
        "and norms",
        missing if run is None else "the head with the most weight, from repeated tokens, on the token after "
        "their earlier occurrence",
        missing if run is None else "per layer, the mean weight of every head on the first token (a sink): "
        + ", ".join(f"{w:.2f}" for w in run.first_token_weight))
