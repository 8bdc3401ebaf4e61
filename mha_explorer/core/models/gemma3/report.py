"""Gemma 3 270M's numbers for the command line and the views, as plain Python and numpy.

``heads_report(layer, text)`` is the JSON of ``mha-explorer heads --weights gemma3-270m``
(layers 1-based, heads 0-based, as the window labels them):

    {"weights": "gemma3-270m", "layer": L, "layer_kind": "local", "window": 512,
     "rope_base": 10000.0, "scale": 0.0625, "token_ids": [2, ...], "tokens": ["<bos>", ...],
     "heads": [{"head": h, "weights": [[T×T]], "entropy_bits": x,
                "patterns": {"previous_token": s, "first_token": s, "self": s,
                             "induction": s or null}}, ...]}

``decode_report(text, steps)`` is the JSON of ``mha-explorer decode --weights gemma3-270m``:

    {"weights": "gemma3-270m", "prompt_tokens": P, "token_ids": [P prompt ids, N new ids],
     "text": "prompt and continuation, no <bos>", "prefill_seconds": s, "stopped": "steps" | "eos",
     "steps": [{"step": 1, "input_token_id": i, "position": p, "token_id": t, "text": " Paris",
                "cache_tokens": [18 per layer], "cache_bytes": [18 per layer],
                "model_cache_bytes": b, "seconds": s,
                "attention": {"layer": L, "key_positions": [...], "weights": [[H × S]]}}, ...]}

``attention`` appears when a layer is asked for. Each function checks its input
first (ConfigError, one line, nothing loaded) and the extra (GemmaFilesError).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models import head_patterns
from mha_explorer.core.models.gemma3 import files
from mha_explorer.core.models.gemma3.description import GEMMA3_270M
from mha_explorer.core.models.progress import Cancel, Progress
from mha_explorer.core.models.prompt_memory import check_prompt

D = GEMMA3_270M
DIGITS = 6  # decimals kept in the JSON; finer than any map's colour
HEADS_MAX_TOKENS = 1024  # the JSON holds 4 maps of T×T numbers: about 40 MB at this length
DECODE_MAX_STEPS = 512


@dataclass(frozen=True)
class TextMaps:
    """Every head's attention map for one text, for the views (numpy only)."""

    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    maps: np.ndarray  # [layers, H, T, T] float32; maps[L - 1, h] is layer L's head h


def check_layer(layer: Any) -> None:
    if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= D.layers:
        fix = min(max(layer, 1), D.layers) if isinstance(layer, int) and not isinstance(layer, bool) else 1
        raise ConfigError("layer", f"{D.name} has layers 1 to {D.layers}, got {layer!r}", [{"layer": fix}])


def _check_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("tokens", "the text is empty: type a few words")
    return text


def _model(progress: Progress | None, cancel: Cancel | None):
    ok, message = files.is_available()
    if not ok:
        raise files.GemmaFilesError(message)
    from mha_explorer.core.models.gemma3.model import load_model  # torch, once the input is good

    return load_model(progress, cancel)


def _encode(model, text: str, cap: int) -> tuple[list[int], list[str]]:
    ids, pieces = model.encode(text)
    if len(ids) > cap:
        raise ConfigError("tokens", f"the text is {len(ids):,} tokens long (with <bos>); this reads at "
                          f"most {cap:,}; shorten it")
    return ids, pieces


def _round(x: float) -> float:
    return round(float(x), DIGITS)


def text_maps(text: str, progress: Progress | None = None, cancel: Cancel | None = None) -> TextMaps:
    """All 18 × 4 maps for ``text`` (the grid of thumbnails)."""
    _check_text(text)
    model = _model(progress, cancel)
    ids, pieces = _encode(model, text, HEADS_MAX_TOKENS)
    maps = model.attention_maps(ids, cancel)  # [layers, H, T, T]
    return TextMaps(tuple(ids), tuple(pieces), maps.numpy())


def head_rows(maps: np.ndarray, ids: list[int]) -> list[dict[str, Any]]:
    """The heads of one layer's maps [H, T, T] as JSON-ready dicts."""
    table = head_patterns.pattern_scores(maps, ids)
    entropy = head_patterns.entropy_bits(maps)  # [H]
    return [{
        "head": h,
        "weights": np.round(maps[h].astype(np.float64), DIGITS).tolist(),
        "entropy_bits": _round(entropy[h]),
        "patterns": {name: None if table[name] is None else _round(table[name][h])
                     for name in head_patterns.PATTERN_NAMES},
    } for h in range(maps.shape[0])]


def heads_report(layer: int, text: str, progress: Progress | None = None,
                 cancel: Cancel | None = None, ablate: bool = False) -> dict[str, Any]:
    """The JSON-ready description of layer ``layer``'s heads on ``text`` (see the module doc)."""
    if ablate:
        raise ConfigError("ablate", f"switching heads off is measured on an encoder's sentence embedding; "
                          f"{D.name} is a decoder: leave --ablate out")
    check_layer(layer)
    _check_text(text)
    model = _model(progress, cancel)
    ids, pieces = _encode(model, text, HEADS_MAX_TOKENS)
    probs = model.run(ids).layer(layer, cancel).probs[0].numpy()  # [H, T, T]
    return {"weights": D.key, "layer": layer, "layer_kind": D.layer_kind(layer),
            "window": D.layer_window(layer), "rope_base": D.rope_base(layer), "scale": D.scale,
            "token_ids": ids, "tokens": pieces, "heads": head_rows(probs, ids)}


