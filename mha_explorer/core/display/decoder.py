"""What the window shows of a trained decoder at work, as typed values of numpy and floats:
greedy generation with its real KV cache, and the repeated-random-tokens demonstration of
induction heads. Both run on the jobs thread and reach the model through its own package."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import model_named
from mha_explorer.core.plan.memory import default_budget
from mha_explorer.core.system.typed_input import TypedInputError, utf8_text


@dataclass(frozen=True)
class DecoderStep:
    step: int  # 1-based: the n-th new token
    token_id: int
    text: str  # the new token as text
    cache_tokens: tuple[int, ...]  # per layer, after the step
    cache_bytes: tuple[int, ...]  # per layer
    model_cache_bytes: int
    seconds: float
    key_positions: np.ndarray  # [S] the keys the new token's row spans in the shown layer
    weights: np.ndarray  # [H, S] its attention row per head


@dataclass(frozen=True)
class DecoderGeneration:
    model: str  # the model's key
    layer: int  # whose attention rows are kept
    prompt_tokens: int
    text: str  # the prompt and what was generated
    steps: tuple[DecoderStep, ...]
    layer_kinds: tuple[str, ...]  # "local" / "global" per layer
    window: int | None  # a local layer's window


@dataclass(frozen=True)
class InductionData:
    model: str
    n: int  # random tokens, repeated once
    loss_first: float  # mean nats predicting the first copy
    loss_second: float  # ... and the second, which an induction head can copy
    prefix_matching: np.ndarray  # [layers, H]
    best: tuple[int, int, float]  # (layer 1-based, head, score)
    layer_kinds: tuple[str, ...]


def generate(model_key: str, text: str, steps: int, layer: int, *, cancel: Callable[[], bool],
             progress: Callable[[float, str], None]) -> DecoderGeneration:
    """Greedy generation of ``steps`` tokens after ``text``, keeping layer ``layer``'s rows;
    ``progress(fraction, words)`` says how far it is and what it does (a status line)."""
    try:
        utf8_text(text, "the prompt")
    except TypedInputError as exc:
        raise ConfigError("tokens", str(exc)) from None
    model = model_named(model_key)
    report = runtime.part(model, "report").decode_report(
        text, steps, layer, progress=lambda f, text="": progress(0.3 * f, text), cancel=cancel,
        on_step=lambda s: progress(0.3 + 0.7 * s.step / steps, f"writing token {s.step} of {steps}…"),
        budget=default_budget())
    found = tuple(DecoderStep(
        s["step"], s["token_id"], s["text"], tuple(s["cache_tokens"]), tuple(s["cache_bytes"]),
        s["model_cache_bytes"], s["seconds"], np.asarray(s["attention"]["key_positions"]),
        np.asarray(s["attention"]["weights"], dtype=np.float32)) for s in report["steps"])
    return DecoderGeneration(model_key, layer, report["prompt_tokens"], report["text"], found,
                             tuple(model.layer_kinds) or ("global",) * model.layers, model.window)


def induction(model_key: str, n: int = 50, seed: int = 0, *, cancel: Callable[[], bool],
              progress: Callable[[float, str], None]) -> InductionData:
    """``progress(fraction, words)`` hears how far it is and what it does (a status line)."""
    model = model_named(model_key)
    report = runtime.part(model, "report").induction_report(n, seed, progress=progress, cancel=cancel)
    best = report["best_head"]
    return InductionData(model_key, n, report["loss_first_copy"], report["loss_second_copy"],
                         np.asarray(report["prefix_matching"], dtype=np.float32),
                         (best["layer"], best["head"], best["score"]),
                         tuple(model.layer_kinds) or ("global",) * model.layers)
