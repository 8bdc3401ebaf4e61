"""``mha-explorer lab``: train the lab's models without a window.

    mha-explorer lab --task reverse --heads 1,2,4,8,16 --d-model 256 --steps 300 --seed 0 \\
        [--layers 2] [--ablate] [--prune] [--out DIR] [--json]

Every value is checked before torch loads; a bad one is one line on stderr and
exit code 2. On a terminal, stderr shows a progress bar; Ctrl+C stops within a
training step, leaves no partial file, and exits with 130.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from mha_explorer.cli.common import fail
from mha_explorer.cli.flag_types import path_text
from mha_explorer.console import EXIT_IO, emit, one_line
from mha_explorer.core.lab.task_catalog import TASKS
from mha_explorer.core.system.typed_input import TypedInputError, whole_number

EXIT_USAGE = 2
DEFAULT_HEADS = "1,2,4,8,16"
MAX_D_MODEL = 4096
MAX_STEPS = 1_000_000
MAX_LAYERS = 2
FLAG_TEXT_MAX = 200  # characters of a flag's value worth reading back in an error


NAME = "lab"


class LabUsageError(ValueError):
    pass


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``lab`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser(
        "lab", help="train small attention models on a generated task; ablate and prune their heads",
        description="Train one model per head count on a generated task (tasks: "
        f"{', '.join(TASKS)}), report held-out accuracy, steps to 95 %, per-head attention "
        "entropy and the best last-layer head's prefix-matching score (an induction head's "
        "signature); optionally rank heads by ablation and prune them greedily (heads chosen on "
        "one held-out set, accuracy reported on another).")
    add = p.add_argument
    add("--task", dest="lab_task", metavar="NAME", required=True, help=f"one of: {', '.join(TASKS)}")
    add("--heads", dest="lab_heads", default=DEFAULT_HEADS, metavar="LIST",
        help=f"head counts to train, comma separated (default {DEFAULT_HEADS})")
    add("--d-model", dest="lab_d_model", default=None, metavar="D",
        help="model width (default: the task's, 256 or 64 for induction and add)")
    add("--steps", dest="lab_steps", default=None, metavar="N",
        help="training steps per model (default: the task's, enough to learn it at its default sizes)")
    add("--seed", dest="lab_seed", default="0", metavar="S", help="seed for weights and data (default 0)")
    add("--layers", dest="lab_layers", default="1", metavar="L", help="attention layers, 1 or 2 (default 1)")
    add("--mlp", dest="lab_mlp", action="store_true",
        help="add a small MLP after each attention layer (add and subtract always have one)")
    add("--positions", dest="lab_positions", default="learned", choices=("learned", "sinusoidal"),
        help="how positions enter (default learned)")
    add("--ablate", dest="lab_ablate", action="store_true", help="zero one head at a time; accuracy drops")
    add("--prune", dest="lab_prune", action="store_true",
        help="greedily remove the least important heads (chosen on one held-out set, reported on another)")
    add("--out", dest="lab_out", metavar="DIR", type=path_text,
        help="save every run (safetensors + JSON) and summary.json")
    add("--json", dest="lab_json", action="store_true", help="print JSON instead of a table")
    return p


def shown(text: str) -> str:
    """A flag's value as it can be printed on one line: cut short, and every character
    that is not printable (control characters, escapes) written as its escape."""
    text = str(text)
    cut = text[:FLAG_TEXT_MAX] + ("…" if len(text) > FLAG_TEXT_MAX else "")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in cut)


def _whole(flag: str, text: str, low: int, high: int) -> int:
    try:
        value = whole_number(text)
    except TypedInputError as exc:
        raise LabUsageError(f"argument {flag}: {exc}") from None
    if not low <= value <= high:
        raise LabUsageError(f"argument {flag}: {shown(text)} is out of range ({low}–{high:,})")
    return value


def parse_heads(text: str, d_model: int) -> list[int]:
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise LabUsageError(f"argument --heads: '{shown(text)}' is not a comma-separated list of head counts")
    heads = [_whole("--heads", p, 1, d_model) for p in parts]
    bad = [h for h in heads if d_model % h]
    if bad:
        raise LabUsageError(f"argument --heads: {bad[0]} heads do not divide d_model {d_model}")
    return list(dict.fromkeys(heads))  # keep order, drop repeats


def _out_folder(text: str | None) -> Path | None:
    """The sweep's folder, checked before any training: a new folder or one a sweep made."""
    if text is None:
        return None
    text = str(text)  # a byte that is not UTF-8 is kept (a lone surrogate); a control character is not
    if not text.strip() or not all(c.isprintable() or "\udc80" <= c <= "\udcff" for c in text):
        raise LabUsageError(f"argument --out: '{shown(text)}' is not a usable folder name")
    from mha_explorer.core.lab.files import RunFileError
    from mha_explorer.core.lab.folders import check_sweep_target

    out = Path(text)
    try:
        check_sweep_target(out)
    except RunFileError as exc:
        raise LabUsageError(f"argument --out: {exc}") from None
    return out


