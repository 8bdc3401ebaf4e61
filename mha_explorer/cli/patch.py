"""``mha-explorer patch``: activation patching of every head between two prompts.

    mha-explorer patch --weights gemma3-270m \\
        --clean "When Alice and Bob went to the park, Bob gave a ball to" \\
        --corrupt "When Alice and Bob went to the park, Alice gave a ball to" \\
        --answer " Alice" --wrong " Bob" --json

Each head's slice of W_O's input is taken from the clean run into the corrupted one, at every
position; the fraction of the logit difference (answer − wrong, last position) it recovers is
printed per head (core/models/causal/patching.py). Prompts of different lengths in tokens, and
an answer that is not one token, are one line naming the pieces and exit code 2.
"""

from __future__ import annotations

import argparse
import functools

from mha_explorer.cli.decoder_work import decoder_command, print_found

NAME = "patch"
SHOWN = 5  # heads listed each way in the text form


def register(subparsers) -> argparse.ArgumentParser:
    p = decoder_command(
        subparsers, NAME, "patch each head of a trained decoder from a clean prompt into a corrupted one",
        "Run a clean and a corrupted prompt of the same length in tokens; for every head, "
        "take its slice of W_O's input from the clean run at every position of the corrupted run and "
        "report the fraction of the logit difference (answer − wrong, at the last position) that comes "
        "back: (LD_patched − LD_corrupt) / (LD_clean − LD_corrupt). Layers are 1-based, heads 0-based.")
    p.add_argument("--clean", required=True, metavar="TEXT", help="the prompt the model answers rightly")
    p.add_argument("--corrupt", required=True, metavar="TEXT",
                   help="the same number of tokens, changed where it matters")
    p.add_argument("--answer", required=True, metavar="TOKEN",
                   help="the clean prompt's answer, one token (mind its leading space: ' Alice')")
    p.add_argument("--wrong", required=True, metavar="TOKEN", help="the answer it competes with, one token")
    return p


def _text(found) -> str:
    rec = found.recovered  # [layers, H]
    import numpy as np  # here, not with the parser: the window's start never waits for it

    order = np.argsort(rec, axis=None)
    name = lambda i: f"layer {i // rec.shape[1] + 1}, head {i % rec.shape[1]}"  # noqa: E731
    lines = [f"logit difference at the last token: clean {found.logit_diff_clean:+.3f}, corrupted "
             f"{found.logit_diff_corrupt:+.3f}", "", "most recovered when patched from the clean run:"]
    lines += [f"  {name(i):<16} {rec.flat[i]:+.1%}" for i in order[::-1][:SHOWN]]
    lines += ["", "pushing the other way:"]
    lines += [f"  {name(i):<16} {rec.flat[i]:+.1%}" for i in order[:SHOWN] if rec.flat[i] < 0] or ["  none"]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from mha_explorer.core.models.causal import report

    work = functools.partial(report.patch, args.patch_weights, args.clean, args.corrupt, args.answer,
                             args.wrong)
    return print_found("patching heads", work, report.patch_json if args.patch_json else None, _text)
