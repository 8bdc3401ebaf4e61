"""What a saved run's run.json must hold, checked before anything is built from it
(no torch): types, ranges, finite numbers, and lengths that agree with the model it
declares. A problem is one sentence naming the file and the field, never the text
of an internal exception.
"""

from __future__ import annotations

import json
import math
from typing import Any

from mha_explorer.core.lab.tasks import TASKS

META_FILE = "run.json"
FORMAT = "mha-explorer-lab-run/2"
OLD_FORMATS = ("mha-explorer-lab-run/1",)  # saved before the weights' checksum was recorded
META_LIMIT = 64 << 20  # bytes: far more than a run of a million steps writes
MAX_ROWS = 100_001  # evaluations of the longest run the app trains (1,000,000 steps, every 10th)

# the model shapes a saved run may declare (the window's own controls stay well inside)
LIMITS = {"vocab": (2, 4096), "n": (2, 1024), "d_model": (1, 4096), "heads": (1, 4096),
          "layers": (1, 8)}
SETTING_LIMITS = {"steps": (1, 10_000_000), "batch": (1, 65_536), "warmup": (0, 10_000_000),
                  "seed": (0, 2**63 - 1), "eval_every": (1, 10_000_000), "eval_size": (1, 65_536)}
SPEC_KEYS = ("task", "vocab", "n", "d_model", "heads", "layers", "mlp", "positions")
SETTING_KEYS = ("steps", "batch", "lr", "weight_decay", "warmup", "seed", "eval_every", "eval_size",
                "device")


class RunSchemaError(ValueError):
    pass


def _fail(where: str, what: str) -> RunSchemaError:
    return RunSchemaError(f"{META_FILE}: {where} {what}")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return (_is_int(x) or isinstance(x, float)) and math.isfinite(x)


def _whole(d: dict, key: str, low: int, high: int, where: str) -> int:
    value = d.get(key)
    if not _is_int(value) or not low <= value <= high:
        raise _fail(f"'{where}{key}'", f"must be a whole number from {low} to {high:,}")
    return value


def _number(value: Any, where: str, low: float = -math.inf, high: float = math.inf) -> float:
    if not _is_number(value) or not low <= value <= high:
        span = (f"from {low:g} to {high:g}" if math.isfinite(low) and math.isfinite(high)
                else f"of at least {low:g}" if math.isfinite(low) else "")
        raise _fail(where, f"must be a finite number {span}".rstrip())
    return float(value)


