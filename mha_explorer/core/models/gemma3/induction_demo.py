"""The classic demonstration of induction heads: random tokens, repeated.

N distinct random token ids (seeded) follow <bos> twice. The first copy cannot be
predicted, so the model's loss there is about that of a guess among its
vocabulary's likely pieces; in the second copy a model with induction heads looks
back at what followed the same token before and copies it, so the loss falls to
about a nat. The heads that do it show high prefix-matching (``induction``) scores:
from each token of the second copy they attend to the token after its first
occurrence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mha_explorer.core.models.gemma3.model import Gemma3
from mha_explorer.core.models.gemma3.tokenizer import BOS_ID
from mha_explorer.core.models.head_patterns import induction
from mha_explorer.core.models.progress import Cancel

MAX_REPEAT = 1000


@dataclass(frozen=True)
class RepeatDemo:
    token_ids: tuple[int, ...]  # <bos>, the N random ids, the same N again
    n: int
    seed: int
    loss_first: float  # mean nats over predicting the first copy's N tokens
    loss_second: float  # the same for the second copy
    prefix_matching: np.ndarray  # [layers, H]: induction score of every head

    def best_head(self) -> tuple[int, int, float]:
        """(layer 1-based, head 0-based, score) of the strongest induction head."""
        layer, head = np.unravel_index(int(np.argmax(self.prefix_matching)), self.prefix_matching.shape)
        return int(layer) + 1, int(head), float(self.prefix_matching[layer, head])


def repeated_random_tokens(model: Gemma3, n: int = 50, seed: int = 0) -> list[int]:
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= MAX_REPEAT:
        raise ValueError(f"n must be a whole number from 2 to {MAX_REPEAT}, got {n!r}")
    if model.tokenizer is None:
        raise RuntimeError("the model was loaded without its tokenizer")
    rng = np.random.default_rng(seed)
    pool = np.asarray(model.tokenizer.ordinary_ids, dtype=np.int64)
    chosen = rng.choice(pool, size=n, replace=False).tolist()
    return [BOS_ID, *chosen, *chosen]


def repeat_demo(model: Gemma3, n: int = 50, seed: int = 0, cancel: Cancel | None = None) -> RepeatDemo:
    """The model's loss on each copy and every head's prefix-matching score."""
    ids = repeated_random_tokens(model, n, seed)
    run = model.run(ids)
    layers = run.layers(cancel)
    with torch.inference_mode():
        logits = run.logits(cancel)  # [2N+1, vocab]
        nats = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="none")  # [2N]
    maps = np.stack([layer.probs[0].numpy() for layer in layers])  # [layers, H, T, T]
    scores = induction(maps, ids)
    if scores is None:  # cannot happen: the second copy repeats the first
        raise RuntimeError("the repeated text repeats nothing")
    return RepeatDemo(tuple(ids), n, seed, float(nats[:n].mean()), float(nats[n:].mean()),
                      scores.astype(np.float32))
