"""The pattern scores a trained model's heads are given, as a table's columns, read from the
model's description (no numpy: the Layers dock sets them as a model is chosen).

An encoder's heads get models.patterns' scores (previous, next, self, its first token, the
separator, broad); a decoder's get models.head_patterns' (previous, its first token, self,
induction). Each column is named by what it measures in that model, so a decoder's table never
speaks of [CLS] or [SEP], and the first token is the model's own ([CLS], <bos>).
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.models.description import ModelDescription


@dataclass(frozen=True)
class PatternColumn:
    key: str  # the score's name in a head's scores
    label: str  # the column's heading
    tip: str  # what the score measures


def pattern_columns(model: ModelDescription) -> tuple[PatternColumn, ...]:
    """The pattern scores ``model``'s heads are given, in the order a table shows them."""
    named = f" ({model.first_token})" if model.first_token else ""  # SmolLM2 puts none first
    first = PatternColumn("first_token", f"first{named}",
                          f"mean weight on the first token{named}: a sink where a head rests")
    previous = PatternColumn("previous_token", "previous", "mean weight on the token just before")
    itself = PatternColumn("self", "self", "mean weight on the token itself")
    if model.causal:  # a decoder sees no later token, and its text has no separator
        return (previous, first, itself,
                PatternColumn("induction", "induction", "mean weight, from a token seen before, on the "
                              "token that followed its earlier occurrence (none when nothing repeats)"))
    from mha_explorer.core.models.patterns import SEP_TOKEN as sep  # the token the score counts

    return (previous, PatternColumn("next_token", "next", "mean weight on the token just after"), itself,
            first, PatternColumn("sep", sep, f"mean weight on {sep} tokens: another sink"),
            PatternColumn("broad", "broad", "entropy / log2 S: 0 looks at one key, 1 spreads evenly"))
