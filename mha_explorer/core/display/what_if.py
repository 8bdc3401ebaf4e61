"""What the Layers dock's What-if tab says about the causal tools' results, in words and rows
(numpy only; no Qt, no torch): the heads ranked by what switching them off costs, beside their
induction score, and the sentences over each picture."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha_explorer.core.models.causal.results import LensResult, PatchResult, RepeatAblation


@dataclass(frozen=True)
class EffectRow:
    rank: int  # 1: the head whose removal costs most
    layer: int  # 1-based
    head: int  # 0-based
    loss_off: float  # the second copy's loss with the head switched off
    added: float  # loss_off − the loss with every head on
    induction: float  # the head's prefix-matching score on the same tokens


def effect_rows(r: RepeatAblation) -> list[EffectRow]:
    """Every head, the costliest to switch off first."""
    if r.ablated is None:
        return []
    added = r.ablated - r.loss_second  # [layers, H]
    order = np.argsort(-added, axis=None, kind="stable")
    heads = added.shape[1]
    return [EffectRow(rank + 1, int(i) // heads + 1, int(i) % heads, float(r.ablated.flat[i]),
                      float(added.flat[i]), float(r.induction.flat[i])) for rank, i in enumerate(order)]


def _head(layer: int, head: int) -> str:
    return f"layer {layer}, head {head}"


def repeat_summary(r: RepeatAblation) -> str:
    rows = effect_rows(r)
    text = (f"{r.n} random tokens twice: loss {r.loss_first:.2f} nats on the first copy, "
            f"{r.loss_second:.2f} on the copied second.")
    if not rows:
        return text
    top = rows[0]
    layer, head = np.unravel_index(int(np.argmax(r.induction)), r.induction.shape)
    strongest = next(row for row in rows if (row.layer, row.head) == (layer + 1, head))
    kind = "Set to its mean" if r.mean else "Switched off"
    return (f"{text} {kind}, {_head(top.layer, top.head)} adds the most loss ({top.added:+.2f} nats; "
            f"induction {top.induction:.2f}); the strongest induction pattern, "
            f"{_head(strongest.layer, strongest.head)} ({strongest.induction:.2f}), ranks "
            f"{strongest.rank} ({strongest.added:+.2f}).")


def patch_summary(r: PatchResult, answer: str, wrong: str) -> str:
    flat = r.recovered.ravel()
    heads = r.recovered.shape[1]
    best, worst = int(np.argmax(flat)), int(np.argmin(flat))
    text = (f"logit({answer!r}) − logit({wrong!r}) at the last token: {r.logit_diff_clean:+.2f} clean, "
            f"{r.logit_diff_corrupt:+.2f} corrupted. Patched from the clean run, "
            f"{_head(best // heads + 1, best % heads)} brings back {flat[best]:.0%}")
    if flat[worst] < 0:
        text += f"; {_head(worst // heads + 1, worst % heads)} pushes the other way ({flat[worst]:.0%})"
    return text + "."


def shown_token(text: str) -> str:
    """A token's text with its spaces visible (" Paris" as "▁Paris") and every other character
    that draws nothing written as its escape ("\\n", "\\u200b"); "∅" for none."""
    shown = "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
                    for c in text)
    return shown.replace(" ", "▁") or "∅"


def lens_summary(r: LensResult) -> str:
    a = r.attribution
    first = next(k for k, top in enumerate(r.top_ids[:, -1]) if top == a.token_id)  # the last row has it
    where = "the embedding" if first == 0 else f"layer {first}"
    return (f"The model's next token is {shown_token(r.token_text)} ({r.top_probs[-1, -1]:.0%}); the last "
            f"column first shows it on top after {where}. Its logit {a.logit:.2f} is the sum of the parts "
            f"below ({a.total:.2f}).")
