"""The widths the stages after the softmax draw, read from the plan: a head's values (d_k
under MHA, d_v under latent attention), the heads laid side by side (D, or H·d_v) and the
output projection's way back to D. One description, so the weighted sum, merge and output
drawings serve every family that has those stages. Plain data: no Qt, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mha_explorer.core.stages.catalog import StageId

if TYPE_CHECKING:
    from mha_explorer.core.plan.build import Plan

Dim = tuple[str, int]  # a dim's name and size, as its chip says it: ("d_v", 128)


@dataclass(frozen=True)
class ValueWidths:
    head: Dim  # one head's values, the last axis of A·V's context
    merged: Dim  # the heads side by side, what W_O reads
    model: Dim  # what W_O gives back: the model width

    def sizes(self) -> dict[str, int]:
        """The sizes by name, for the dims a plan's own list may not name (H·d_v)."""
        return dict((self.head, self.merged, self.model))


def value_widths(plan: Plan) -> ValueWidths:
    context = plan.stage(StageId.weighted_sum).tensor("context")  # [B, H, T, head]
    merged = plan.stage(StageId.merge).tensor("merged")  # [B, T, H·head]
    out = plan.stage(StageId.output).tensor("Y")  # [B, T, D]
    return ValueWidths((context.dims[-1], context.shape[-1]), (merged.dims[-1], merged.shape[-1]),
                       (out.dims[-1], out.shape[-1]))
