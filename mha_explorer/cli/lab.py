"""``mha-explorer lab``: train the lab's models without a window.

    mha-explorer lab --task reverse --heads 1,2,4,8,16 --d-model 256 --steps 300 --seed 0 \
        [--ablate] [--prune] [--out DIR] [--json]

Every value is checked before torch loads; a bad one is one line on stderr and
exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mha_explorer.core.lab.tasks import TASKS

EXIT_USAGE = 2
DEFAULT_HEADS = "1,2,4,8,16"
MAX_D_MODEL = 4096
MAX_STEPS = 1_000_000


NAME = "lab"


class LabUsageError(ValueError):
    pass


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``lab`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser(
        "lab", help="train small attention models on a generated task; ablate and prune their heads",
        description="Train one model per head count on a generated task (tasks: "
        f"{', '.join(TASKS)}), report held-out accuracy, steps to 95 %% and per-head attention "
        "entropy; optionally rank heads by ablation and prune them greedily.")
    add = p.add_argument
    add("--task", dest="lab_task", metavar="NAME", required=True, help=f"one of: {', '.join(TASKS)}")
    add("--heads", dest="lab_heads", default=DEFAULT_HEADS, metavar="LIST",
        help=f"head counts to train, comma separated (default {DEFAULT_HEADS})")
    add("--d-model", dest="lab_d_model", default="256", metavar="D", help="model width (default 256)")
    add("--steps", dest="lab_steps", default=None, metavar="N",
        help="training steps per model (default: enough for the reverse task to pass 95 %%)")
    add("--seed", dest="lab_seed", default="0", metavar="S", help="seed for weights and data (default 0)")
    add("--layers", dest="lab_layers", default="1", metavar="L", help="attention layers, 1 or 2 (default 1)")
    add("--mlp", dest="lab_mlp", action="store_true", help="add a small MLP after each attention layer")
    add("--positions", dest="lab_positions", default="learned", choices=("learned", "sinusoidal"),
        help="how positions enter (default learned)")
    add("--ablate", dest="lab_ablate", action="store_true", help="zero one head at a time; accuracy drops")
    add("--prune", dest="lab_prune", action="store_true", help="greedily remove the least important heads")
    add("--out", dest="lab_out", metavar="DIR", help="save every run (safetensors + JSON) and summary.json")
    add("--json", dest="lab_json", action="store_true", help="print JSON instead of a table")
    return p


def _whole(flag: str, text: str, low: int, high: int) -> int:
    try:
        value = int(str(text).replace("_", ""))
    except ValueError:
        raise LabUsageError(f"argument {flag}: '{text}' is not a whole number") from None
    if not low <= value <= high:
        raise LabUsageError(f"argument {flag}: {value} is out of range ({low}–{high:,})")
    return value


def parse_heads(text: str, d_model: int) -> list[int]:
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise LabUsageError(f"argument --heads: '{text}' is not a comma-separated list of head counts")
    heads = [_whole("--heads", p, 1, d_model) for p in parts]
    bad = [h for h in heads if d_model % h]
    if bad:
        raise LabUsageError(f"argument --heads: {bad[0]} heads do not divide d_model {d_model}")
    return list(dict.fromkeys(heads))  # keep order, drop repeats


def _options(args: argparse.Namespace) -> dict:
    if args.lab_task not in TASKS:
        raise LabUsageError(f"argument --task: unknown task '{args.lab_task}' (choose {', '.join(TASKS)})")
    d_model = _whole("--d-model", args.lab_d_model, 1, MAX_D_MODEL)
    out = None
    if args.lab_out is not None:
        out = Path(args.lab_out)
        if not str(args.lab_out).strip() or out.is_symlink() or (out.exists() and not out.is_dir()):
            raise LabUsageError(f"argument --out: '{args.lab_out}' is not a folder (links are refused)")
    return {
        "task": args.lab_task, "d_model": d_model, "heads": parse_heads(args.lab_heads, d_model),
        "steps": None if args.lab_steps is None else _whole("--steps", args.lab_steps, 1, MAX_STEPS),
        "seed": _whole("--seed", args.lab_seed, 0, 2**31 - 1),
        "layers": _whole("--layers", args.lab_layers, 1, 2), "out": out,
    }


def lab_report(task: str, runs, ablations, prunings) -> dict:
    """The JSON document of a sweep (the schema ``--json`` prints); ablations and prunings
    are empty when not asked for, else one per run."""
    return {
        "task": task,
        "runs": [{"heads": r.spec.heads, "final_accuracy": r.final_accuracy, "steps_to_95": r.steps_to_goal,
                  "curve": [[s, lo, a] for s, lo, a in r.curve], "entropy_bits": r.final_entropy}
                 for r in runs],
        "ablation": [{"heads": r.spec.heads, "head": i, "accuracy_drop": d}
                     for r, ab in zip(runs, ablations, strict=False) for i, d in enumerate(ab.drops)],
        "pruning": [{"heads": r.spec.heads, "removed": k, "accuracy": a}
                    for r, pr in zip(runs, prunings, strict=False) for k, a in enumerate(pr.accuracy)],
    }


def format_table(report: dict, prunings) -> str:
    lines = [f"task {report['task']}",
             f"{'heads':>5}  {'final acc':>9}  {'steps to 95%':>12}  {'mean entropy (bits)':>19}"
             + ("  removable" if prunings else "")]
    for i, r in enumerate(report["runs"]):
        bits = r["entropy_bits"]
        mean = sum(bits) / len(bits) if bits else float("nan")
        steps = "—" if r["steps_to_95"] is None else str(r["steps_to_95"])
        tail = f"  {prunings[i].removable:>9}" if prunings else ""
        lines.append(f"{r['heads']:>5}  {r['final_accuracy']:>9.1%}  {steps:>12}  {mean:>19.2f}{tail}")
    return "\n".join(lines)


def _train_all(opts: dict, ablate: bool, prune_heads: bool, mlp: bool, positions: str):
    from mha_explorer.core.lab.analysis import ablate as run_ablation
    from mha_explorer.core.lab.analysis import prune
    from mha_explorer.core.lab.model import LabModelSpec
    from mha_explorer.core.lab.train import TrainSettings, train

    base = TrainSettings(seed=opts["seed"])
    settings = base if opts["steps"] is None else TrainSettings(seed=opts["seed"], steps=opts["steps"])
    runs, ablations, prunings = [], [], []
    for h in opts["heads"]:
        spec = LabModelSpec(task=opts["task"], d_model=opts["d_model"], heads=h, layers=opts["layers"],
                            mlp=mlp, positions=positions)
        run = train(spec, settings)
        runs.append(run)
        if ablate:
            ablations.append(run_ablation(run))
        if prune_heads:
            prunings.append(prune(run))
    return runs, ablations, prunings


def _save(out: Path, report: dict, runs, ablations, prunings) -> None:
    from mha_explorer.core.lab.store import save_run, write_atomic

    out.mkdir(parents=True, exist_ok=True)
    for i, run in enumerate(runs):
        extra = {}
        if ablations:
            extra["ablation"] = {"base_accuracy": ablations[i].base_accuracy, "drops": ablations[i].drops}
        if prunings:
            extra["pruning"] = {"order": prunings[i].order, "accuracy": prunings[i].accuracy}
        save_run(run, out / f"heads-{run.spec.heads}", extra)
    write_atomic(out / "summary.json", json.dumps(report, indent=1).encode())


def _fail(message: str) -> int:
    print(f"mha-explorer: error: {' '.join(str(message).split())}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    try:
        opts = _options(args)
    except LabUsageError as exc:
        return _fail(str(exc))
    try:
        runs, ablations, prunings = _train_all(opts, args.lab_ablate, args.lab_prune, args.lab_mlp,
                                               args.lab_positions)
    except ValueError as exc:  # a model the settings cannot make
        return _fail(str(exc))
    report = lab_report(opts["task"], runs, ablations, prunings)
    if opts["out"] is not None:
        try:
            _save(opts["out"], report, runs, ablations, prunings)
        except (OSError, ValueError) as exc:
            return _fail(f"could not write to {opts['out']}: {getattr(exc, 'strerror', None) or exc}")
    print(json.dumps(report) if args.lab_json else format_table(report, prunings))
    return 0


register = add_parser  # the cli package's name for adding the subparser
