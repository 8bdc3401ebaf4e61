"""``mha-explorer export``: draw stages to PNG/SVG files and write the tables, without a
window (offscreen when there is no display)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mha_explorer.cli.common import (
    THEME_NAMES,
    UsageError,
    add_config_flags,
    config_from_args,
    fail,
    one_line,
    require_device,
)
from mha_explorer.console import emit, report_io_error
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.specs.export import parse_formats, parse_size, parse_stages
from mha_explorer.core.stages.catalog import STAGES
from mha_explorer.core.system.interrupts import deferred_interrupt

NAME = "export"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME, help="draw stages to PNG/SVG files and write the tables, without a window",
        description="Compute the layer once and draw each chosen stage as NN-stage.png/.svg "
        "(the stage view) and NN-stage-heads.png/.svg (a map per head), plus shapes.csv, "
        "shapes.md, params.csv and params.md. Runs without a display.")
    add_config_flags(p, inherit=True)
    p.add_argument("--stage", dest="export_stage", default="all", metavar="ID",
                   help="'all' (the default: every stage the config has, in order, positions, "
                   f"RoPE and a latent family's own steps included) or one of: {', '.join(STAGES)}")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder to write into (made if missing)")
    p.add_argument("--size", default="1920x1080", metavar="WxH",
                   help="picture size in pixels (default 1920x1080)")
    p.add_argument("--format", default="png,svg", metavar="LIST",
                   help="png, svg or png,svg (default both)")
    p.add_argument("--theme", dest="export_theme", choices=THEME_NAMES,
                   help="colours of the pictures (default light)")
    p.add_argument("--no-tables", action="store_true", help="pictures only")


def _choices(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[int, int],
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


def run(args: argparse.Namespace) -> int:
    stages, size, formats, out = _choices(args)
    config = config_from_args(args)
    if stages != "all" and not build_plan(config).has_stage(stages[0]):
        return fail(f"argument --stage: this configuration has no {stages[0]} stage; it has "
                    + ", ".join(build_plan(config).stage_ids))
    require_device(config)
    _headless()
    from mha_explorer.core.engine import runner as engine  # torch: only once the flags are known to be good
    from mha_explorer.core.plan.memory import MemoryBudgetError

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
