"""The sentences under the attention stages' pictures (scores, softmax, weighted sum): what
one grid is and how many there are, what a row of weights means, what the weighted sum
multiplies, and on the desk (not the projector) the plan's notes on what torch copies. The
three stages share the height the tallest takes, so the grid keeps its place from one stage
to the next.
"""

from __future__ import annotations

from mha_explorer.core.display.diagram import hidden_from
from mha_explorer.core.display.value_widths import value_widths
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_compose import StageContext, note_height


def _desk_notes(ctx: StageContext, stage: str) -> tuple[str, ...]:
    """The plan's notes on a stage (what torch copies as it runs it): for the desk, not the
    projector, where the grid needs the room (as presentation leaves out the explanation)."""
    return () if ctx.presenting else ctx.plan.stage(stage).notes


def scores_note(ctx: StageContext) -> str:
    cfg = ctx.config
    first = (f"One {cfg.T:,}×{cfg.S:,} grid per head and sequence (B·H = {cfg.batch * cfg.H:,} "
             f"grids); each cell is a dot product of {cfg.d_k:,} numbers.")
    return "\n".join([first, *_desk_notes(ctx, StageId.scores)])


def softmax_note(ctx: StageContext) -> str:
    words = "Each row is now a distribution over the keys: weights between 0 and 1 that sum to 1."
    hidden = hidden_from(ctx.config)
    if hidden is not None and 0 in hidden:
        words += " A row that sees no key is all 0 (not NaN)."
    return "\n".join([words, *_desk_notes(ctx, StageId.softmax)])


def weighted_note(ctx: StageContext) -> str:
    cfg, width = ctx.config, value_widths(ctx.plan).head[1]
    words = (f"Each query's output is its row of weights times V: [{cfg.T:,}×{cfg.S:,}]·"
             f"[{cfg.S:,}×{width:,}] = [{cfg.T:,}×{width:,}] per head.")
    if cfg.Hkv != cfg.H:
        words += f" Query heads 0–{cfg.group_size - 1} all read this V head."
    return "\n".join([words, *_desk_notes(ctx, StageId.weighted_sum)])


def note_room(ctx: StageContext) -> float:
    """Height the tallest of the three stages' notes takes, so the grid's place does
    not jump with the length of a stage's note; none when it goes beside the picture."""
    if ctx.note_beside:
        return 0.0
    width = ctx.width - 2 * style.MARGIN
    return max(note_height(f(ctx), width) for f in (scores_note, softmax_note, weighted_note)) + 8
