"""``mha-explorer pictures``: a contact sheet of every picture a class may see (each setup's
stages on each classroom screen, in the window and in presentation, in both themes) as PNGs
with an index page that lists what the picture checks found in each. Runs offscreen, on
screens of its own; a Lab run, when that setup is chosen, is trained for the sheet first."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from mha_explorer.cli.common import UsageError
from mha_explorer.cli.progress import Progress
from mha_explorer.console import emit, report_io_error
from mha_explorer.core.system.interrupts import checkpoint, deferred_interrupt

NAME = "pictures"


def _names(what: str, known: tuple[str, ...]):
    lower = {k.lower(): k for k in known}

    def parse(text: str) -> str:
        found = lower.get(text.strip().lower())
        if found is None:
            raise argparse.ArgumentTypeError(f"unknown {what} '{text}'; choose from {', '.join(known)}")
        return found
    return parse


def register(sub: argparse._SubParsersAction) -> None:
    from mha_explorer.qt.gallery.matrix import MODES, SCREENS, SETUPS, THEMES

    p = sub.add_parser(
        NAME, help="write every picture a class may see as PNGs, with an index page",
        description="Walk every setup (the attention families, RoPE, masks, positions, the trained "
        "models and a Lab run) through every stage on each classroom screen (1024x768 to "
        "1920x1080 and a 2x high-DPI one), in the window and in presentation mode, in both themes; "
        "write each picture as a PNG under DIR and DIR/index.html showing them all, each with what "
        "the picture checks found (text on text, on a tensor, cut, too small, too faint). Runs "
        "without a display.")
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write into (made if missing)")
    p.add_argument("--sample", action="store_true",
                   help="a fixed sample (each setup on one screen and theme, both modes) instead of "
                   "the whole matrix")
    p.add_argument("--setup", action="append", metavar="NAME",
                   type=_names("setup", tuple(s.name for s in SETUPS)),
                   help=f"only this setup (repeatable): {', '.join(s.name for s in SETUPS)}")
    p.add_argument("--screen", action="append", metavar="NAME",
                   type=_names("screen", tuple(s.name for s in SCREENS)),
                   help=f"only this screen (repeatable): {', '.join(s.name for s in SCREENS)}")
    p.add_argument("--mode", action="append", choices=MODES, help="only this mode (repeatable)")
    p.add_argument("--sheet-theme", action="append", choices=THEMES, metavar="THEME",
                   help="only this theme (repeatable): light or dark")


def lab_config(folder: Path):
    """A small Lab run, trained and saved in ``folder``, as the config that opens its layer."""
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.lab.model import LabModelSpec
    from mha_explorer.core.lab.source import config_changes
    from mha_explorer.core.lab.store import save_run
    from mha_explorer.core.lab.train import TrainSettings, train

    run = train(LabModelSpec(task="reverse", vocab=8, n=4, d_model=32, heads=4),
                TrainSettings(steps=20, batch=16, eval_every=10, eval_size=16, device="cpu"))
    save_run(run, folder)
    return MHAConfig(weights="lab", weights_path=str(folder), device="cpu", **config_changes(run))


def offscreen_screens(folder: Path) -> None:
    """The offscreen platform with the matrix's screens side by side. Before Qt loads."""
    from mha_explorer.qt.gallery.matrix import screens_config

    path = folder / "screens.json"
    path.write_text(json.dumps(screens_config()))
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={path}"


def chosen(args: argparse.Namespace):
    """The cases the flags ask for."""
    from mha_explorer.qt.gallery import matrix

    setups = tuple(s for s in matrix.SETUPS if not args.setup or s.name in args.setup)
    screens = tuple(s for s in matrix.SCREENS if not args.screen or s.name in args.screen)
    return [case for case in matrix.cases(args.sample, setups, screens)
            if (not args.mode or case.mode in args.mode)
            and (not args.sheet_theme or case.theme in args.sheet_theme)]


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not args.out.strip() or (out.exists() and not out.is_dir()):
        raise UsageError(f"argument --out: '{args.out}' is not a folder")
    with tempfile.TemporaryDirectory(prefix="mha-explorer-pictures-") as tmp:
        work = Path(tmp)
        offscreen_screens(work)
        cases = chosen(args)
        lab = lab_config(work / "lab-run") if any(c.setup.name == "Lab run" for c in cases) else None
        try:
            return _write(out, cases, work, lab)
        except OSError as exc:
            return report_io_error(exc)


def _write(out: Path, cases, work: Path, lab) -> int:
    from mha_explorer.qt.gallery.faults import KINDS, faults
    from mha_explorer.qt.gallery.sheet import Sheet
    from mha_explorer.qt.gallery.walk import Walk
    from mha_explorer.qt.shell.app import application

    application()
    out.mkdir(parents=True, exist_ok=True)
    sheet = Sheet(out)
    found: Counter = Counter()
    walk = Walk(work, lab)
    try:
        with deferred_interrupt(), Progress(len(cases), unit="views", label="pictures") as bar:
            done = set()
            for shown in walk.pictures(cases):
                checkpoint()  # Ctrl+C between pictures, never inside a Qt call
                wrong = faults(shown.picture)
                found.update(f.kind for f in wrong)
                sheet.add(shown, wrong)
                done.add(shown.case)
                bar.to(len(done))
        index = sheet.finish(walk.skipped)
    finally:
        walk.close()
    said = ", ".join(f"{found[k]} {k}" for k in KINDS if found[k]) or "no faults"
    print(f"mha-explorer: {sheet.count} pictures: {said}", file=sys.stderr)
    for note in walk.skipped:
        print(f"mha-explorer: note: {note}", file=sys.stderr)
    emit(str(index))
    return 0
