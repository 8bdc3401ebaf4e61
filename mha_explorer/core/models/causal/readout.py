"""From the residual stream to the vocabulary: the final norm, then the unembedding a slice of
rows at a time, so that a [rows, vocab] matrix of logits (262,144 wide for Gemma 3) is never held
whole and a long readout can stop between slices.

Only what the tools need is kept from each slice: a running log-sum-exp (the softmax's
denominator), the largest logit and its token, and the logits of named tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mha_explorer.core.models.causal.stream import Work

VOCAB_SLICE = 32_768  # rows of the unembedding per matmul
ROWS = 512  # hidden states per matmul: at most 64 MiB of logits at a time


@dataclass(frozen=True)
class Readout:
    """Per row of hidden states: the log of the softmax's denominator, the top token and its logit."""

    logsumexp: torch.Tensor  # [N]
    top_id: torch.Tensor  # [N] long
    top_logit: torch.Tensor  # [N]

    @property
    def top_prob(self) -> torch.Tensor:
        return torch.exp(self.top_logit - self.logsumexp)


def normed(model, hidden: torch.Tensor) -> torch.Tensor:
    """[..., D]: hidden through the final norm (its multiplier taken from the hidden state itself)."""
    return hidden * model.final_norm_scale(hidden)


def read(model, hidden: torch.Tensor, work: Work | None = None) -> Readout:
    """The softmax's denominator and top token of every row of ``hidden`` [N, D] (before the norm)."""
    W = model.unembedding()  # [vocab, D]
    with torch.inference_mode():
        x = normed(model, hidden)  # [N, D]
        lse = torch.full(x.shape[:1], float("-inf"))
        top = torch.full(x.shape[:1], float("-inf"))
        top_id = torch.zeros(x.shape[:1], dtype=torch.long)
        for first in range(0, x.shape[0], ROWS):
            rows = slice(first, first + ROWS)
            for start in range(0, W.shape[0], VOCAB_SLICE):
                logits = x[rows] @ W[start:start + VOCAB_SLICE].T  # [ROWS, VOCAB_SLICE] at most
                lse[rows] = torch.logaddexp(lse[rows], torch.logsumexp(logits, dim=-1))
                best, where = logits.max(dim=-1)
                better = best > top[rows]
                top[rows] = torch.where(better, best, top[rows])
                top_id[rows] = torch.where(better, where + start, top_id[rows])
                if work is not None:
                    work.add(2 * logits.numel() * x.shape[1])
    return Readout(lse, top_id, top)


def read_cost(model, rows: int) -> float:
    return 2 * rows * model.unembedding().shape[0] * model.description.d_model


def logits_of(model, hidden: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """[N, K]: the logits of tokens ``token_ids`` [N, K] (or [K], the same for every row) for
    each row of ``hidden`` [N, D], reading only those rows of the unembedding."""
    W = model.unembedding()
    with torch.inference_mode():
        x = normed(model, hidden)  # [N, D]
        rows = W[token_ids]  # [N, K, D] or [K, D]
        if rows.dim() == 2:
            return x @ rows.T  # [N, K]
        return (rows @ x[:, :, None])[..., 0]  # [N, K]
