"""What reading a prompt at once costs a trained decoder, from its description alone.

Before its first new token a decoder reads the whole prompt in one pass: in every layer
each head's T × T scores and weights exist at once, and the previous layer's are still
held while the next one computes, so memory grows with T² (8,000 tokens of Gemma 3 270M
took 6.7 GB; 24,000 drove a process past 22 GB until the system killed it). This
estimate, checked against the memory budget before the pass, turns such a prompt into
one sentence with the longest prompt that fits. Written from the description only
(layers, heads, K/V heads, head width, width, vocabulary), so any decoder gets it.
"""

from __future__ import annotations

import math

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.units import format_bytes

FLOAT = 4  # bytes: the trained models compute in float32
# T × T float maps per head alive at the pass's peak: a layer's scores and weights kept with
# its activations while the next layer makes its scores, scaled and masked copies and weights
# (measured on Gemma 3 270M at 1,000 to 3,000 tokens: 4.5; the mask's bytes are in the margin)
LIVE_MAPS = 5
# floats per token and layer held alongside: the projections and their normalised and rotated
# copies (6 of each query and K/V width), the residual stream's steps and an MLP of about 4·D
# (20 of D), for the layer computing and the one before it (2)
ACTIVATION_WIDTHS = 2, 6, 20


def prompt_bytes(model: ModelDescription, tokens: int, steps: int = 0) -> int:
    """Bytes beyond the loaded weights that reading ``tokens`` at once, then generating
    ``steps`` more with the cache, needs at its peak."""
    held, per_width, per_d = ACTIVATION_WIDTHS
    q_width, kv_width = model.heads * model.head_dim, model.kv_heads * model.head_dim
    maps = LIVE_MAPS * model.heads * tokens * tokens * FLOAT
    activations = held * (per_width * (q_width + kv_width) + per_d * model.d_model) * tokens * FLOAT
    cache = model.layers * 2 * kv_width * (tokens + steps) * FLOAT  # every layer's keys and values
    logits = 2 * model.vocab_size * FLOAT  # the next token's scores over the vocabulary, and a copy
    return maps + activations + cache + logits


def longest_prompt(model: ModelDescription, budget: int, steps: int = 0) -> int:
    """The most tokens whose pass fits ``budget`` (0 when none does)."""
    a = LIVE_MAPS * model.heads * FLOAT  # prompt_bytes is a·T² + b·T + c
    b = prompt_bytes(model, 1, 0) - a - prompt_bytes(model, 0, 0)
    c = prompt_bytes(model, 0, steps)
    if c > budget:
        return 0
    fit = int((-b + math.sqrt(b * b + 4 * a * (budget - c))) / (2 * a))
    while fit > 0 and prompt_bytes(model, fit, steps) > budget:  # floating-point rounding
        fit -= 1
    return fit


def check_prompt(model: ModelDescription, tokens: int, steps: int, budget: int) -> None:
    """ConfigError (one sentence, with the longest prompt that fits) when reading ``tokens``
    and generating ``steps`` would need more than ``budget`` bytes."""
    need = prompt_bytes(model, tokens, steps)
    if need <= budget:
        return
    fit = longest_prompt(model, budget, steps)
    raise ConfigError(
        "memory", f"the prompt is {tokens:,} tokens: {model.name} reads it at once, with each of its "
        f"{model.heads} heads' {tokens:,} × {tokens:,} attention maps in every layer, which needs about "
        f"{format_bytes(need)}, more than the memory budget of {format_bytes(budget)}; "
        + (f"shorten it to at most {fit:,} tokens" if fit else "no prompt fits that budget"),
        [{"tokens": fit}] if fit else [])