def _options(args: argparse.Namespace) -> dict:
    if args.lab_task not in TASKS:
        raise LabUsageError(f"argument --task: unknown task '{shown(args.lab_task)}' "
                            f"(choose {', '.join(TASKS)})")
    task = TASKS[args.lab_task]
    d_model = task.d_model if args.lab_d_model is None else _whole("--d-model", args.lab_d_model, 1,
                                                                   MAX_D_MODEL)
    return {
        "task": args.lab_task, "d_model": d_model, "heads": parse_heads(args.lab_heads, d_model),
        "steps": task.steps if args.lab_steps is None else _whole("--steps", args.lab_steps, 1, MAX_STEPS),
        "seed": _whole("--seed", args.lab_seed, 0, 2**31 - 1),
        "layers": _whole("--layers", args.lab_layers, 1, MAX_LAYERS), "out": _out_folder(args.lab_out),
    }


def lab_report(task: str, runs, ablations, prunings) -> dict:
    """The JSON document of a sweep (the schema ``--json`` prints); ablations and prunings
    are empty when not asked for, else one per run."""
    return {
        "task": task,
        "runs": [{"heads": r.spec.heads, "final_accuracy": r.final_accuracy, "steps_to_95": r.steps_to_goal,
                  "curve": [[s, lo, a] for s, lo, a in r.curve], "entropy_bits": r.final_entropy,
                  "prefix_matching": [[s, p] for s, p in r.prefix_matching()]}
                 for r in runs],
        "ablation": [{"heads": r.spec.heads, "head": i, "accuracy_drop": d}
                     for r, ab in zip(runs, ablations, strict=False) for i, d in enumerate(ab.drops)],
        "pruning": [{"heads": r.spec.heads, "removed": k, "accuracy": a}
                    for r, pr in zip(runs, prunings, strict=False) for k, a in enumerate(pr.accuracy)],
    }


def format_table(report: dict, prunings, d_model: int) -> str:
    lines = [f"task {report['task']}",
             f"{'heads':>5}  {'final acc':>9}  {'steps to 95%':>12}  {'mean entropy (bits)':>19}"
             f"  {'prefix matching':>15}" + ("  removable" if prunings else "")]
    for i, r in enumerate(report["runs"]):
        bits = r["entropy_bits"]
        mean = sum(bits) / len(bits) if bits else math.nan
        steps = "—" if r["steps_to_95"] is None else str(r["steps_to_95"])
        prefix = r["prefix_matching"][-1][1] if r["prefix_matching"] else math.nan
        tail = f"  {prunings[i].removable:>9}" if prunings else ""
        lines.append(f"{r['heads']:>5}  {r['final_accuracy']:>9.1%}  {steps:>12}  {mean:>19.2f}"
                     f"  {prefix:>15.2f}{tail}")
    if len(report["runs"]) > 1:
        from mha_explorer.core.lab.lesson import head_count_story  # numpy: not at the window's start

        lines.append(head_count_story(d_model, [(r["heads"], r["final_accuracy"], r["steps_to_95"])
                                                for r in report["runs"]]))
    if prunings:
        lines.append("removable: heads pruned before held-out accuracy fell more than 1 point; chosen on "
                     "one held-out set, measured on another")
    return "\n".join(lines)


