"""The short texts the stage header adds to a stage's explanation: the sentence
at the input stage, √d_k in the config's own numbers at scores and softmax, and
a plain word when the weights are random. Plain strings from plain data: no Qt."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_explorer.core.stages.catalog import ATTENTION_STAGES, StageId

if TYPE_CHECKING:
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.stages.trace import Trace

SCALING_STAGES = ATTENTION_STAGES  # where the scores divided by √d_k are on screen
MAX_SENTENCE_CHARS = 400  # a projector line or four; the rest is "…"


def input_sentence(cfg: MHAConfig, trace: Trace | None) -> str:
    """'The sentence (T = 9 tokens): the cat sat …' from the trace's query tokens,
    or the config's own words before the first run."""
    words = tuple(trace.tokens_q) if trace is not None else tuple(cfg.tokens or ())
    if not words:
        return ""
    text = " ".join(words)
    if len(text) > MAX_SENTENCE_CHARS:
        text = text[:MAX_SENTENCE_CHARS - 1].rstrip() + "…"
    count = f"{len(words):,} token" + ("" if len(words) == 1 else "s")
    return f"The sentence ({count}): {text}"


def scaling_note(trace: Trace | None, stage: str, batch_index: int) -> str:
    """At scores and softmax: the spread and the entropy with and without ÷√d_k,
    from the scores the trace keeps for the shown sequence. Most of a second for a
    long sequence (then remembered): the window calls it on its jobs' thread."""
    return _scaling_note(trace, stage, batch_index, compute=True)


def known_scaling_note(trace: Trace | None, stage: str, batch_index: int) -> str | None:
    """``scaling_note`` when nothing is left to compute ("" where there is no note), else
    None; never computes, so the GUI thread may ask at every redraw."""
    return _scaling_note(trace, stage, batch_index, compute=False)


def _scaling_note(trace: Trace | None, stage: str, batch_index: int, *, compute: bool) -> str | None:
    if trace is None or stage not in SCALING_STAGES:
        return ""
    scores = trace.tensors.get(StageId.scores, {}).get("scores")
    if scores is None:
        return ""
    try:
        shown = scores[trace.batch_slot(batch_index)]  # [H, rows, S]
    except IndexError:
        return ""
    # with a trace, numpy is in already; at start-up these would bring it in
    from mha_explorer.core.display.head_maps import statistics_rows
    from mha_explorer.core.display.scaling import remembered_numbers, scaling_numbers, score_width

    width = score_width(trace.config)  # the family's own: latent attention divides by √(d_n + d_r)
    if compute:
        numbers = scaling_numbers(shown, width)
    else:
        known, numbers = remembered_numbers(shown, width)
        if not known:
            return None
    if numbers is None:
        return ""
    over = statistics_rows(trace)  # the kept rows, when they are not all of them
    return f"{numbers.sentence()} {over}" if over else numbers.sentence()


def weights_note(cfg: MHAConfig) -> str:
    if getattr(cfg, "weights", "random") != "random":
        return ""
    return "Random weights: an untrained layer, its patterns mean nothing yet."
