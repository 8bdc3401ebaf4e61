"""A decoder's numbers for the command line and the views, as plain Python and numpy (any
decoder; the examples are Gemma 3 270M's).

``heads_report(layer, text)`` is the JSON of ``mha-explorer heads --weights KEY``
(layers 1-based, heads 0-based, as the window labels them):

    {"weights": "gemma3-270m", "layer": L, "layer_kind": "local", "window": 512,
     "rope_base": 10000.0, "scale": 0.0625, "token_ids": [2, ...], "tokens": ["<bos>", ...],
     "heads": [{"head": h, "weights": [[T×T]], "entropy_bits": x,
                "patterns": {"previous_token": s, "first_token": s, "self": s,
                             "induction": s or null}}, ...]}

``decode_report(text, steps)`` is the JSON of ``mha-explorer decode --weights KEY``:

    {"weights": "gemma3-270m", "prompt_tokens": P, "token_ids": [P prompt ids, N new ids],
     "text": "prompt and continuation, no <bos>", "prefill_seconds": s, "stopped": "steps" | "eos",
     "steps": [{"step": 1, "input_token_id": i, "position": p, "token_id": t, "text": " Paris",
                "cache_tokens": [one per layer], "cache_bytes": [one per layer],
                "model_cache_bytes": b, "seconds": s,
                "attention": {"layer": L, "key_positions": [...], "weights": [[H × S]]}}, ...]}

``attention`` appears when a layer is asked for. Each function checks its input
first (ConfigError, one line, nothing loaded), then loads the model (the model's error,
with the fix, when its package is missing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models import head_patterns
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.progress import Cancel, Progress
from mha_explorer.core.models.prompt_memory import check_prompt
from mha_explorer.core.models.texts import check_text as _check_text
from mha_explorer.core.models.texts import ids_of_pieces

DIGITS = 6  # decimals kept in the JSON; finer than any map's colour
HEADS_MAX_TOKENS = 1024  # the JSON holds H maps of T×T numbers: about 40 MB for Gemma at this length
DECODE_MAX_STEPS = 512
MAX_REPEAT = 1000


@dataclass(frozen=True)
class TextMaps:
    """Every head's attention map for one text, for the views (numpy only)."""

    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    maps: np.ndarray  # [layers, H, T, T] float32; maps[L - 1, h] is layer L's head h


def _round(x: float) -> float:
    return round(float(x), DIGITS)


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