def decode_report(text: str, steps: int, attention_layer: int | None = None,
                  progress: Progress | None = None, cancel: Cancel | None = None,
                  on_step: Callable[[Any], None] | None = None, budget: int | None = None) -> dict[str, Any]:
    """Greedy generation of ``steps`` tokens after ``text`` (<bos> put first), as JSON;
    ``on_step`` sees each ``GenerationStep`` as it is made. ``budget``: the bytes the
    prompt's pass may take (the memory budget); a longer prompt is a ConfigError."""
    _check_text(text)
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= DECODE_MAX_STEPS:
        fix = [{"steps": min(max(steps, 1), DECODE_MAX_STEPS)}] if isinstance(steps, int) else []
        raise ConfigError("steps", f"steps must be a whole number from 1 to {DECODE_MAX_STEPS}, "
                          f"got {steps!r}", fix)
    if attention_layer is not None:
        check_layer(attention_layer)
    model = _model(progress, cancel)
    ids, _ = _encode(model, text, D.max_tokens - steps)
    if budget is not None:
        check_prompt(D, len(ids), steps, budget)
    from mha_explorer.core.models.gemma3.generate import generate

    run = generate(model, ids, steps, attention=attention_layer, on_step=on_step, cancel=cancel)
    rows = []
    for s in run.steps:
        row: dict[str, Any] = {
            "step": s.step, "input_token_id": s.input_token_id, "position": s.position,
            "token_id": s.token_id, "text": s.text, "cache_tokens": list(s.cache_tokens),
            "cache_bytes": list(s.cache_bytes), "model_cache_bytes": s.model_cache_bytes,
            "seconds": round(s.seconds, 4)}
        if attention_layer is not None:
            found = s.attention[attention_layer]
            row["attention"] = {"layer": attention_layer, "key_positions": found.key_positions.tolist(),
                                "weights": np.round(found.weights.astype(np.float64), DIGITS).tolist()}
        rows.append(row)
    return {"weights": D.key, "prompt_tokens": len(ids), "token_ids": run.token_ids,
            "text": model.tokenizer.decode(run.token_ids[1:]),  # the <bos> is not text
            "prefill_seconds": round(run.prefill_seconds, 4),
            "stopped": run.stopped, "steps": rows}


def induction_report(n: int = 50, seed: int = 0, progress: Progress | None = None,
                     cancel: Cancel | None = None) -> dict[str, Any]:
    """The repeated-random-tokens demonstration as JSON: the loss on each copy, every head's
    prefix-matching score [layers][H] and the strongest head."""
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 1000:
        raise ConfigError("n", f"n must be a whole number from 2 to 1000, got {n!r}")
    model = _model(progress, cancel)
    from mha_explorer.core.models.gemma3.induction_demo import repeat_demo

    demo = repeat_demo(model, n, seed, cancel)
    layer, head, score = demo.best_head()
    return {"weights": D.key, "n": n, "seed": seed, "token_ids": list(demo.token_ids),
            "loss_first_copy": _round(demo.loss_first), "loss_second_copy": _round(demo.loss_second),
            "prefix_matching": np.round(demo.prefix_matching.astype(np.float64), DIGITS).tolist(),
            "best_head": {"layer": layer, "head": head, "score": _round(score)}}


# The Layers dock's view of the model (the same names every model's report offers) --------


def pieces_maps(pieces: tuple[str, ...], cancel: Cancel | None = None,
                each_layer: Callable[[int, int], None] | None = None) -> TextMaps:
    """All 18 × 4 maps for a config's tokens (the model's own pieces); ``each_layer(done, of)``
    hears of each layer as it is read."""
    from mha_explorer.core.models.gemma3.pieces import token_ids

    model = _model(None, cancel)
    ids = token_ids(pieces)
    return TextMaps(tuple(ids), tuple(pieces), model.attention_maps(ids, cancel, each_layer).numpy())


def grid_badges(found: TextMaps) -> list[list[str]]:
    """badges[l][h] such as "prev 0.98" or "ind 0.85": each head's strongest decoder pattern."""
    badges = []
    for layer_maps in found.maps:
        table = head_patterns.pattern_scores(layer_maps, list(found.token_ids))
        shown = {name: values for name, values in table.items() if values is not None}
        layer_badges = []
        for h in range(layer_maps.shape[0]):
            name = max(shown, key=lambda n: shown[n][h])
            layer_badges.append(f"{head_patterns.SHORT_NAMES.get(name, name)} {shown[name][h]:.2f}")
        badges.append(layer_badges)
    return badges


def ablation_rows(layer: int, pieces: tuple[str, ...],
                  cancel: Cancel | None = None) -> list[dict[str, float]]:
    raise ConfigError("ablate", f"switching heads off is measured on an encoder's sentence embedding; "
                      f"{D.name} is a decoder, so its heads are ranked by their patterns instead")
