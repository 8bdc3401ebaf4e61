"""What the commands that follow a trained decoder's logits share (``patch``, ``lens``, and
``heads --repeat``): the --weights flag naming the catalogue's decoders, --json, a progress bar
on a terminal around the work, and a refused input as one line with exit code 2."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from mha_explorer.cli.common import fail
from mha_explorer.cli.progress import Progress
from mha_explorer.console import emit
from mha_explorer.core.config import ConfigError
from mha_explorer.core.models.catalog import MODELS

DECODERS = tuple(m for m in MODELS.values() if m.causal)
BAR_STEPS = 1000  # the bar moves in thousandths of the work


def add_decoder_flag(p: argparse.ArgumentParser, dest: str) -> None:
    default = DECODERS[0].key
    p.add_argument("--weights", dest=dest, default=default, metavar="NAME",
                   help=f"a trained decoder (default {default}): "
                   + "; ".join(f"{m.key}, {m.layers} layers × {m.heads} heads ({m.distribution.install_hint})"
                               for m in DECODERS))


def decoder_command(subparsers, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """The parser of a command that reads a decoder: --weights (dest ``{name}_weights``) and
    --json (``{name}_json``) added; the command adds its own flags."""
    p = subparsers.add_parser(name, help=summary, description=description)
    add_decoder_flag(p, f"{name}_weights")
    p.add_argument("--json", dest=f"{name}_json", action="store_true", help="print JSON instead of a summary")
    return p


def with_bar(label: str, work: Callable[..., Any]) -> Any:
    """``work(progress=...)`` with a bar on stderr when it is a terminal (nothing otherwise)."""
    with Progress(BAR_STEPS, unit="‰", label=label) as bar:
        return work(progress=lambda fraction, _text="": bar.fraction(fraction))


def print_found(label: str, work: Callable[..., Any], as_json: Callable[[Any], dict] | None,
                as_text: Callable[[Any], str]) -> int:
    """Run ``work`` with a bar and print what it found (JSON when ``as_json`` is given); 0, or 2
    after one line naming what was refused."""
    try:
        found = with_bar(label, work)
    except ConfigError as err:
        return fail(err.message)
    emit(json.dumps(as_json(found), separators=(",", ":")) if as_json is not None else as_text(found))
    return 0
