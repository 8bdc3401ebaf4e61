"""What the lab's numbers teach, in words for a person, beside what the papers found
(no torch: the window and the command line both use it).

The papers are quoted for what they state, nothing more: Olsson et al. (2022) on
induction heads and the phase change; Michel et al. (2019) on pruning heads.
"""

from __future__ import annotations

import numpy as np

FORMED = 0.5  # prefix matching above this counts as an induction head (as in circuits.py)

OLSSON = ("Olsson et al. 2022, \"In-context Learning and Induction Heads\": an induction head needs two "
          "attention layers, a previous-token head whose output a later head's keys read; one-layer "
          "attention-only models form none and show no phase change, while models of two or more layers "
          "form them abruptly early in training, as a visible bump in the training loss.")
MICHEL = ("Michel et al. 2019, \"Are Sixteen Heads Really Better than One?\": a large share of heads can be "
          "removed at test time without significantly hurting performance, some layers down to one head; "
          "greedy pruning removed up to about 40 % of BERT's heads (20 % of a translation model's) with "
          "no noticeable loss.")
MICHEL_SHARE = 0.4  # the reference line on the pruning curve: the share of BERT's heads
HONEST_PRUNING = ("Heads are chosen on one held-out set and the accuracy is measured on another, fresh "
                  "one: \"within 1 point\" is not judged on the data that picked the heads.")


def head_name(index: int, heads: int, layers: int) -> str:
    """``L2 h3`` (layer-major index), or ``h3`` in a one-layer model."""
    layer, head = divmod(index, heads)
    return f"L{layer + 1} h{head}" if layers > 1 else f"h{head}"


def head_title(index: int, heads: int, layers: int) -> str:
    """A map's title: ``head 3``, or ``L2 head 3`` when the model has more than one layer."""
    layer, head = divmod(index, heads)
    return f"L{layer + 1} head {head}" if layers > 1 else f"head {head}"


def best_per_step(scores: np.ndarray, heads: int, layer: int) -> np.ndarray:
    """The best head's score of ``layer`` (0-based; -1 the last) at each point:
    scores [points, layers * heads] -> [points]."""
    if scores.size == 0:
        return np.zeros(len(scores))
    layers = scores.shape[1] // heads
    layer = layer % layers
    return scores[:, layer * heads:(layer + 1) * heads].max(axis=1)


def phase_change(steps: np.ndarray, loss: np.ndarray, prefix_best: np.ndarray) -> dict | None:
    """Where the best last-layer head's prefix matching first passed FORMED, and how the
    loss moved around it: from the last point at or below a fifth of the final score
    to the first point at four fifths of it. None when no head passed FORMED."""
    above = np.flatnonzero(prefix_best > FORMED)
    if not len(above):
        return None
    final = float(prefix_best[-1])
    formed = int(above[0])
    low = np.flatnonzero(prefix_best[:formed + 1] <= final / 5)
    start = int(low[-1]) if len(low) else 0
    high = np.flatnonzero(prefix_best[formed:] >= 0.8 * final)
    end = formed + int(high[0]) if len(high) else len(steps) - 1
    return {"step": int(steps[formed]), "from_step": int(steps[start]), "to_step": int(steps[end]),
            "loss_from": float(loss[start]), "loss_to": float(loss[end]),
            "prefix_from": float(prefix_best[start]), "prefix_to": float(prefix_best[end])}


