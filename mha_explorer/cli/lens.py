"""``mha-explorer lens``: the logit lens over a text, and the last token's logit attributed.

    mha-explorer lens --weights gemma3-270m --text "The capital of France is" --json

The residual stream after the embedding and after every layer, read through the final norm and
the unembedding: the likeliest token and its probability at every position. Then the model's
top token at the last position, its logit split into the embedding's, every head's and every
MLP's direct parts (core/models/causal/lens.py).
"""

from __future__ import annotations

import argparse
import functools

from mha_explorer.cli.decoder_work import decoder_command, print_found

NAME = "lens"
SHOWN = 8  # the largest parts listed in the text form


def register(subparsers) -> argparse.ArgumentParser:
    p = decoder_command(
        subparsers, NAME, "a trained decoder's residual stream read at every layer, and a logit's parts",
        "Read the residual stream after the embedding (after 0) and after every layer "
        "through the final norm and the unembedding: the top token and its probability at every "
        "position (the last row is the model's own output). Then split the top token's logit at the "
        "last position into the embedding's, each head's and each MLP's direct contributions, with "
        "the norms' scales taken from the run: they sum to the logit.")
    p.add_argument("--text", dest="lens_text", required=True, metavar="TEXT", help="the text to read")
    return p


def _text(found) -> str:
    a = found.attribution
    lines = ["the last token's top prediction after each layer (after 0: the embedding alone):"]
    for k, (text, prob) in enumerate(zip((row[-1] for row in found.top_texts), found.top_probs[:, -1],
                                         strict=True)):
        lines.append(f"  after {k:>2}: {text!r:<18} {prob:6.1%}")
    import numpy as np  # here, not with the parser: the window's start never waits for it

    order = np.argsort(-np.abs(a.values))[:SHOWN]
    lines += ["", f"logit of {found.token_text!r}: {a.logit:.3f} = the sum of {len(a.values)} parts "
              f"({a.total:.3f}); the largest:"]
    lines += [f"  {a.names[i]:<10} {a.values[i]:+.3f}" for i in order]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from mha_explorer.core.models.causal import report

    work = functools.partial(report.lens, args.lens_weights, args.lens_text)
    return print_found("reading every layer", work, report.lens_json if args.lens_json else None, _text)