class _Progress:
    """A progress bar over every step of every head count, on stderr, only when stderr
    is a terminal (a script reading --json sees nothing extra)."""

    def __init__(self, total: int):
        self.bar = None
        if sys.stderr is not None and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=sys.stderr, unit="step", dynamic_ncols=True, leave=False)

    def label(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_description(text, refresh=False)

    def to(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _train_all(opts: dict, ablate: bool, prune_heads: bool, mlp: bool, positions: str):
    from mha_explorer.core.lab.analysis import ablate as run_ablation
    from mha_explorer.core.lab.analysis import prune
    from mha_explorer.core.lab.model import LabModelSpec
    from mha_explorer.core.lab.train import TrainSettings, train

    task = TASKS[opts["task"]]
    settings = TrainSettings(seed=opts["seed"], steps=opts["steps"])
    runs, ablations, prunings = [], [], []
    bar = _Progress(settings.steps * len(opts["heads"]))
    try:
        for i, h in enumerate(opts["heads"]):
            spec = LabModelSpec(task=opts["task"], vocab=task.vocab, n=task.n, d_model=opts["d_model"],
                                heads=h, layers=opts["layers"], mlp=mlp or task.mlp, positions=positions)
            bar.label(f"{h} head{'s' if h > 1 else ''}")
            done = i * settings.steps
            run = train(spec, settings, progress=lambda e, done=done: bar.to(done + e.step))
            runs.append(run)
            if ablate:
                ablations.append(run_ablation(run))
            if prune_heads:
                prunings.append(prune(run))
    finally:
        bar.close()
    return runs, ablations, prunings


def _sweep_runs(runs, ablations, prunings) -> list[tuple]:
    """Each run with its ``extra`` (the ablation and pruning results asked for)."""
    paired = []
    for i, run in enumerate(runs):
        extra = {}
        if ablations:
            extra["ablation"] = {"base_accuracy": ablations[i].base_accuracy, "drops": ablations[i].drops}
        if prunings:
            extra["pruning"] = {"order": prunings[i].order, "accuracy": prunings[i].accuracy,
                                "selection_accuracy": prunings[i].selection_accuracy}
        paired.append((run, extra))
    return paired


def _save(out: Path, task: str, report: dict, paired: list[tuple]) -> str | None:
    """Save the sweep to ``out``; None, or one line saying what failed and where the runs
    were kept instead (they are never only in memory when a save fails)."""
    from mha_explorer.core.lab.sweep_store import keep_unsaved, save_sweep  # torch: after training

    summary = json.dumps(report, indent=1).encode()
    try:
        save_sweep(out, paired, summary)
        return None
    except (OSError, ValueError) as exc:
        failed = str(exc)
    try:
        kept = keep_unsaved(task, paired, summary)
    except (OSError, ValueError) as exc:
        return f"{failed}; nor could they be kept elsewhere ({exc}): the results printed are all that is left"
    return f"{failed}; the runs are kept in {shown(kept)} instead"


def run(args: argparse.Namespace) -> int:
    try:
        opts = _options(args)
    except LabUsageError as exc:
        return fail(str(exc))
    try:
        runs, ablations, prunings = _train_all(opts, args.lab_ablate, args.lab_prune, args.lab_mlp,
                                               args.lab_positions)
    except ValueError as exc:  # a model the settings cannot make
        return fail(str(exc))
    report = lab_report(opts["task"], runs, ablations, prunings)
    problem = None
    if opts["out"] is not None:
        problem = _save(opts["out"], opts["task"], report, _sweep_runs(runs, ablations, prunings))
    emit(json.dumps(report) if args.lab_json else format_table(report, prunings, opts["d_model"]))
    if problem is not None:  # the results are printed first: the training is never lost
        print(f"mha-explorer: error: {one_line(problem)}", file=sys.stderr)
        return EXIT_IO
    return 0


register = add_parser  # the cli package's name for adding the subparser