def circuit_story(summary: dict) -> str:
    """The induction circuit of a finished run in a few sentences."""
    c = summary.get("circuit")
    if not c:
        return "Train with \"ablate and prune\" on to see which heads form an induction circuit."
    heads, layers = summary["heads"], summary["layers"]
    name = head_name(c["induction_head"], heads, layers)
    removed = ", ".join(head_name(i, heads, layers) for i in c["removed"])
    without = (f"Removing {removed} brings held-out accuracy from {c['accuracy']:.0%} down to "
               f"{c['accuracy_without']:.0%}.")
    if layers == 1:
        return (f"One layer: the best head ({name}) matches prefixes at only {c['induction_score']:.2f}. "
                "To look up what followed an earlier occurrence, a key must carry the symbol before it, "
                "which only an earlier layer's previous-token head can put there. " + without)
    curve = summary["curve"]
    prefix = best_per_step(summary["prefix"], heads, -1)
    change = phase_change(summary["score_steps"], curve[:, 1], prefix) if len(prefix) else None
    if change is None or c["induction_score"] <= FORMED:
        return (f"No induction head formed: the best last-layer head ({name}) matches prefixes at "
                f"{c['induction_score']:.2f}. " + without)
    reader = head_name(c["previous_head"], heads, layers)
    reads = c["reads"][c["previous_head"]]
    return (f"The induction head {name} formed at step {change['step']}: between steps {change['from_step']} "
            f"and {change['to_step']} its prefix matching rose from {change['prefix_from']:.2f} to "
            f"{change['prefix_to']:.2f} while the loss fell from {change['loss_from']:.2f} to "
            f"{change['loss_to']:.2f}. It reads {reader}, a previous-token head (score "
            f"{c['previous_score']:.2f}): without {reader}, {name}'s prefix matching drops from "
            f"{c['induction_score']:.2f} to {reads:.2f}. " + without)


def pruning_answer(heads: int, pruning: dict) -> str:
    k, total = pruning["removable"], len(pruning["order"])
    survivors = ", ".join(map(str, pruning["survivors"])) or "none"
    return (f"{heads} heads: {k} of {total} ({k / total:.0%}) can be removed before held-out accuracy "
            f"drops more than 1 point (from {pruning['accuracy'][0]:.1%}, measured on fresh data); "
            f"survivors: {survivors}")



def head_count_story(d_model: int, runs: list[tuple[int, float, int | None]]) -> str:
    """The course's trade-off, read off a sweep: ``runs`` as (heads, final accuracy, steps to
    95 % or None), d_model fixed, so each head has d_k = d_model / h dimensions. Names the
    count that learned it first and what fewer and more heads cost against it."""
    if len(runs) < 2:
        return "Sweep several head counts (d_model fixed) to see what the number of heads costs."
    runs = sorted(runs)

    def rank(run: tuple[int, float, int | None]) -> tuple[int, float]:
        _h, accuracy, steps = run
        return (0, steps) if steps is not None else (1, -accuracy)  # reached 95 % first, then best

    best = min(runs, key=rank)
    words = [f"d_model {d_model} split h ways gives each head d_k = {d_model}/h dimensions."]
    if best[2] is None:
        words.append("No count reached 95 % in these steps: " + _costs(runs, best, d_model)
                     + "; more steps would show what each count costs.")
        return " ".join(words)
    words.append(f"First to 95 %: {_count(best[0])} (d_k {d_model // best[0]}), at step {best[2]}.")
    few = [r for r in runs if r[0] < best[0]]
    many = [r for r in runs if r[0] > best[0]]
    if few:
        words.append("Fewer heads: " + _costs(few, best, d_model) + ". One head mixes every place it "
                     "reads into one weighted average; fewer heads keep fewer places apart.")
    if many:
        words.append("More heads: " + _costs(many, best, d_model) + ". Each head has fewer dimensions "
                     "for what it fetches.")
    return " ".join(words)


def _count(heads: int) -> str:
    return f"{heads} head{'s' if heads > 1 else ''}"


def _costs(runs: list[tuple[int, float, int | None]], best: tuple[int, float, int | None],
           d_model: int) -> str:
    """What each run cost against the best: the accuracy it stopped at, or the extra steps."""
    parts = []
    for heads, accuracy, steps in runs:
        if steps is None:
            cost = f"ended at {100 * accuracy:.0f} %"
        elif best[2] is not None:
            cost = f"95 % at step {steps} ({steps - best[2]:+d})"
        else:
            cost = f"95 % at step {steps}"
        parts.append(f"{_count(heads)} (d_k {d_model // heads}) {cost}")
    return "; ".join(parts)
