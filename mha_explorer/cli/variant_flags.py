"""Command-line flags for the attention variants: each family's own sizes, masks, positions.

``add_variant_flags`` adds them to a parser (or a subcommand's); ``variant_changes`` turns
what was given into config changes, and ``check_attention_choice`` confirms afterwards
that the built config is the kind of attention that was asked for. Mistakes are
ConfigErrors naming the field, as everywhere else.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from mha_explorer.cli.flag_types import whole_number
from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.specs.positions import POSITION_KINDS
from mha_explorer.core.variants.registry import FAMILIES, KINDS, family_named, variant_fields

ATTENTION_CHOICES = tuple(kind.lower() for kind in KINDS)  # every family's members, lower case
POSITION_CHOICES = POSITION_KINDS


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


# flag dest -> config field: each family's own sizes, then the mask
_FAMILY_FLAGS = {_dest(f.flag): f.name for f in variant_fields()}
_MASK_FLAGS = {"window": "window", "stride": "stride", "global_tokens": "global_tokens",
               "rope_base": "rope_base"}


CLEAR = "none"  # typed for a size: back to None (e.g. clearing Mistral's window after its preset)


def _whole_or_none(text: str) -> int | str:
    return CLEAR if text.strip().lower() == CLEAR else whole_number(text)


def add_variant_flags(parser: argparse.ArgumentParser, inherit: bool = False) -> None:
    """``inherit``: for a subcommand, as cli.add_config_flags (an absent flag keeps the value
    given before the subcommand)."""
    g = parser.add_argument_group("attention variants (attention family, masks, positions)")
    add = functools.partial(g.add_argument, default=argparse.SUPPRESS if inherit else None)
    add("--attention", choices=ATTENTION_CHOICES,
        help="; ".join(f"{', '.join(k.lower() for k in family.kinds)}: {family.title}" for family in FAMILIES)
        + " (mha, gqa and mqa follow --kv-heads)")
    for family in FAMILIES:  # each family's own fields, as it describes them
        for field in family.fields:
            if field.kind == "bool":
                add(field.flag, action=argparse.BooleanOptionalAction,
                    help=f"{'/'.join(family.kinds)}: {field.help} (default off)")
            else:
                add(field.flag, type=_whole_or_none, metavar=field.metavar,
                    help=f"{'/'.join(family.kinds)}: {field.help} ('none' for the default)")
    add("--window", type=_whole_or_none, metavar="W",
        help="sliding window: with --causal each query sees its last W keys (Mistral-style), "
        "without, W on each side; 'none' clears a preset's window")
    add("--stride", type=_whole_or_none, metavar="K",
        help="strided/dilated: keep only keys whose distance from the query is a multiple of K")
    add("--global-tokens", type=whole_number, metavar="N",
        help="the first N tokens see and are seen by every token (with --window or --stride)")
    add("--rope-base", type=_whole_or_none, metavar="B",
        help="RoPE's base: pair i turns by p·B^(-2i/d) (default 10000; trained decoders use up to 1000000)")
    add("--positions", choices=POSITION_CHOICES,
        help="none, sinusoidal or learned (added to X; learned is a seeded random table with random "
        "weights), or rope (turns Q and K after the split into heads)")


def variant_changes(args: argparse.Namespace) -> dict[str, Any]:
    """Config changes from the variant flags; ConfigError for a contradictory pair."""
    changes: dict[str, Any] = {}
    for dest, name in {**_FAMILY_FLAGS, **_MASK_FLAGS}.items():
        value = getattr(args, dest, None)  # None: not given (SUPPRESS leaves it absent)
        if value is not None:
            changes[name] = None if value == CLEAR else value
    if getattr(args, "positions", None) is not None:
        changes["positions"] = args.positions
    attention = getattr(args, "attention", None)
    if attention is None:
        return changes
    kv_heads = getattr(args, "kv_heads", None)
    kind = attention.upper()
    target = family_named(kind)
    for family in FAMILIES:
        if family is target:
            continue
        given = [f.name for f in family.fields if changes.get(f.name) is not None]
        if given:
            raise ConfigError(given[0], f"{given[0]} belongs to {family.title.lower()}; use --attention "
                              f"{family.kinds[0].lower()}, or leave it out",
                              [{family.switch: True}] if family.switch else [])
        changes.update(family.leave())  # e.g. --preset deepseek-v3 --attention mha clears its sizes
    if target.switch:
        changes[target.switch] = True
    rule = target.kv_heads_rule(kind)
    if rule == "all" and kv_heads is not None:
        raise ConfigError("n_kv_heads", f"--attention {attention} gives every head its own keys and "
                          f"values, so --kv-heads {kv_heads} does not fit; leave --kv-heads out",
                          [{"n_kv_heads": None}])
    if rule == "one" and kv_heads not in (None, 1):
        raise ConfigError("n_kv_heads", f"--attention {attention} means one key/value head, not "
                          f"--kv-heads {kv_heads}", [{"n_kv_heads": 1}])
    if rule != "free":
        changes["n_kv_heads"] = None if rule == "all" else 1
    return changes


def check_attention_choice(args: argparse.Namespace, cfg: MHAConfig) -> None:
    """After building: --attention gqa needs key/value heads strictly between 1 and H."""
    attention = getattr(args, "attention", None)
    if attention is not None and cfg.variant.lower() != attention:
        fixes = [h for h in range(2, cfg.H) if cfg.H % h == 0][:3]
        advice = (f"give --kv-heads {' or '.join(map(str, fixes))}" if fixes else
                  f"{cfg.H} heads have no divisor between 1 and {cfg.H}, so no grouping; "
                  "use --attention mha or mqa, or another head count")
        raise ConfigError(
            "n_kv_heads", f"--attention {attention} but the layer is {cfg.variant} with {cfg.Hkv} "
            f"key/value heads; {advice}", [{"n_kv_heads": h} for h in fixes],
        )
