"""``mha-explorer compare``: every trained model side by side on one text.

    mha-explorer compare --text "The cat sat on the mat. The cat sat on the mat." --json

Per model: layers, query and K/V heads, head width, the KV cache's bytes per token for the
whole model (at the dtype the app holds it in, said), the attention's parameters per
layer, the strongest induction head on the text's repeats (null when nothing repeats) and
the mean weight on the first token per layer. A model that is not installed is listed
with how to add it, not as an error. Bad input is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json

from mha_explorer.cli.common import fail
from mha_explorer.cli.progress import Progress
from mha_explorer.console import emit
from mha_explorer.core.config import ConfigError

NAME = "compare"


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        NAME, help="every trained model side by side on one text (MHA, MQA, GQA)",
        description="Read one text with every trained model and print, per model, its attention's "
        "shape, the KV cache per token for the whole model, the attention parameters per layer, the "
        "strongest induction head on the text's repeats and each layer's mean weight on the first "
        "token. Models that are not installed are listed with how to add them.")
    p.add_argument("--text", dest="compare_text", required=True, metavar="TEXT",
                   help="the text every model reads (repeat a phrase to find induction heads)")
    p.add_argument("--json", dest="compare_json", action="store_true", help="print JSON instead of a table")
    return p


def run(args: argparse.Namespace) -> int:
    from mha_explorer.core.display import compare as comparing  # the models' reports, once asked

    try:
        comparing.check_text(args.compare_text)
        with Progress(1000, unit="‰", label="comparing") as bar:
            found = comparing.compare(args.compare_text, progress=lambda f, _text="": bar.fraction(f))
    except ConfigError as exc:
        return fail(exc.message)
    if args.compare_json:
        emit(json.dumps(found.to_json(), indent=2))
        return 0
    lines = [f"“{found.text}”", ""]
    for model in found.models:
        named = zip(comparing.COLUMNS, comparing.cells(model), comparing.notes(model), strict=True)
        lines += [f"{name}: {cell}" + (f" — {note}" if note else "") for name, cell, note in named]
        lines.append("")
    emit("\n".join(lines).rstrip())
    return 0
