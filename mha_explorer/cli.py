"""The command line: ``mha-explorer`` opens the window; subcommands serve scripts.

``shapes`` answers from the stage plan alone and never imports torch or Qt.
``export`` draws stages to files without a window (offscreen when there is no
display). Bad input is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from mha_explorer.console import OutputError, emit, report_interrupt, report_io_error
from mha_explorer.core.config import DEVICES, DTYPES, ALIGNMENTS, ConfigError, MHAConfig, sentence_tokens
from mha_explorer.core.export_spec import parse_formats, parse_size, parse_stages
from mha_explorer.core.interrupts import deferred_interrupt
from mha_explorer.core.plan import STAGE_IDS, Plan, build_plan
from mha_explorer.core.presets import PRESETS, get_preset
from mha_explorer.core.units import format_bytes, format_count

EXIT_USAGE = 2
THEME_NAMES = ("light", "dark")  # as mha_explorer.qt.shell.theme names them; no Qt import here


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that reports a mistake as one line instead of usage + message."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse's API
        raise UsageError(message)


def _int(text: str) -> int:
    try:
        return int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None


def add_config_flags(p: argparse.ArgumentParser, inherit: bool = False) -> None:
    """The attention-layer flags. ``inherit``: for a subcommand, so a flag it is not
    given leaves the value set before the subcommand (``--heads 4 shapes``) alone;
    argparse would otherwise reset it to the subcommand's default of None."""
    g = p.add_argument_group("attention layer (any flag not given keeps the default or the preset)")
    add = functools.partial(g.add_argument, default=argparse.SUPPRESS if inherit else None)
    add("--preset", metavar="NAME", help="start from a real model's attention layer "
        "(see --list-presets); other flags then override it")
    add("--d-model", type=_int, metavar="D", help="model width D (default 512)")
    add("--heads", type=_int, metavar="H", help="query heads H; must divide D (default 8)")
    add("--kv-heads", type=_int, metavar="HKV",
        help="key/value heads: H for MHA, 1 for MQA, a divisor of H for GQA (default H)")
    add("--batch", type=_int, metavar="B", help="batch size B (default 2)")
    add("--seq", type=_int, metavar="T", help="query length T (default 8)")
    add("--kv-seq", type=_int, metavar="S",
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
    add("--seed", type=_int, metavar="N", help="seed for weights and inputs (default 0)")


_FLAG_FIELDS = {
    "d_model": "d_model", "heads": "n_heads", "kv_heads": "n_kv_heads", "batch": "batch",
    "seq": "seq", "kv_seq": "kv_seq", "causal": "causal", "causal_alignment": "causal_alignment",
    "bias": "bias", "dtype": "dtype", "device": "device", "seed": "seed",
}


def config_from_args(args: argparse.Namespace, base: MHAConfig | None = None) -> MHAConfig:
    """The config the flags describe; raises ConfigError for an invalid combination."""
    cfg = base or MHAConfig()
    if getattr(args, "preset", None) is not None:  # --preset "" is an unknown preset, not none
        cfg = get_preset(args.preset).apply(cfg)
    changes: dict[str, Any] = {f: getattr(args, a) for a, f in _FLAG_FIELDS.items()
                               if getattr(args, a, None) is not None}
    if getattr(args, "sentence", None) is not None:  # --sentence "" has no words: an error
        words = sentence_tokens(args.sentence)
        if not words:
            raise ConfigError("tokens", "the sentence has no words")
        changes.update(tokens=words, seq=len(words))
    elif "seq" in changes:
        changes["tokens"] = None
    return _build(cfg, changes)


def _build(cfg: MHAConfig, changes: dict[str, Any]) -> MHAConfig:
    # validate the whole change at once so the message is about the final config
    data = cfg.to_dict()
    data.update(changes)
    return MHAConfig.from_dict(data)


def _dims(t: dict) -> str:
    return "[" + ", ".join(t["dims"]) + "]"


def _shape(t: dict) -> str:
    return "[" + ", ".join(f"{n:,}" for n in t["shape"]) + "]"


def format_plan(plan: Plan) -> str:
    c, d = plan.config, plan.to_dict()
    lines = [
        f"MHA Explorer — {c.variant}: D={c.d_model}  H={c.H}  Hkv={c.Hkv}  d_k={c.d_k}  "
        f"B={c.batch}  T={c.T}  S={c.S}  {c.dtype}"
        + ("  causal" if c.causal else "") + ("  bias" if c.bias else "  no bias"),
        "",
    ]
    rows = [("stage", "tensor", "dims", "shape", "strides", "contiguous", "FLOPs", "new memory")]
    for s in d["stages"]:
        for i, t in enumerate(s["tensors"]):
            rows.append((
                s["id"] if i == 0 else "", t["name"], _dims(t), _shape(t),
                "(" + ", ".join(f"{x:,}" for x in t["strides"]) + ")",
                "yes" if t["contiguous"] else "no (view)" if not t["allocates"] else "no",
                format_count(s["flops"]) if i == 0 else "",
                format_bytes(s["bytes"]) if i == 0 else "",
            ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    lines += ["", "Parameters (one attention layer)"]
    p = d["params"]
    for t in p["terms"]:
        lines.append(f"  {t['name']:<4} = {t['formula']:<14} = {t['numbers']:<16} = {t['count']:>16,}")
    lines.append(f"  total = {p['total_formula']} = {p['total']:,}")
    lines.append(f"  one head (H = 1) at d_model {c.d_model}: {p['single_head_total']:,}"
                 + ("  — the same: heads split D, they do not add parameters"
                    if p["single_head_total"] == p["mha_total"] == p["total"] else ""))
    if c.Hkv != c.H:
        lines.append(f"  full MHA (Hkv = H = {c.H}): {p['mha_total']:,}; {c.variant} saves "
                     f"{p['mha_total'] - p['total']:,}")
    m = d["memory"]
    lines += [
        "", "Memory",
        f"  KV cache per token: 2 × Hkv × d_k × {c.elem_bytes} B = {format_bytes(m['kv_cache_per_token'])}",
        f"  KV cache per sequence (S = {c.S:,}): {format_bytes(m['kv_cache_per_sequence'])};"
        f" for the batch: {format_bytes(m['kv_cache_batch'])}",
        f"  attention matrix B·H·T·S: {format_bytes(m['attention_matrix'])} (grows with T·S)",
        f"  total FLOPs: {format_count(plan.total_flops)}",
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mha-explorer",
        description="Multi-head attention, stage by stage. With no command, opens the window.",
    )
    add_config_flags(parser)
    parser.add_argument("--stage", choices=STAGE_IDS, help="the stage to open on")
    parser.add_argument("--present", action="store_true",
                        help="start in presentation mode: full screen, projector-sized type, "
                        "advanced controls tucked away (F11 or Esc leaves)")
    parser.add_argument("--theme", choices=THEME_NAMES,
                        help="light or dark (default: the one used last); remembered")
    parser.add_argument("--settings", metavar="FILE",
                        help="read and keep preferences in this file instead of the user's")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    shapes = sub.add_parser("shapes", help="print every stage's shapes and the parameter arithmetic",
                            description="Print every stage's tensor shapes, strides, FLOPs and "
                            "memory, and the parameter arithmetic. Never imports torch.")
    add_config_flags(shapes, inherit=True)
    shapes.add_argument("--json", action="store_true", help="print JSON instead of a table")
    shapes.add_argument("--list-presets", action="store_true", help="list the presets and exit")

    export = sub.add_parser(
        "export", help="draw stages to PNG/SVG files and write the tables, without a window",
        description="Compute the layer once and draw each chosen stage as NN-stage.png/.svg "
        "(the stage view) and NN-stage-heads.png/.svg (a map per head), plus shapes.csv, "
        "shapes.md, params.csv and params.md. Runs without a display.")
    add_config_flags(export, inherit=True)
    export.add_argument("--stage", dest="export_stage", default="all", metavar="ID",
                        help=f"'all' (the default) or one of: {', '.join(STAGE_IDS)}")
    export.add_argument("--out", required=True, metavar="DIR",
                        help="folder to write into (made if missing)")
    export.add_argument("--size", default="1920x1080", metavar="WxH",
                        help="picture size in pixels (default 1920x1080)")
    export.add_argument("--format", default="png,svg", metavar="LIST",
                        help="png, svg or png,svg (default both)")
    export.add_argument("--theme", dest="export_theme", choices=THEME_NAMES,
                        help="colours of the pictures (default light)")
    export.add_argument("--no-tables", action="store_true", help="pictures only")
    return parser


def _list_presets() -> str:
    from mha_explorer.core.plan import param_plan

    width = max(len(k) for k in PRESETS)
    out = []
    for key, p in PRESETS.items():
        total = param_plan(p.apply(MHAConfig())).total
        out.append(f"{key:<{width}}  {p.name:<22} D={p.d_model:<6} H={p.n_heads:<3} "
                   f"Hkv={p.n_kv_heads:<3} bias={'yes' if p.bias else 'no ':<3}  "
                   f"{total:>13,} attention parameters per layer")
    return "\n".join(out)


def _cmd_shapes(args: argparse.Namespace) -> int:
    if args.list_presets:
        emit(_list_presets())
        return 0
    plan = build_plan(config_from_args(args))
    emit(json.dumps(plan.to_dict(), indent=2) if args.json else format_plan(plan))
    return 0


def _export_choices(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[int, int],
                                                       tuple[str, ...], Path]:
    """Stages, size, formats and folder from the flags; UsageError for a bad one.
    Checked before torch or Qt load, so a typo costs nothing."""
    checks = (("--stage", parse_stages, args.export_stage), ("--size", parse_size, args.size),
              ("--format", parse_formats, args.format))
    values = []
    for flag, parse, text in checks:
        try:
            values.append(parse(text))
        except ValueError as exc:
            raise UsageError(f"argument {flag}: {exc}") from None
    out = Path(args.out)
    if not args.out.strip() or (out.exists() and not out.is_dir()):
        raise UsageError(f"argument --out: '{args.out}' is not a folder")
    return (*values, out)


def _headless() -> None:
    """No display (CI, a server, ssh): draw offscreen. Must happen before Qt loads."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def _cmd_export(args: argparse.Namespace) -> int:
    stages, size, formats, out = _export_choices(args)
    config = config_from_args(args)
    _headless()
    from mha_explorer.core import engine  # torch: only once the flags are known to be good
    from mha_explorer.core.memory import MemoryBudgetError

    try:
        trace = engine.run(config)
    except MemoryBudgetError as exc:  # shapes and arithmetic still draw, without values
        print(f"mha-explorer: note: not computed ({one_line(str(exc))}); "
              "the pictures show shapes only", file=sys.stderr)
        trace = None
    from mha_explorer.qt.shell.app import application
    from mha_explorer.qt.shell.export import ExportOptions, export_stages
    from mha_explorer.qt.shell.theme import apply_theme, theme_named

    try:
        with deferred_interrupt():  # Ctrl+C acts between whole files, never inside a Qt call
            app = application()
            apply_theme(app, theme_named(args.export_theme or getattr(args, "theme", None) or "light"))
            written = export_stages(config, trace, stages, out, options=ExportOptions(
                size=size, formats=formats, tables=not args.no_tables))
    except OSError as exc:
        return report_io_error(exc)  # exit 1 with the system's reason; 2 stays the usage code
    for path in written:
        emit(str(path))
    return 0


def one_line(text: str) -> str:
    """``text`` with every character that would break the line (a newline typed
    into a flag's value, say) written as its escape, so an error stays one line."""
    return "".join(c.encode("unicode_escape").decode("ascii") if len(f"a{c}b".splitlines()) > 1
                   else c for c in text)


def _fail(message: str) -> int:
    print(f"mha-explorer: error: {one_line(message)}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "shapes":
            return _cmd_shapes(args)
        if args.command == "export":
            return _cmd_export(args)
        if args.command is None:
            from mha_explorer.qt.shell.app import run_app  # Qt is imported only to open the window

            return run_app(args)
        return _fail(f"unknown command {args.command}")
    except UsageError as exc:
        return _fail(str(exc))
    except ConfigError as exc:
        return _fail(exc.message)
    except BrokenPipeError:
        return 0
    except OutputError as exc:
        return report_io_error(exc)
    except KeyboardInterrupt:
        return report_interrupt()
