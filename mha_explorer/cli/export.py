"""``mha-explorer export``: draw stages to PNG/SVG files and write the tables, without a
window (offscreen when there is no display)."""

from __future__ import annotations

import argparse
import json
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
from mha_explorer.cli.flag_types import path_text
from mha_explorer.cli.progress import Progress
from mha_explorer.console import emit, report_io_error
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.specs.export import parse_formats, parse_size, parse_stages
from mha_explorer.core.stages.catalog import STAGES, StageId
from mha_explorer.core.system import safe_files
from mha_explorer.core.system.interrupts import deferred_interrupt
from mha_explorer.core.units import format_count, likely_duration

NAME = "export"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME, help="draw stages to PNG/SVG files and write the tables, without a window",
        description="Compute the layer once and draw each chosen stage as NN-stage.png/.svg "
        "(the stage view) and NN-stage-heads.png/.svg (a map per head), plus shapes.csv, "
        "shapes.md, params.csv and params.md. Runs without a display. A sequence too long to "
        "show whole draws, up to the softmax, only the query rows its maps show (spread evenly, "
        "each exact; named on stderr and in rows.json); a later stage needs every row, and its "
        "likely time is said first. On a terminal, stderr shows a progress bar.")
    add_config_flags(p, inherit=True)
    p.add_argument("--stage", dest="export_stage", default="all", metavar="ID",
                   help="'all' (the default: every stage the config has, in order, positions, "
                   f"RoPE and a latent family's own steps included) or one of: {', '.join(STAGES)}")
    p.add_argument("--out", required=True, metavar="DIR", type=path_text,
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
    try:
        usable = bool(args.out.strip()) and (not out.exists() or out.is_dir())
    except OSError as exc:  # a name too long for the system, a loop of links
        raise UsageError(f"argument --out: {safe_files.describe(exc)}") from None
    if not usable:
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
    from mha_explorer.core.plan.memory import MemoryBudgetError, budget_cap_note

    try:
        trace = compute(config, stages)
    except MemoryBudgetError as exc:  # shapes and arithmetic still draw, without values
        capped = budget_cap_note() if config.device != "cuda" else None
        why = one_line(str(exc)) + (f"; {capped}" if capped else "")
        print(f"mha-explorer: note: not computed ({why}); the pictures show shapes only", file=sys.stderr)
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
    if trace is not None and trace.row_ids is not None:
        # here, not at the top: every command imports this module, the window's included,
        # and numpy (which head_maps brings) must not hold up the window's first paint
        from mha_explorer.core.display.head_maps import picked_rows_note

        try:
            written.append(write_rows_sidecar(out, trace))
        except OSError as exc:
            return report_io_error(exc)
        print(f"mha-explorer: note: drew batch element {trace.batch_index}, "
              f"{picked_rows_note(trace.row_ids, config.T)}; its statistics are over these rows "
              f"(listed in {ROWS_SIDECAR})", file=sys.stderr)
    else:
        drop_stale_rows_sidecar(out)
    for path in written:
        emit(str(path))
    return 0


def _needs_every_row(config, stages) -> bool:
    """Whether a chosen stage comes after the softmax: its tensors need every query row."""
    ids = build_plan(config).stage_ids
    chosen = ids if stages == "all" else stages
    return StageId.softmax not in ids or max(ids.index(s) for s in chosen) > ids.index(StageId.softmax)


def compute(config, stages):
    """The trace the pictures draw. A sequence too long to keep whole, with no stage after
    the softmax, computes only the query rows drawn (rows mode); one that needs every row
    says first how long that will take. A bar on a terminal's stderr shows progress."""
    from mha_explorer.core.engine import runner as engine  # torch: only once the flags are known to be good
    from mha_explorer.core.variants.registry import family_of

    device = engine.resolve_device(config.device)
    mode, _peak, _budget = engine.choose_mode(engine.EngineRequest(config), device)
    request = engine.EngineRequest(config)
    if mode == "windowed" and not family_of(config).computed_whole:
        if _needs_every_row(config, stages):
            say_how_long(config, device)
        else:
            request = engine.EngineRequest(config, mode="rows")
    with Progress(PROGRESS_STEPS, unit="%", label="computing") as bar:
        return engine.run(request, progress=bar.fraction)


PROGRESS_STEPS = 100  # the bar counts per cent


def say_how_long(config, device: str) -> None:
    """On stderr, before a computation of every query row of a long sequence: its FLOPs and
    the time they take at this machine's measured speed."""
    from mha_explorer.core.engine.speed import every_row_seconds

    flops = build_plan(config).total_flops
    seconds = every_row_seconds(config, device)
    print(f"mha-explorer: note: a stage after the softmax needs every one of the {config.T:,} query "
          f"rows: {format_count(flops)} FLOPs, {likely_duration(seconds)} on this machine "
          "(stages up to the softmax alone draw only the rows shown)", file=sys.stderr)


ROWS_SIDECAR = "rows.json"


def drop_stale_rows_sidecar(out: Path) -> None:
    """An earlier export's rows.json would describe pictures just drawn over with every row:
    removed when it is that sidecar (a plain file holding our document), else left alone."""
    path = out / ROWS_SIDECAR
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1 << 20:
            return
        doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and doc.get("mode") == "rows" and "query_rows_total" in doc:
            path.unlink()
    except (OSError, ValueError, RecursionError):  # unreadable or not ours: not this export's business
        return


def write_rows_sidecar(out: Path, trace) -> Path:
    """rows.json beside the pictures: which query rows the attention maps hold, and that
    each is exact (computed alone, not averaged)."""
    cfg = trace.config
    doc = {"mode": "rows", "batch_element": trace.batch_index, "query_rows_total": cfg.T,
           "rows": list(trace.row_ids),
           "how": "rows spread evenly over the sequence, each computed exactly; the maps' and "
                  "their statistics' rows are these, in this order; stages after the softmax "
                  "were not computed"}
    return safe_files.write_bytes(out / ROWS_SIDECAR, (json.dumps(doc, indent=1) + "\n").encode())
