"""Token positions without torch: the formulas, the frequencies and the RoPE distance curve.

- sinusoidal (Vaswani et al. 2017), added to X before the projections:
  PE[p, 2i] = sin(p / base^(2i/D)),  PE[p, 2i+1] = cos(p / base^(2i/D))
- RoPE (Su et al.), applied to Q and K after they are split into heads, in the
  rotate-half layout LLaMA uses: number i is paired with number i + d/2 and the pair
  is turned by the angle p·θ_i, θ_i = base^(-2i/d). A query at m and a key at n then
  meet at the angle (m − n)·θ_i: their score depends only on the distance m − n.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

POSITION_KINDS = ("none", "sinusoidal", "learned", "rope")


@dataclass(frozen=True)
class PositionsSpec:
    kind: str = "none"
    rope_base: float = 10_000.0

    @property
    def rotates_qk(self) -> bool:
        return self.kind == "rope"

    @property
    def added_to_input(self) -> bool:
        return self.kind in ("sinusoidal", "learned")


SINUSOIDAL_BASE = 10_000.0
ROPE_BASE = 10_000.0

SINUSOIDAL_FORMULA = "PE[p, 2i] = sin(p / 10000^(2i/D))   PE[p, 2i+1] = cos(p / 10000^(2i/D))   X ← X + PE"
ROPE_FORMULA = ("q ← q·cos(pθ) + rotate_half(q)·sin(pθ),  θ_i = 10000^(−2i/d),  "
                "rotate_half([a, b]) = [−b, a]")


def sinusoidal_table(length: int, width: int, base: float = SINUSOIDAL_BASE) -> np.ndarray:
    """float64 [length, width]; an odd width drops the last cosine column."""
    import numpy as np  # here: the plan and window need no numpy

    pos = np.arange(length, dtype=np.float64)[:, None]  # [L, 1]
    inv = base ** (-np.arange(0, width, 2, dtype=np.float64) / width)  # [ceil(W/2)]
    angles = pos * inv[None, :]  # [L, ceil(W/2)]
    table = np.empty((length, width), dtype=np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, : width // 2])
    return table


def rope_frequencies(dim: int, base: float = ROPE_BASE) -> np.ndarray:
    """θ_i = base^(−2i/dim) for i in 0..dim/2−1: fast turns first, slow last."""
    import numpy as np  # here: the plan and window need no numpy

    if dim % 2:
        raise ValueError(f"RoPE needs an even width, got {dim}")
    return base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)


def rope_angles(positions: np.ndarray, dim: int, base: float = ROPE_BASE) -> np.ndarray:
    """[len(positions), dim] angles in the rotate-half layout: [p·θ, p·θ] side by side."""
    import numpy as np  # here: the plan and window need no numpy

    half = np.outer(np.asarray(positions, dtype=np.float64), rope_frequencies(dim, base))  # [P, dim/2]
    return np.concatenate([half, half], axis=1)  # [P, dim]


def rope_score_at(q: np.ndarray, k: np.ndarray, distance: np.ndarray, base: float = ROPE_BASE) -> np.ndarray:
    """q·k after rotating q at position m and k at n, for each distance m − n (closed form).

    With the halves q = [a, b], k = [c, d]: Σ_i (a_i c_i + b_i d_i)·cos(Δθ_i) + (a_i d_i − b_i c_i)·sin(Δθ_i).
    """
    import numpy as np  # here: the plan and window need no numpy

    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    h = q.shape[-1] // 2
    a, b, c, d = q[:h], q[h:], k[:h], k[h:]
    angle = np.outer(np.asarray(distance, np.float64), rope_frequencies(2 * h, base))  # [N, d/2]
    return np.cos(angle) @ (a * c + b * d) + np.sin(angle) @ (a * d - b * c)


def rope_distance_curve(dim: int, max_distance: int, q: np.ndarray | None = None,
                        k: np.ndarray | None = None,
                        base: float = ROPE_BASE) -> tuple[np.ndarray, np.ndarray]:
    """(distances 0..max_distance, q·k at each) for the plot; q = k = ones by default,
    the curve whose slow decay with distance RoPE is known for."""
    import numpy as np  # here: the plan and window need no numpy

    ones = np.ones(dim)
    distances = np.arange(max_distance + 1)
    return distances, rope_score_at(ones if q is None else q, ones if k is None else k, distances, base)