class DecoderReport:
    """The report functions of one decoder; ``load(progress, cancel)`` gives its loaded model
    (checking its package first)."""

    def __init__(self, description: ModelDescription, load: Callable[..., Any]):
        self.d = description
        self._load = load

    # -- input ---------------------------------------------------------------------------------
    def check_layer(self, layer: Any) -> None:
        d = self.d
        if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= d.layers:
            whole = isinstance(layer, int) and not isinstance(layer, bool)
            fix = min(max(layer, 1), d.layers) if whole else 1
            raise ConfigError("layer", f"{d.name} has layers 1 to {d.layers}, got {layer!r}",
                              [{"layer": fix}])

    def _encode(self, model, text: str, cap: int) -> tuple[list[int], list[str]]:
        ids, pieces = model.encode(text)
        if len(ids) > cap:
            first = f" (with {self.d.first_token})" if self.d.decoder.bos_id is not None else ""
            raise ConfigError("tokens", f"the text is {len(ids):,} tokens long{first}; this reads at "
                              f"most {cap:,}; shorten it")
        return ids, pieces

    # -- reports -------------------------------------------------------------------------------
    def text_maps(self, text: str, progress: Progress | None = None,
                  cancel: Cancel | None = None) -> TextMaps:
        """Every layer's maps for ``text`` (the grid of thumbnails)."""
        _check_text(text)
        model = self._load(progress, cancel)
        ids, pieces = self._encode(model, text, HEADS_MAX_TOKENS)
        maps = model.attention_maps(ids, cancel)  # [layers, H, T, T]
        return TextMaps(tuple(ids), tuple(pieces), maps.numpy())

    def heads_report(self, layer: int, text: str, progress: Progress | None = None,
                     cancel: Cancel | None = None, ablate: bool = False) -> dict[str, Any]:
        """The JSON-ready description of layer ``layer``'s heads on ``text`` (see the module doc)."""
        d = self.d
        if ablate:
            raise ConfigError("ablate", "switching heads off is measured on an encoder's sentence "
                              f"embedding; {d.name} is a decoder: leave --ablate out")
        self.check_layer(layer)
        _check_text(text)
        model = self._load(progress, cancel)
        ids, pieces = self._encode(model, text, HEADS_MAX_TOKENS)
        probs = model.run(ids).layer(layer, cancel).probs[0].numpy()  # [H, T, T]
        return {"weights": d.key, "layer": layer, "layer_kind": d.layer_kind(layer),
                "window": d.layer_window(layer), "rope_base": d.rope_base(layer), "scale": d.scale,
                "token_ids": ids, "tokens": pieces, "heads": head_rows(probs, ids)}

    def decode_report(self, text: str, steps: int, attention_layer: int | None = None,
                      progress: Progress | None = None, cancel: Cancel | None = None,
                      on_step: Callable[[Any], None] | None = None, budget: int | None = None
                      ) -> dict[str, Any]:
        """Greedy generation of ``steps`` tokens after ``text`` (the model's first token put
        first), as JSON; ``on_step`` sees each ``GenerationStep`` as it is made. ``budget``: the
        bytes the prompt's pass may take (the memory budget); a longer prompt is a ConfigError."""
        d = self.d
        _check_text(text)
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= DECODE_MAX_STEPS:
            fix = [{"steps": min(max(steps, 1), DECODE_MAX_STEPS)}] if isinstance(steps, int) else []
            raise ConfigError("steps", f"steps must be a whole number from 1 to {DECODE_MAX_STEPS}, "
                              f"got {steps!r}", fix)
        if attention_layer is not None:
            self.check_layer(attention_layer)
        model = self._load(progress, cancel)
        ids, _ = self._encode(model, text, d.max_tokens - steps)
        if budget is not None:
            check_prompt(d, len(ids), steps, budget)
        from mha_explorer.core.models.decoder.generate import generate

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
        text_ids = run.token_ids[1:] if d.decoder.bos_id is not None else run.token_ids  # <bos> is no text
        return {"weights": d.key, "prompt_tokens": len(ids), "token_ids": run.token_ids,
                "text": model.tokenizer.decode(text_ids), "prefill_seconds": round(run.prefill_seconds, 4),
                "stopped": run.stopped, "steps": rows}

    def induction_report(self, n: int = 50, seed: int = 0, progress: Progress | None = None,
                         cancel: Cancel | None = None) -> dict[str, Any]:
        """The repeated-random-tokens demonstration as JSON: the loss on each copy, every head's
        prefix-matching score [layers][H] and the strongest head."""
        if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= MAX_REPEAT:
            raise ConfigError("n", f"n must be a whole number from 2 to {MAX_REPEAT}, got {n!r}")
        model = self._load(progress, cancel)
        from mha_explorer.core.models.decoder.induction_demo import repeat_demo

        demo = repeat_demo(model, n, seed, cancel)
        layer, head, score = demo.best_head()
        return {"weights": self.d.key, "n": n, "seed": seed, "token_ids": list(demo.token_ids),
                "loss_first_copy": _round(demo.loss_first), "loss_second_copy": _round(demo.loss_second),
                "prefix_matching": np.round(demo.prefix_matching.astype(np.float64), DIGITS).tolist(),
                "best_head": {"layer": layer, "head": head, "score": _round(score)}}

    # -- the Layers dock's view of the model (the same names every model's report offers) ------
    def pieces_maps(self, pieces: tuple[str, ...], cancel: Cancel | None = None,
                    each_layer: Callable[[int, int], None] | None = None) -> TextMaps:
        """Every layer's maps for a config's tokens (the model's own pieces); ``each_layer(done,
        of)`` hears of each layer as it is read."""
        model = self._load(None, cancel)
        ids = token_ids_of(model.tokenizer, pieces, self.d.name)
        return TextMaps(tuple(ids), tuple(pieces), model.attention_maps(ids, cancel, each_layer).numpy())

    grid_badges = staticmethod(grid_badges)

    def ablation_rows(self, layer: int, pieces: tuple[str, ...],
                      cancel: Cancel | None = None) -> list[dict[str, float]]:
        raise ConfigError("ablate", "switching heads off is measured on an encoder's sentence embedding; "
                          f"{self.d.name} is a decoder, so its heads are ranked by their patterns instead")


def token_ids_of(tokenizer, pieces, name: str) -> list[int]:
    """The ids of a model's labels; ConfigError naming the first one it does not know."""
    return ids_of_pieces(tokenizer.token_id, pieces,
                         f"{name}'s tokens; type the text so the model's tokenizer splits it")
