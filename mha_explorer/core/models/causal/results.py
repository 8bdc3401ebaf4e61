"""What the causal tools find, as numpy arrays and Python numbers (no torch): what the command
line prints and the window draws."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ATTRIBUTION_TOLERANCE = 1e-3  # |sum of the parts − the logit|: float32 sums of a stream thousands wide


@dataclass(frozen=True)
class Lens:
    top_ids: np.ndarray  # [layers + 1, T] int64: row k after k layers (0: the embedding alone)
    top_probs: np.ndarray  # [layers + 1, T]


@dataclass(frozen=True)
class Attribution:
    position: int  # 0-based, the last
    token_id: int
    logit: float  # as the model computes it
    names: tuple[str, ...]  # "embedding", "L1 h0", ..., "L1 MLP", ...
    heads: tuple[tuple[int, int] | None, ...]  # (layer, head) of each part that is a head
    values: np.ndarray  # [parts] float64

    @property
    def total(self) -> float:
        return float(self.values.sum())


@dataclass(frozen=True)
class Patched:
    logit_diff_clean: float
    logit_diff_corrupt: float
    logit_diff_patched: np.ndarray  # [layers, H]

    @property
    def recovered(self) -> np.ndarray:
        """[layers, H]: the fraction of the logit difference each head brings back."""
        gap = self.logit_diff_clean - self.logit_diff_corrupt
        return (self.logit_diff_patched - self.logit_diff_corrupt) / gap


@dataclass(frozen=True)
class RepeatAblation:
    model: str  # the model's key
    token_ids: tuple[int, ...]  # <bos>, r, r
    n: int  # tokens in r
    seed: int
    mean: bool  # heads set to their mean output over the text instead of zero
    loss_first: float  # mean nats predicting r[2..n] in the first copy
    loss_second: float  # ... and in the second
    ablated: np.ndarray | None  # [layers, H]: loss_second with that head off (None: not asked)
    induction: np.ndarray  # [layers, H]: each head's prefix-matching score on the same tokens
    layer_kinds: tuple[str, ...]


@dataclass(frozen=True)
class PatchResult:
    model: str
    clean_ids: tuple[int, ...]
    corrupt_ids: tuple[int, ...]
    clean_pieces: tuple[str, ...]
    corrupt_pieces: tuple[str, ...]
    answer_id: int
    wrong_id: int
    logit_diff_clean: float
    logit_diff_corrupt: float
    recovered: np.ndarray  # [layers, H]
    layer_kinds: tuple[str, ...]


@dataclass(frozen=True)
class LensResult:
    model: str
    token_ids: tuple[int, ...]
    pieces: tuple[str, ...]  # the input's tokens as labels show them
    top_ids: np.ndarray  # [layers + 1, T]
    top_probs: np.ndarray  # [layers + 1, T]
    top_texts: tuple[tuple[str, ...], ...]  # [layers + 1][T] each top token's text
    attribution: Attribution
    token_text: str  # the attributed token's text


