"""Latent attention (MLA) inside an engine run: weights, masks, positions, the stages kept.

The forward pass itself is core/mla_engine.py's (naive form, as trained); this module
gives it the run's input, device and dtype, and hands back every stage's tensors as
float32 numpy in the plan's stage ids. MLA runs whole (full mode): every stage of every
batch element is kept; the memory guard estimates it (memory.estimate) before this runs.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.kernels.steps import Work, add_positions, position_table
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.specs.masks import MaskSpec
from mha_explorer.core.variants.latent.compute import make_mla_weights, mla_forward
from mha_explorer.core.variants.latent.dims import mla_dims


def _host(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float32).numpy()


class MLAWeightCache:
    """The last latent-attention weights made, reused while only B, T, S or the view change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._weights: dict[str, torch.Tensor] | None = None

    def get(self, cfg: MHAConfig, device: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        key = (cfg.seed, mla_dims(cfg), cfg.bias, str(dtype), device)
        with self._lock:
            if key != self._key:
                self._key, self._weights = None, None  # free the old set first
                self._weights = {n: t.to(device, dtype) for n, t in make_mla_weights(cfg).items()}
                self._key = key
            return self._weights


MLA_WEIGHT_CACHE = MLAWeightCache()


def visible_mask(spec: MaskSpec, T: int, S: int, device: str) -> tuple[torch.Tensor | None, np.ndarray]:
    """(visible bool [T, S] on the device or None, rows that see no key [T])."""
    visible = spec.visible(0, T, T, S)  # [T, S] numpy
    if visible is None:
        return None, np.zeros(T, dtype=bool)
    return torch.from_numpy(visible).to(device), ~visible.any(axis=1)


def run_mla(cfg: MHAConfig, source, device: str, dtype: torch.dtype, work: Work,
            tick) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, torch.Tensor], np.ndarray]:
    """(stored tensors by stage id, the weights, rows that see no key) for the whole batch."""
    if cfg.weights_spec.trained:
        raise ConfigError("weights", "latent attention runs with random weights only; "
                          "choose random weights or turn latent attention off", [{"weights": "random"}])
    work.check()
    w = MLA_WEIGHT_CACHE.get(cfg, device, dtype)
    x_in, xkv_in = source.inputs(cfg, range(cfg.batch), device, dtype)  # [B, T, D], [B, S, D]
    tick("input")
    x = add_positions(x_in, cfg)
    xkv = add_positions(xkv_in, cfg, seed_salt=1) if cfg.is_cross else x
    visible, blind = visible_mask(cfg.mask_spec, cfg.T, cfg.S, device)
    work.check()
    with torch.no_grad():
        stages = mla_forward(cfg, x, xkv, w, visible, absorbed=False)
    tick("output")  # one step: the forward pass is not split by stage here
    stored = {sid: {name: _host(t) for name, t in tensors.items()} for sid, tensors in stages.items()}
    stored["input"] = {"X": _host(x_in)} | ({"X_kv": _host(xkv_in)} if cfg.is_cross else {})
    if cfg.positions_spec.added_to_input and not cfg.weights_spec.trained:
        stored["positions"] = {"PE": _host(position_table(x_in, x)), "X": _host(x)}
    if blind.any():  # softmax of nothing: the weights are 0, as in the other kinds
        stored["softmax"]["weights"][:, :, blind] = 0.0
    work.advance(build_plan(cfg).total_flops)
    return stored, w, blind
