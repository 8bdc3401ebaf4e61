"""A saved run's model.safetensors, checked from its header before any tensor is read
(no torch): the tensors, shapes and dtype must be exactly those of the model that
run.json declares, their bytes must tile the file, and the model must fit the
memory budget.

The safetensors layout: 8 bytes (little-endian u64) giving the header's length, the
header (JSON: name -> dtype, shape, [begin, end) in the data), then the data.
"""

from __future__ import annotations

import json
import math

from mha_explorer.core.lab.files import RunFileError
from mha_explorer.core.plan.memory import default_budget
from mha_explorer.core.units import format_bytes

WEIGHTS_FILE = "model.safetensors"
HEADER_LIMIT = 1 << 20  # bytes of JSON header; a lab model's is a few kilobytes
FLOAT_BYTES = 4  # saved as float32


def expected_tensors(spec: dict) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor a model of ``spec`` saves (its state dict)."""
    D, L = spec["d_model"], spec["layers"]
    out: dict[str, tuple[int, ...]] = {"embed.weight": (spec["vocab"] + 1, D)}
    if spec["positions"] == "learned":
        out["pos"] = (2 * spec["n"], D)
    for i in range(L):
        for p in "qkvo":
            out[f"attn.{i}.{p}.weight"], out[f"attn.{i}.{p}.bias"] = (D, D), (D,)
    if spec["mlp"]:
        for i in range(L):
            out[f"mlp.{i}.0.weight"], out[f"mlp.{i}.0.bias"] = (2 * D, D), (2 * D,)
            out[f"mlp.{i}.2.weight"], out[f"mlp.{i}.2.bias"] = (D, 2 * D), (D,)
    out["readout.weight"], out["readout.bias"] = (spec["vocab"], D), (spec["vocab"],)
    return out


def load_bytes(spec: dict, settings: dict) -> int:
    """Peak bytes to load a run and replay its evaluation batch: the weights about three
    times over (file mapping, model, copy), plus the activations and maps of the
    evaluation batch through every layer."""
    params = sum(math.prod(s) for s in expected_tensors(spec).values())
    D, L, H, T = spec["d_model"], spec["layers"], spec["heads"], 2 * spec["n"]
    per_sequence = T * (D * (4 * L + 3) + (2 * D * L if spec["mlp"] else 0) + 2 * H * T * L)
    return FLOAT_BYTES * (3 * params + settings["eval_size"] * per_sequence)


def check_budget(spec: dict, settings: dict, budget: int | None = None) -> None:
    need = load_bytes(spec, settings)
    budget = default_budget(on_bad_setting=lambda _err: None) if budget is None else budget
    if need > budget:
        raise RunFileError(f"run.json declares a model that needs about {format_bytes(need)} to open, "
                           f"more than the memory budget of {format_bytes(budget)}")


def check_header(head: bytes, read_header, file_size: int, spec: dict) -> dict:
    """The parsed header, after checking it against ``spec``. ``head`` is the first 8
    bytes; ``read_header(length)`` returns the header's bytes."""
    name = WEIGHTS_FILE
    if len(head) < 8:
        raise RunFileError(f"{name} is too short to hold tensors")
    length = int.from_bytes(head[:8], "little")
    if not 2 <= length <= min(HEADER_LIMIT, file_size - 8):
        raise RunFileError(f"{name} declares a header of {length:,} bytes, which does not fit the file")
    try:
        header = json.loads(read_header(length).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise RunFileError(f"{name} has a damaged header (not JSON)") from None
    if not isinstance(header, dict):
        raise RunFileError(f"{name} has a damaged header (not a JSON object)")
    header.pop("__metadata__", None)
    expected = expected_tensors(spec)
    missing = sorted(set(expected) - set(header))
    extra = sorted(set(header) - set(expected))
    if missing or extra:
        what = f"lacks {missing[0]!r}" if missing else f"holds {extra[0][:40]!r}, which"
        raise RunFileError(f"{name} {what} the model in run.json {'needs' if missing else 'does not have'}")
    spans = []
    for key, shape in expected.items():
        entry = header[key]
        if not isinstance(entry, dict) or entry.get("dtype") != "F32":
            raise RunFileError(f"{name}: {key!r} must be float32 (F32)")
        if entry.get("shape") != list(shape):
            raise RunFileError(f"{name}: {key!r} has shape {str(entry.get('shape'))[:40]}, but run.json's "
                               f"model needs {list(shape)}")
        offsets = entry.get("data_offsets")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
                or offsets[1] - offsets[0] != FLOAT_BYTES * math.prod(shape)):
            raise RunFileError(f"{name}: {key!r} has data offsets that do not match its shape")
        spans.append(tuple(offsets))
    spans.sort()
    end = 0
    for begin, stop in spans:  # the tensors must tile the data, no gaps, no overlaps
        if begin != end:
            raise RunFileError(f"{name} has tensors that overlap or leave gaps")
        end = stop
    if 8 + length + end != file_size:
        raise RunFileError(f"{name} is {file_size:,} bytes, but its tensors make {8 + length + end:,}")
    return header
