"""The lab's small model, built around the engine's attention stages.

``attention`` computes a layer exactly as the engine does (project, view,
transpose, scores / sqrt(d_k), softmax, weighted sum, merge, output, with the
weights in nn.Linear layout), so a trained layer opened in the stage view goes
through the same shapes and gives the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mha_explorer.core.lab.tasks import check_task

LAB_POSITIONS = ("learned", "sinusoidal")


@dataclass(frozen=True)
class LabModelSpec:
    """The model's shape; saved with a run so it can be rebuilt."""

    task: str = "reverse"
    vocab: int = 16  # symbols; the blank is one more token
    n: int = 8  # source length; sequences are 2n long
    d_model: int = 256
    heads: int = 4
    layers: int = 1
    mlp: bool = False
    positions: str = "learned"

    def __post_init__(self) -> None:
        check_task(self.task)
        for name in ("vocab", "n", "d_model", "heads", "layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
        if self.d_model % self.heads:
            raise ValueError(f"{self.heads} heads do not divide d_model {self.d_model}")
        if self.n < 2:
            raise ValueError(f"the source length must be at least 2, got {self.n}")
        if self.positions not in LAB_POSITIONS:
            raise ValueError(f"positions must be {' or '.join(LAB_POSITIONS)}, got {self.positions!r}")

    @property
    def seq(self) -> int:
        return 2 * self.n

    @property
    def tokens(self) -> int:
        return self.vocab + 1  # + the blank

    def to_dict(self) -> dict:
        return asdict(self)


def causal_visible(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool [T, T]: query i sees keys 0..i (the engine's top-left causal mask)."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def attention(x: torch.Tensor, w: dict[str, torch.Tensor], n_heads: int,
              visible: torch.Tensor | None = None,
              head_keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One attention layer, stage by stage as in the engine. Returns Y [B, T, D] and
    the attention weights [B, H, T, T].

    ``head_keep`` [H] multiplies each head's context before the merge: 0 removes a
    head's contribution (ablation), 1 keeps it.
    """
    B, T, D = x.shape
    dk = D // n_heads
    q = F.linear(x, w["W_Q"], w.get("b_Q"))  # [B, T, D]
    k = F.linear(x, w["W_K"], w.get("b_K"))  # [B, T, D]
    v = F.linear(x, w["W_V"], w.get("b_V"))  # [B, T, D]
    qh = q.view(B, T, n_heads, dk)  # [B, T, H, d_k]
    kh = k.view(B, T, n_heads, dk)  # [B, T, H, d_k]
    vh = v.view(B, T, n_heads, dk)  # [B, T, H, d_k]
    qt, kt, vt = qh.transpose(1, 2), kh.transpose(1, 2), vh.transpose(1, 2)  # [B, H, T, d_k]
    scores = (qt @ kt.transpose(-2, -1)) * (1.0 / math.sqrt(dk))  # [B, H, T, T]
    if visible is not None:
        scores = scores.masked_fill(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # [B, H, T, T]
    ctx = weights @ vt  # [B, H, T, d_k]
    if head_keep is not None:
        ctx = ctx * head_keep.view(1, n_heads, 1, 1)  # [B, H, T, d_k]
    merged = ctx.transpose(1, 2).contiguous().view(B, T, D)  # [B, T, H, d_k] -> [B, T, D]
    return F.linear(merged, w["W_O"], w.get("b_O")), weights


class LabAttention(nn.Module):
    """W_Q, W_K, W_V, W_O as nn.Linear with bias (the engine's layout: out × in)."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.q, self.k, self.v, self.o = (nn.Linear(d_model, d_model) for _ in range(4))

    def weights(self) -> dict[str, torch.Tensor]:
        out = {}
        for name, lin in (("Q", self.q), ("K", self.k), ("V", self.v), ("O", self.o)):
            out[f"W_{name}"], out[f"b_{name}"] = lin.weight, lin.bias
        return out

    def forward(self, x, visible, head_keep=None):
        return attention(x, self.weights(), self.n_heads, visible, head_keep)


def sinusoidal(T: int, D: int) -> torch.Tensor:
    """[T, D]: sin on even, cos on odd dimensions, wavelengths from 2π to 10000·2π."""
    pos = torch.arange(T, dtype=torch.float32)[:, None]  # [T, 1]
    freq = torch.exp(torch.arange(0, D, 2, dtype=torch.float32) * (-math.log(10_000.0) / D))  # [D/2]
    table = torch.zeros(T, D)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: D // 2])
    return table


class LabModel(nn.Module):
    """Embedding + positions, attention layers (residual, each with an optional MLP),
    and a linear readout over the symbols."""

    def __init__(self, spec: LabModelSpec):
        super().__init__()
        self.spec = spec
        D = spec.d_model
        self.embed = nn.Embedding(spec.tokens, D)
        if spec.positions == "learned":
            self.pos = nn.Parameter(torch.randn(spec.seq, D) * 0.5)
        else:
            self.register_buffer("pos", sinusoidal(spec.seq, D), persistent=False)
        self.attn = nn.ModuleList(LabAttention(D, spec.heads) for _ in range(spec.layers))
        self.mlp = nn.ModuleList(
            nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D)) for _ in range(spec.layers)
        ) if spec.mlp else None
        self.readout = nn.Linear(D, spec.vocab)
        self.register_buffer("visible", causal_visible(spec.seq), persistent=False)

    def layer_inputs(self, tokens: torch.Tensor, head_keep: torch.Tensor | None = None,
                     upto: int | None = None) -> list[torch.Tensor]:
        """Every attention layer's input [B, T, D] (for the stage view), computed up to
        layer ``upto`` (0-based; None: all)."""
        x = self.embed(tokens) + self.pos  # [B, T, D]
        inputs = []
        last = self.spec.layers - 1 if upto is None else upto
        for i in range(last + 1):
            inputs.append(x)
            x = self._block(i, x, head_keep)[0]
        return inputs

    def _block(self, i: int, x: torch.Tensor, head_keep: torch.Tensor | None):
        keep = None if head_keep is None else head_keep[i]
        y, weights = self.attn[i](x, self.visible, keep)
        x = x + y
        if self.mlp is not None:
            x = x + self.mlp[i](x)
        return x, weights

    def forward(self, tokens: torch.Tensor, head_keep: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits [B, T, vocab] and each layer's attention weights [B, H, T, T].
        ``head_keep`` [layers, H]: 0 removes a head (see ``attention``)."""
        x = self.embed(tokens) + self.pos  # [B, T, D]
        maps = []
        for i in range(self.spec.layers):
            x, weights = self._block(i, x, head_keep)
            maps.append(weights)
        return self.readout(x), maps