def parse(data: bytes) -> dict:
    """The JSON object in ``data``; NaN and Infinity are refused (JSON has neither)."""
    def no_constants(name: str):
        raise _fail("holds", f"{name}, which is not a number")

    try:
        meta = json.loads(data.decode("utf-8"), parse_constant=no_constants)
    except UnicodeDecodeError:
        raise _fail("is", "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise _fail("is", f"not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise _fail("is", "nested too deeply") from None
    if not isinstance(meta, dict):
        raise _fail("is", "not a JSON object")
    return meta


def check_spec(spec: Any) -> dict:
    if not isinstance(spec, dict) or set(spec) != set(SPEC_KEYS):
        raise _fail("'spec'", f"must be an object with exactly {', '.join(SPEC_KEYS)}")
    if not isinstance(spec["task"], str) or spec["task"] not in TASKS:  # a list is no key of TASKS
        raise _fail("'spec.task'", f"must be one of {', '.join(TASKS)}")
    for key, (low, high) in LIMITS.items():
        _whole(spec, key, low, high, "spec.")
    if spec["d_model"] % spec["heads"]:
        raise _fail("'spec.heads'", "must divide 'spec.d_model'")
    if not isinstance(spec["mlp"], bool):
        raise _fail("'spec.mlp'", "must be true or false")
    if spec["positions"] not in ("learned", "sinusoidal"):
        raise _fail("'spec.positions'", "must be learned or sinusoidal")
    return spec


def check_settings(settings: Any) -> dict:
    if not isinstance(settings, dict) or set(settings) != set(SETTING_KEYS):
        raise _fail("'settings'", f"must be an object with exactly {', '.join(SETTING_KEYS)}")
    for key, (low, high) in SETTING_LIMITS.items():
        _whole(settings, key, low, high, "settings.")
    _number(settings["lr"], "'settings.lr'", 0.0, 10.0)
    if settings["lr"] <= 0:
        raise _fail("'settings.lr'", "must be positive")
    _number(settings["weight_decay"], "'settings.weight_decay'", 0.0, 10.0)
    if settings["device"] not in ("auto", "cpu", "cuda"):
        raise _fail("'settings.device'", "must be auto, cpu or cuda")
    return settings


def _rows(meta: dict, key: str, what: str, settings: dict) -> list:
    """The rows under ``key``: at most one per evaluation the settings make (every
    ``eval_every`` steps and at the last), so a crafted file cannot make the window
    draw millions of points."""
    rows, steps = meta.get(key), settings["steps"]
    if not isinstance(rows, list) or len(rows) > min(evaluations(settings), MAX_ROWS):
        raise _fail(f"'{key}'", f"must be a list of {what} rows, one per evaluation "
                    f"(at most {min(evaluations(settings), MAX_ROWS):,})")
    last = 0
    for row in rows:
        if not isinstance(row, list) or not row or not _is_int(row[0]) or not last < row[0] <= steps:
            raise _fail(f"'{key}'", f"must be a list of {what} rows with rising steps up to {steps}")
        last = row[0]
    return rows


def evaluations(settings: dict) -> int:
    """How many evaluations training with ``settings`` makes: one every ``eval_every``
    steps, and one at the last step when it is not one of those."""
    steps, every = settings["steps"], settings["eval_every"]
    return steps // every + (1 if steps % every else 0)


def _same_steps(curve: list, rows: list, key: str) -> None:
    """Every evaluation records its curve point, entropies and scores together: rows at
    other steps would be drawn against the wrong points (or fail to draw at all)."""
    if [r[0] for r in rows] != [r[0] for r in curve]:
        raise _fail(f"'{key}'", "must have one row at each of the steps of 'curve', no more and no fewer")


def _per_head(values: Any, heads: int, where: str, high: float, low: float = 0.0) -> list[float]:
    if not isinstance(values, list) or len(values) != heads:
        raise _fail(where, f"must list one number per head ({heads})")
    return [_number(v, where, low, high) for v in values]


def check(meta: dict) -> dict:
    """``meta`` when it is a saved lab run this program can rebuild; RunSchemaError
    (one sentence) otherwise."""
    if meta.get("format") not in (FORMAT, *OLD_FORMATS):
        raise _fail("is", "not a saved lab run (no lab run 'format')")
    spec = check_spec(meta.get("spec"))
    settings = check_settings(meta.get("settings"))
    heads = spec["heads"] * spec["layers"]
    curve = _rows(meta, "curve", "[step, loss, accuracy]", settings)
    for row in curve:
        if len(row) != 3:
            raise _fail("'curve'", "must be a list of [step, loss, accuracy] rows")
        _number(row[1], "'curve' loss", 0.0)
        _number(row[2], "'curve' accuracy", 0.0, 1.0)
    bits_max = math.log2(2 * spec["n"]) + 1e-6  # no head spreads wider than all its keys
    entropy = _rows(meta, "entropy", "[step, [bits per head]]", settings)
    for row in entropy:
        if len(row) != 2:
            raise _fail("'entropy'", "must be a list of [step, [bits per head]] rows")
        _per_head(row[1], heads, "'entropy' bits", bits_max)
    _same_steps(curve, entropy, "entropy")
    if meta["format"] == FORMAT or "scores" in meta:
        scores = _rows(meta, "scores", "[step, [prefix matching], [previous token]]", settings)
        for row in scores:
            if len(row) != 3:
                raise _fail("'scores'", "must be a list of [step, [prefix matching], [previous token]] rows")
            _per_head(row[1], heads, "'scores' prefix matching", 1.0 + 1e-6)
            _per_head(row[2], heads, "'scores' previous token", 1.0 + 1e-6)
        _same_steps(curve, scores, "scores")
    _number(meta.get("seconds", 0.0), "'seconds'", 0.0)
    if meta["format"] == FORMAT:
        sha = meta.get("weights_sha256")
        if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise _fail("'weights_sha256'", "must be the 64 hexadecimal digits of the weights' SHA-256")
    check_extra(meta.get("extra", {}), heads)
    return meta


def check_extra(extra: Any, heads: int) -> None:
    if not isinstance(extra, dict):
        raise _fail("'extra'", "must be an object")
    ab = extra.get("ablation")
    if ab is not None:
        if not isinstance(ab, dict):
            raise _fail("'extra.ablation'", "must be an object")
        _number(ab.get("base_accuracy"), "'extra.ablation.base_accuracy'", 0.0, 1.0)
        # a removed head may also help: drops run from -1 to 1
        _per_head(ab.get("drops"), heads, "'extra.ablation.drops'", 1.0, -1.0)
    pr = extra.get("pruning")
    if pr is not None:
        order = pr.get("order") if isinstance(pr, dict) else None
        if not isinstance(order, list) or not all(map(_is_int, order)) or sorted(order) != list(range(heads)):
            raise _fail("'extra.pruning.order'", f"must list each head 0..{heads - 1} once")
        for key in ("accuracy", "selection_accuracy"):
            values = pr.get(key, [] if key == "selection_accuracy" else None)
            if not isinstance(values, list) or len(values) not in ((heads + 1,) if key == "accuracy"
                                                                   else (0, heads + 1)):
                raise _fail(f"'extra.pruning.{key}'", f"must list {heads + 1} accuracies")
            for v in values:
                _number(v, f"'extra.pruning.{key}'", 0.0, 1.0)
