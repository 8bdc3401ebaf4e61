"""The stages, by id, and how one stage's place is carried to another kind of attention's list."""

from __future__ import annotations

STAGE_IDS = (
    "input", "project", "view", "transpose", "scores",
    "softmax", "weighted_sum", "merge", "output",
)


# where a stage of one kind of attention lives in another's list (MHA <-> MLA, with or without
# the positions steps): the nearest step that does the same job
STAGE_COUNTERPARTS = {
    "project": ("q_project", "kv_compress"), "q_project": ("project",), "kv_compress": ("project",),
    "kv_expand": ("project",), "view": ("heads",), "transpose": ("heads",), "heads": ("transpose", "view"),
    "rope": ("transpose", "heads"), "positions": ("input",), "absorb_q": ("scores",),
}


def carry_stage(current: str, stage_ids: tuple[str, ...]) -> str:
    """The stage to show after an edit changed the plan's list to ``stage_ids``: the same
    stage when it is still there, else its counterpart, else the first stage."""
    if current in stage_ids:
        return current
    for other in STAGE_COUNTERPARTS.get(current, ()):
        if other in stage_ids:
            return other
    return stage_ids[0]
