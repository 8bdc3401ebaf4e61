"""Generation with a KV cache, computed (torch): the prompt's P tokens in one pass, then one
token per step, each step appending to the cache and attending over it.

Each attention family decodes in its own form (its compute module's ``decode``); this module
gives it the layer's weights and input, from the same weight source the engine uses, and
checks its steps against the family's own full pass. Every step's output rows equal the
matching rows of one full causal pass (bottom-right aligned) with the same mask: window,
stride and global tokens included. Everything returned is numpy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.engine.weights import RandomWeights, source_for
from mha_explorer.core.errors import check_cancel
from mha_explorer.core.kernels.decoding import RUN_MAX_TOKENS, DecodeRun, LayerTensors, StepResult
from mha_explorer.core.plan.decode import check_decode, decode_config
from mha_explorer.core.variants.registry import family_of

__all__ = ["RUN_MAX_TOKENS", "DecodeRun", "StepResult", "compute_module", "full_pass", "layer_tensors",
           "max_abs_diff_vs_full", "run_decode"]


def compute_module(cfg: MHAConfig):
    """The torch module of ``cfg``'s attention family."""
    return importlib.import_module(family_of(cfg).compute_module)


class _Cancellable:
    """Random weights drawn with ``cancel`` looked at every million numbers (a layer of
    d_model 2048 takes a third of a second to draw); the source's other answers unchanged."""

    def __init__(self, source: RandomWeights, cancel: Callable[[], bool]):
        self._source, self._cancel = source, cancel

    def weights(self, cfg: MHAConfig, device: str, dtype):
        return self._source.weights(cfg, device, dtype, lambda: check_cancel(self._cancel))

    def __getattr__(self, name: str):
        return getattr(self._source, name)


def layer_tensors(cfg: MHAConfig, cancel: Callable[[], bool] | None = None) -> LayerTensors:
    """The layer's weights and inputs as the engine computes with them, float32 on the CPU;
    Cancelled while random weights are drawn when ``cancel`` says so."""
    source = source_for(cfg)
    if cancel is not None and isinstance(source, RandomWeights):
        source = _Cancellable(source, cancel)
    return compute_module(cfg).layer_tensors(cfg, source)


def run_decode(cfg: MHAConfig, prompt: int, steps: int, *, show_batch: int = 0,
               cancel: Callable[[], bool] | None = None,
               progress: Callable[[float], None] | None = None) -> DecodeRun:
    """The prompt pass and ``steps`` generation steps, float32 on the CPU; Cancelled
    between steps when ``cancel`` says so."""
    check_decode(prompt, steps)
    if prompt + steps > RUN_MAX_TOKENS:
        raise ConfigError("steps", f"prompt + steps {prompt + steps:,} is above the cap of "
                          f"{RUN_MAX_TOKENS:,} tokens computed step by step")
    full = decode_config(cfg, prompt, steps)
    show = show_batch if 0 <= show_batch < full.batch else 0
    tensors = layer_tensors(full, cancel)
    return compute_module(full).decode(full, prompt, steps, show, tensors, cancel, progress)


def full_pass(cfg: MHAConfig) -> np.ndarray:
    """One full pass of the layer, in the family's own form, with the config's mask: Y [B, T, D]."""
    return compute_module(cfg).full_pass(cfg, layer_tensors(cfg))


def max_abs_diff_vs_full(run: DecodeRun) -> float:
    """The largest difference between the decoded rows and one full causal pass."""
    full = full_pass(run.config)
    return max(float(np.abs(s.output - full[:, s.positions[0]:s.positions[1]]).max()) for s in run.steps)
