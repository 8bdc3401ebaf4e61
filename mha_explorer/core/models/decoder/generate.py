"""Greedy generation with a real KV cache, step by step, for any decoder.

The prompt but its last token fills the caches in one pass; then each step feeds
one token (first the prompt's last, then each token just made), adds its rotated
key and its value to every layer's cache, reads the whole cache and picks the
likeliest next token. A global layer's cache grows by one token per step; a
local layer's keeps the last W (rolling, Gemma 3: 512): the new query sees the W − 1
before it and itself, as in the full pass.

Each step reports the new token, the tokens and bytes each layer's cache holds
after it, its wall time, and, for the layers asked, the attention row of the token
fed in (what produced the new token) over the keys it read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from mha_explorer.core.models.decoder.model import DecoderModel, KeyValues, check_layer
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.progress import Cancel, stop_if_asked

MAX_STEPS = 4096


@dataclass(frozen=True)
class StepAttention:
    """One layer's attention row for the token fed in at a step."""

    weights: np.ndarray  # [H, S] float32, each row sums to 1
    key_positions: np.ndarray  # [S] the positions of the keys read (0 is the first token)


@dataclass(frozen=True)
class GenerationStep:
    step: int  # 1-based
    input_token_id: int  # the token fed in (whose row ``attention`` shows)
    position: int  # its position in the text
    token_id: int  # the token it produced
    text: str  # that token's own text
    cache_tokens: tuple[int, ...]  # per layer, after the step
    cache_bytes: tuple[int, ...]  # per layer, after the step (float32 keys and values)
    seconds: float
    attention: dict[int, StepAttention] = field(default_factory=dict)  # layer (1-based) -> row

    @property
    def model_cache_bytes(self) -> int:
        return sum(self.cache_bytes)


@dataclass(frozen=True)
class Generation:
    prompt_ids: tuple[int, ...]
    steps: tuple[GenerationStep, ...]
    prefill_seconds: float
    stopped: str  # "steps": all were made; "eos": the model ended the text

    @property
    def token_ids(self) -> list[int]:
        return [*self.prompt_ids, *(s.token_id for s in self.steps)]


def _attention_layers(d: ModelDescription, which: int | str | Sequence[int] | None) -> tuple[int, ...]:
    if which is None:
        return ()
    if which == "all":
        return tuple(range(1, d.layers + 1))
    layers = (which,) if isinstance(which, int) else tuple(which)
    for layer in layers:
        check_layer(d, layer)
    return layers


def _forward(model: DecoderModel, ids: Sequence[int], start: int, caches: list[KeyValues | None],
             rows_for: tuple[int, ...]) -> tuple[torch.Tensor, dict[int, StepAttention]]:
    """Feed ``ids`` at positions start.. through every layer, updating ``caches`` in place;
    the last token's hidden state [D] and its attention rows for the layers ``rows_for``."""
    D = model.description
    x = model.embed(ids)  # [1, Tn, D]
    positions = torch.arange(start, start + len(ids))
    rows = {}
    for layer in range(1, D.layers + 1):
        window = D.layer_window(layer)
        past = caches[layer - 1]
        if past is not None and window is not None:
            past = past.kept(window - 1)  # the new token itself is the window's last key
        out = model.attend(layer, x, positions, past)
        caches[layer - 1] = KeyValues(out["keys"], out["values"], out["key_positions"]).kept(window)
        if layer in rows_for:
            rows[layer] = StepAttention(out["probs"][0, :, -1].numpy().copy(),  # [H, S]
                                        out["key_positions"].numpy().copy())
        x = out["hidden_out"]
    return x[0, -1], rows


def generate(model: DecoderModel, prompt_ids: Sequence[int], steps: int, *,
             attention: int | str | Sequence[int] | None = None,
             on_step: Callable[[GenerationStep], None] | None = None,
             cancel: Cancel | None = None, stop_at_eos: bool = True, eos_id: int | None = None) -> Generation:
    """Greedy continuation of ``prompt_ids`` (which should start with the model's first token,
    where it has one) by ``steps`` tokens. ``attention``: a layer (1-based), several, "all" or
    None, whose rows each step keeps. ``on_step`` sees each step as it is made; Cancelled
    between steps on ``cancel``. The model's end of text (``eos_id``, by default its own)
    ends the generation unless ``stop_at_eos`` is False."""
    D = model.description
    eos = D.decoder.eos_id if eos_id is None else eos_id
    prompt = [int(i) for i in prompt_ids]
    if not prompt:
        raise ValueError("the prompt has no tokens" + (f"; it should start with {D.first_token}"
                                                        if D.first_token else ""))
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be a whole number from 1 to {MAX_STEPS}, got {steps!r}")
    if len(prompt) + steps > D.max_tokens:
        raise ValueError(f"{D.name} reads at most {D.max_tokens:,} tokens; the prompt has {len(prompt):,}")
    if max(prompt) >= D.vocab_size or min(prompt) < 0:
        raise ValueError(f"token ids must lie in 0..{D.vocab_size - 1}")
    rows_for = _attention_layers(D, attention)
    caches: list[KeyValues | None] = [None] * D.layers
    made: list[GenerationStep] = []
    stopped = "steps"
    with torch.inference_mode():
        stop_if_asked(cancel)
        began = time.perf_counter()
        if len(prompt) > 1:
            _forward(model, prompt[:-1], 0, caches, ())
        prefill_seconds = time.perf_counter() - began
        token, position = prompt[-1], len(prompt) - 1
        for step in range(1, steps + 1):
            stop_if_asked(cancel)
            began = time.perf_counter()
            hidden, rows = _forward(model, [token], position, caches, rows_for)
            new = int(torch.argmax(model.final_logits(hidden)))
            seconds = time.perf_counter() - began
            kept = [c for c in caches if c is not None]
            made.append(GenerationStep(
                step=step, input_token_id=token, position=position, token_id=new,
                text=model.tokenizer.token_text(new) if model.tokenizer is not None else "",
                cache_tokens=tuple(c.tokens for c in kept), cache_bytes=tuple(c.nbytes for c in kept),
                seconds=seconds, attention=rows))
            if on_step is not None:
                on_step(made[-1])
            token, position = new, position + 1
            if stop_at_eos and new == eos:
                stopped = "eos"
                break
    return Generation(tuple(prompt), tuple(made), prefill_seconds, stopped)
