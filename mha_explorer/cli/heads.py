"""``mha-explorer heads``: a trained layer's attention maps and head scores as JSON.

    mha-explorer heads --weights minilm-l6 --layer 1 --sentence "the cat sat" --json [--ablate]

Bad input (unknown weights, a layer outside 1–6, an empty sentence, more than
256 word pieces, the trained extra not installed) is one line on stderr and exit
code 2. Torch is imported only after the input has been checked.
"""

from __future__ import annotations

import argparse
import json
import sys

from mha_explorer.cli.common import fail
from mha_explorer.core.config import ConfigError
from mha_explorer.core.models.minilm import info

NAME = "heads"
HEADS_WEIGHTS = (info.WEIGHTS_NAME,)  # random weights have no trained heads to report


def register(subparsers) -> argparse.ArgumentParser:
    """Register ``heads`` on an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        NAME, help="a trained layer's attention maps and head patterns as JSON",
        description="Run a sentence through a trained model and print one layer's attention "
        "maps, each head's pattern scores and, with --ablate, how much switching off each head "
        "changes the sentence embedding. Layers are 1-based, heads 0-based.")
    p.add_argument("--weights", dest="heads_weights", default=info.WEIGHTS_NAME, metavar="NAME",
                   help=f"trained weights to read (default {info.WEIGHTS_NAME}; "
                   f"needs: {info.INSTALL_HINT})")
    p.add_argument("--layer", dest="heads_layer", required=True, metavar="L",
                   help=f"layer 1 to {info.N_LAYERS}")
    p.add_argument("--sentence", dest="heads_sentence", required=True, metavar="TEXT",
                   help=f"the text to read; at most {info.MAX_TOKENS} word pieces with [CLS] and [SEP]")
    p.add_argument("--json", dest="heads_json", action="store_true",
                   help="print JSON (the only output format)")
    p.add_argument("--ablate", dest="heads_ablate", action="store_true",
                   help="add each head's effect on the sentence embedding when switched off")
    return p


def _layer(text) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise ConfigError("layer", f"layer must be a whole number from 1 to {info.N_LAYERS}, "
                          f"got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    """Print the report for parsed ``heads`` arguments; 0, or 2 after one line on stderr."""
    weights = args.heads_weights
    if weights not in HEADS_WEIGHTS:
        return fail(f"weights {weights!r} have no trained heads to report; use --weights "
                     f"{info.WEIGHTS_NAME}")
    try:
        from mha_explorer.core.models.minilm.report import heads_report

        report = heads_report(_layer(args.heads_layer), args.heads_sentence, ablate=args.heads_ablate)
    except ConfigError as err:
        return fail(err.message)
    json.dump(report, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0
