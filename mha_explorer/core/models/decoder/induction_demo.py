"""The classic demonstration of induction heads: random tokens, repeated.

N distinct random token ids (seeded) follow the model's first token (<bos>, where it has
one) twice. The first copy cannot be
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

from mha_explorer.core.models.decoder.model import DecoderModel
from mha_explorer.core.models.head_patterns import induction
from mha_explorer.core.models.progress import Cancel

MAX_REPEAT = 1000


@dataclass(frozen=True)
class RepeatDemo:
    token_ids: tuple[int, ...]  # <bos> (if the model has one), the N random ids, the same N again
    n: int
    seed: int
    loss_first: float  # mean nats over predicting the first copy (its N tokens; N − 1 without <bos>)
    loss_second: float  # the same for the second copy
    prefix_matching: np.ndarray  # [layers, H]: induction score of every head

    def best_head(self) -> tuple[int, int, float]:
        """(layer 1-based, head 0-based, score) of the strongest induction head."""
        layer, head = np.unravel_index(int(np.argmax(self.prefix_matching)), self.prefix_matching.shape)
        return int(layer) + 1, int(head), float(self.prefix_matching[layer, head])


def repeated_random_tokens(model: DecoderModel, n: int = 50, seed: int = 0) -> list[int]:
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= MAX_REPEAT:
        raise ValueError(f"n must be a whole number from 2 to {MAX_REPEAT}, got {n!r}")
    if model.tokenizer is None:
        raise RuntimeError("the model was loaded without its tokenizer")
    rng = np.random.default_rng(seed)
    pool = np.asarray(model.tokenizer.ordinary_ids, dtype=np.int64)
    chosen = rng.choice(pool, size=n, replace=False).tolist()
    bos = model.layout.bos_id
    return [*([] if bos is None else [bos]), *chosen, *chosen]


def repeat_demo(model: DecoderModel, n: int = 50, seed: int = 0, cancel: Cancel | None = None) -> RepeatDemo:
    """The model's loss on each copy and every head's prefix-matching score. Without a first
    token the first copy's first token has nothing to be predicted from: its loss is over
    the N − 1 after it."""
    ids = repeated_random_tokens(model, n, seed)
    start = 0 if model.layout.bos_id is None else 1  # where the first copy begins
    run = model.run(ids)
    layers = run.layers(cancel)
    with torch.inference_mode():
        logits = run.logits(cancel)  # [start + 2N, vocab]
        # nats[j]: predicting ids[j + 1] from the tokens up to j
        nats = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="none")
    maps = np.stack([layer.probs[0].numpy() for layer in layers])  # [layers, H, T, T]
    scores = induction(maps, ids)
    if scores is None:  # cannot happen: the second copy repeats the first
        raise RuntimeError("the repeated text repeats nothing")
    first = nats[max(start - 1, 0):start + n - 1]  # the first copy (but its first token, without <bos>)
    second = nats[start + n - 1:]
    return RepeatDemo(tuple(ids), n, seed, float(first.mean()), float(second.mean()),
                      scores.astype(np.float32))
