"""Every stage the app can show, defined once: its id, its short label, what the heads panel
draws of it, how the diagram draws it and where its place goes in another kind of attention.

The plan (core/plan), the engine (core/engine), the reference code (core/text), the heads panel,
the diagram, the exports and the command line all iterate these definitions or ask one of
them; none of them spells a stage id itself. ``StageId`` is a ``str`` enum, so an id read from
a command line, a settings file or JSON compares and hashes like the stage it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class StageId(str, Enum):
    # member names equal their values: the enum then hashes like the plain string
    input = "input"
    positions = "positions"
    norm = "norm"
    project = "project"
    q_project = "q_project"
    kv_compress = "kv_compress"
    kv_expand = "kv_expand"
    view = "view"
    transpose = "transpose"
    heads = "heads"
    qk_norm = "qk_norm"
    rope = "rope"
    absorb_q = "absorb_q"
    scores = "scores"
    softmax = "softmax"
    weighted_sum = "weighted_sum"
    merge = "merge"
    output = "output"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Maps(Enum):
    """What the heads panel draws for a stage."""

    TOKENS = "one matrix per tensor, a row per token"  # X, Q/K/V projections, merged, Y
    SPLIT = "one map per head of the chosen tensor"  # view, transpose
    ATTENTION = "one query × key map per head"  # scores, weights
    CONTEXT = "one query × width map per head"  # A·V
    STORED = "whatever the stage stored, a map per matrix or head"  # positions, RoPE, latent steps


@dataclass(frozen=True)
class StageDef:
    id: StageId
    label: str  # short, for the stage buttons and the tables
    title: str  # the general title; a plan's stage may say more for its config
    maps: Maps
    tensor_choice: bool = False  # Q, K or V can be picked for the maps
    counterparts: tuple[StageId, ...] = ()  # nearest stage doing the same job, in order
    drawn: bool = True  # has a diagram of its own; else the stage view's generic card


_S = StageId
STAGES: dict[StageId, StageDef] = {d.id: d for d in (
    StageDef(_S.input, "input", "Input tokens", Maps.TOKENS),
    StageDef(_S.positions, "+ PE", "Add positions", Maps.STORED, counterparts=(_S.input,), drawn=False),
    StageDef(_S.norm, "RMSNorm", "Normalise the input (RMSNorm)", Maps.STORED, counterparts=(_S.input,),
             drawn=False),
    StageDef(_S.project, "project", "Project to Q, K, V", Maps.TOKENS, tensor_choice=True,
             counterparts=(_S.q_project, _S.kv_compress)),
    StageDef(_S.q_project, "Q proj", "Query projection", Maps.STORED, counterparts=(_S.project,),
             drawn=False),
    StageDef(_S.kv_compress, "c_KV", "K/V down-projection to the latent", Maps.STORED,
             counterparts=(_S.project,), drawn=False),
    StageDef(_S.kv_expand, "K, V up", "Up-projection to per-head K and V", Maps.STORED,
             counterparts=(_S.project,), drawn=False),
    StageDef(_S.view, "view", "Split into heads (view)", Maps.SPLIT, tensor_choice=True,
             counterparts=(_S.heads,)),
    StageDef(_S.transpose, "transpose", "Heads to the front (transpose)", Maps.SPLIT, tensor_choice=True,
             counterparts=(_S.heads,)),
    StageDef(_S.heads, "heads", "Split into heads", Maps.STORED, tensor_choice=True,
             counterparts=(_S.transpose, _S.view), drawn=False),
    StageDef(_S.qk_norm, "q/k norm", "Normalise each head's q and k (RMSNorm)", Maps.STORED,
             tensor_choice=True, counterparts=(_S.transpose, _S.heads), drawn=False),
    StageDef(_S.rope, "RoPE", "Rotate Q and K by position (RoPE)", Maps.STORED, tensor_choice=True,
             counterparts=(_S.qk_norm, _S.transpose, _S.heads), drawn=False),
    StageDef(_S.absorb_q, "absorb", "Fold W_UK into the query", Maps.STORED, counterparts=(_S.scores,),
             drawn=False),
    StageDef(_S.scores, "QKᵀ", "Scores Q·Kᵀ / √d_k", Maps.ATTENTION),
    StageDef(_S.softmax, "softmax", "Softmax over keys", Maps.ATTENTION),
    StageDef(_S.weighted_sum, "A·V", "Weighted sum A·V", Maps.CONTEXT),
    StageDef(_S.merge, "merge", "Merge heads", Maps.TOKENS),
    StageDef(_S.output, "W_O", "Output projection W_O", Maps.TOKENS),
)}

# the nine steps of plain multi-head attention, in order: every other list adds to or
# replaces some of these
CLASSIC = (_S.input, _S.project, _S.view, _S.transpose, _S.scores, _S.softmax, _S.weighted_sum,
           _S.merge, _S.output)
STAGE_IDS = CLASSIC  # the name the tests and older callers know
# T×S matrices, windowed to trace.rows
ATTENTION_STAGES = tuple(s for s, d in STAGES.items() if d.maps is Maps.ATTENTION)


def is_stage(stage: object) -> bool:
    return isinstance(stage, str) and stage in STAGES


def label(stage: str) -> str:
    return STAGES[StageId(stage)].label if is_stage(stage) else str(stage)


def carry_stage(current: str, stage_ids: tuple[str, ...]) -> StageId:
    """The stage to show after an edit changed the plan's list to ``stage_ids``: the same
    stage when it is still there, else its nearest counterpart, else the first stage."""
    if current in stage_ids:
        return StageId(current)
    for other in (STAGES[StageId(current)].counterparts if is_stage(current) else ()):
        if other in stage_ids:
            return other
    return StageId(stage_ids[0])
