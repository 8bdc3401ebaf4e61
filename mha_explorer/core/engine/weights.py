"""Where a layer's weights and its input come from: the *weight sources*.

``source_for(cfg)`` picks the source named by ``cfg.weights``. The random source
lives here; trained ones are imported by dotted name only when asked for, so the
engine never loads a checkpoint reader it does not need.

Every source gives weights in nn.Linear layout (out × in) at the dtype and device
asked for, and the layer's input X (and X_kv) for a range of batch elements.
"""

from __future__ import annotations

import importlib
import math
import threading
import zlib
from collections.abc import Callable
from typing import Protocol

import torch

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.specs.weights import LAB, RANDOM

WEIGHT_STD = 1.0  # times 1/sqrt(D): scores of order 1, so the maps show structure
BIAS_STD = 0.1
NORM_STD = 0.1  # RMSNorm scales drawn around 1
NORMAL_CHUNK = 1 << 20  # float32 numbers drawn at once when filling a lower-precision tensor

# cfg.weights -> "module:Class" of a source written elsewhere, imported on first use: every
# trained model's own, and the Lab's saved runs
TRAINED_SOURCES = {**{key: model.source for key, model in MODELS.items()},
                   LAB: "mha_explorer.core.lab.source:LabWeights"}


class WeightSource(Protocol):
    def tokens(self, cfg: MHAConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Query-side and key-side labels."""

    def weights(self, cfg: MHAConfig, device: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        """"W_Q", "W_K", "W_V", "W_O" (out × in) and, when cfg.bias, "b_Q" ... "b_O"."""

    def inputs(self, cfg: MHAConfig, batch: range, device: str,
               dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """X [nb, T, D] and X_kv [nb, S, D] for the batch elements in ``batch``."""

    def notes(self, cfg: MHAConfig) -> tuple[str, ...]:
        """Lines for the trace's notes, e.g. which checkpoint and layer."""


def source_for(cfg: MHAConfig) -> WeightSource:
    """The weight source named by ``cfg.weights``; ConfigError when it is not installed."""
    if cfg.weights == RANDOM:
        return RandomWeights(cfg)
    target = TRAINED_SOURCES.get(cfg.weights)
    if target is None:
        raise ConfigError("weights", f"weights {cfg.weights!r} is not one of random, "
                          + ", ".join(TRAINED_SOURCES))
    module_name, _, class_name = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        raise ConfigError("weights", f"the trained weights {cfg.weights!r} are not installed "
                          "in this copy of the program; use random weights") from None
    return cls(cfg)


def _generator(seed: int, *salt: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(zlib.crc32(repr((seed,) + salt).encode()))
    return g


def fill_normal(out: torch.Tensor, generator: torch.Generator, std: float = 1.0,
                check: Callable[[], None] | None = None) -> torch.Tensor:
    """``out`` (contiguous, CPU) filled with the numbers ``torch.randn(out.shape) * std``
    gives, a chunk at a time (chunks of a multiple of 16 numbers draw the same stream):
    no whole float32 temporary for other dtypes, and ``check`` (which may raise
    Cancelled) is called between chunks."""
    flat = out.view(-1)  # [numel]
    n = flat.numel()
    direct = out.dtype == torch.float32
    buf = None if direct else torch.empty(min(n, NORMAL_CHUNK + 16))
    start = 0
    while start < n:
        if check is not None:
            check()
        size = NORMAL_CHUNK if n - start - NORMAL_CHUNK >= 16 else n - start  # no short tail
        part = flat[start:start + size] if direct else buf[:size]
        torch.randn(size, generator=generator, out=part)
        if std != 1.0:
            part.mul_(std)
        if not direct:
            flat[start:start + size].copy_(part)
        start += size
    return out


class RandomWeights:
    """Seeded normal weights and inputs: the same seed, the same numbers, at any dtype."""

    def __init__(self, cfg: MHAConfig):
        self.seed = cfg.seed

    def tokens(self, cfg: MHAConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        q = cfg.tokens if cfg.tokens is not None else tuple(f"t{i}" for i in range(cfg.T))
        kv = q if not cfg.is_cross else tuple(f"s{j}" for j in range(cfg.S))
        return q, kv

    def weights(self, cfg: MHAConfig, device: str, dtype: torch.dtype,
                check: Callable[[], None] | None = None) -> dict[str, torch.Tensor]:
        """``check`` is called every million numbers (a d_model of 16384 draws a billion)."""
        D, qD, kvD = cfg.d_model, cfg.q_dim, cfg.kv_dim
        shapes = {"W_Q": (qD, D), "W_K": (kvD, D), "W_V": (kvD, D), "W_O": (D, qD)}  # out × in
        out: dict[str, torch.Tensor] = {}
        for i, (name, shape) in enumerate(shapes.items()):
            w = fill_normal(torch.empty(shape, dtype=dtype), _generator(self.seed, 1, i),
                            WEIGHT_STD / math.sqrt(shape[1]), check)  # 1/√fan-in: scores of order 1
            out[name] = w.to(device)
            if cfg.bias:
                b = fill_normal(torch.empty(shape[0], dtype=dtype), _generator(self.seed, 2, i), BIAS_STD)
                out["b" + name[1:]] = b.to(device)
        norms = (("norm", D), ("q_norm", cfg.d_k), ("k_norm", cfg.d_k)) if cfg.norms else (
            (("norm", D),) if cfg.normed_input else ())
        if norms:  # scales near 1, so a forgotten norm still shows in the numbers
            for i, (name, width) in enumerate(norms):
                scale = fill_normal(torch.empty(width, dtype=dtype), _generator(self.seed, 6, i), NORM_STD)
                out[name] = (scale + 1).to(device)
        return out

    def inputs(self, cfg: MHAConfig, batch: range, device: str,
               dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """The same word gives the same vector; without a sentence each element is its own draw.
        The last ones drawn are reused while only the view or the mask changes (INPUT_CACHE)."""
        key = (self.seed, cfg.d_model, cfg.T, cfg.S, cfg.is_cross, cfg.tokens, batch, str(dtype), device)
        return INPUT_CACHE.value(key, lambda: self._draw_inputs(cfg, batch, device, dtype))

    def _draw_inputs(self, cfg: MHAConfig, batch: range, device: str,
                     dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        D, nb = cfg.d_model, len(batch)
        x = torch.empty(nb, cfg.T, D, dtype=dtype)  # [nb, T, D]
        for slot, b in enumerate(batch):
            if cfg.tokens is not None:
                for t, word in enumerate(cfg.tokens):
                    fill_normal(x[slot, t], _generator(self.seed, 3, zlib.crc32(word.encode())))
            else:
                fill_normal(x[slot], _generator(self.seed, 4, b))
        xkv = x
        if cfg.is_cross:
            xkv = torch.empty(nb, cfg.S, D, dtype=dtype)  # [nb, S, D]
            for slot, b in enumerate(batch):
                fill_normal(xkv[slot], _generator(self.seed, 5, b))
        return x.to(device), xkv.to(device)

    def notes(self, cfg: MHAConfig) -> tuple[str, ...]:
        return ()


class LastMade:
    """The last value made, by everything it depends on (its key). One entry: a new key drops
    the old value before the new one is made, so two never coexist."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._value = None

    def value(self, key: tuple, make: Callable[[], object]):
        with self._lock:
            if key != self._key:
                self._key, self._value = None, None  # free the old one first
                self._value = make()
                self._key = key
            return self._value

    def clear(self) -> None:
        with self._lock:
            self._key, self._value = None, None


class WeightCache(LastMade):
    """The last weights made, reused while only B, T, S, the sentence or the view change.

    Keyed by everything the weights depend on: the source description, the
    sizes of the matrices, bias, dtype and device.
    """

    @staticmethod
    def key(cfg: MHAConfig, device: str, dtype: torch.dtype) -> tuple:
        return (cfg.weights_spec, cfg.d_model, cfg.q_dim, cfg.kv_dim, cfg.H, cfg.Hkv, cfg.bias, cfg.norms,
                cfg.normed_input, str(dtype), device)

    def get(self, source: WeightSource, cfg: MHAConfig, device: str, dtype: torch.dtype,
            check: Callable[[], None] | None = None) -> dict[str, torch.Tensor]:
        """The weights for cfg; ``check`` may raise Cancelled while random ones are drawn."""
        if isinstance(source, RandomWeights):
            return self.value(self.key(cfg, device, dtype), lambda: source.weights(cfg, device, dtype, check))
        return self.value(self.key(cfg, device, dtype), lambda: source.weights(cfg, device, dtype))


WEIGHT_CACHE = WeightCache()
# the last random inputs drawn: a run repeated (another stage's view, another mask, a rerun on
# a GPU) does not draw them again on the CPU and copy them over; callers only read them
INPUT_CACHE = LastMade()
