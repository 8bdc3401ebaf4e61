"""Numbers about a trained layer's heads, as plain Python and numpy for the CLI and the views.

``heads_report`` builds the JSON of ``mha-explorer heads`` (layers 1-based, heads
0-based, as the window labels them):

    {"weights": "minilm-l6", "layer": L, "token_ids": [...], "tokens": [...],
     "heads": [{"head": h, "weights": [[T×T]], "entropy_bits": x,
                "patterns": {"previous_token": s, "next_token": s, "self": s,
                             "first_token": s, "sep": s}}, ...],
     "ablation": [{"head": h, "embedding_cosine": c}, ...]}   # only with ablate, most
                                                              # consequential head first
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mha_explorer.core.errors import ConfigError, check_cancel
from mha_explorer.core.models import patterns
from mha_explorer.core.models.minilm import info
from mha_explorer.core.models.minilm.files import TrainedWeightsError, is_available

REPORT_PATTERNS = ("previous_token", "next_token", "self", "first_token", "sep")
DIGITS = 6  # decimals kept in the JSON; finer than any map's colour


@dataclass(frozen=True)
class SentenceMaps:
    """Every head's attention map for one sentence, for the views (numpy only)."""

    tokens: tuple[str, ...]
    maps: np.ndarray  # [layers, H, T, T] float32; maps[L - 1, h] is layer L's head h


def check_layer(layer: Any) -> None:
    if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= info.N_LAYERS:
        raise ConfigError("layer", f"MiniLM-L6 has layers 1 to {info.N_LAYERS}, got {layer}",
                          [{"layer": 1}])


def _prepare(sentence: str):
    """The loaded model, the sentence's word pieces and their ids; ConfigError on bad input."""
    if not sentence.strip():
        raise ConfigError("tokens", "the sentence is empty: type a few words")
    ok, message = is_available()
    if not ok:
        raise TrainedWeightsError(message)
    from mha_explorer.core.models.minilm.model import load_model  # torch, only once the input is good
    from mha_explorer.core.models.minilm.tokenizer import sentence_pieces, token_ids

    pieces = sentence_pieces(sentence)
    return load_model(), pieces, token_ids(pieces)


def sentence_maps(sentence: str) -> SentenceMaps:
    """All layers' maps for ``sentence`` (the 6 × 12 grid of thumbnails)."""
    model, pieces, ids = _prepare(sentence)
    return _all_maps(model, pieces, ids)


def pieces_maps(pieces: tuple[str, ...], cancel: Callable[[], bool] | None = None,
                each_layer: Callable[[int, int], None] | None = None) -> SentenceMaps:
    """All layers' maps for word pieces already split (a config's ``tokens``); Cancelled,
    when ``cancel`` says so, before the model is loaded and between its layers.
    ``each_layer(done, of)`` hears of each layer as it is read."""
    from mha_explorer.core.models.minilm.model import load_model
    from mha_explorer.core.models.minilm.tokenizer import token_ids

    check_cancel(cancel)
    model = load_model(cancel=cancel)  # hashing its 90 MB hears cancel too
    check_cancel(cancel)
    return _all_maps(model, tuple(pieces), token_ids(pieces), cancel, each_layer)


def _all_maps(model, pieces: tuple[str, ...], ids: list[int], cancel=None,
              each_layer: Callable[[int, int], None] | None = None) -> SentenceMaps:
    import torch

    run, probs = model.forward(ids), []
    for layer in range(info.N_LAYERS):
        check_cancel(cancel)
        probs.append(run.layer(layer).probs)  # [1, H, T, T]
        if each_layer is not None:
            each_layer(layer + 1, info.N_LAYERS)
    maps = torch.cat(probs)  # [layers, H, T, T]
    return SentenceMaps(pieces, maps.float().numpy())  # cat made a fresh tensor


def grid_badges(found: SentenceMaps) -> list[list[str]]:
    """badges[l][h] such as "prev 0.98" for every map of ``found`` (the grid's labels)."""
    return [[patterns.badge(scores) for scores in patterns.head_scores(layer_maps, found.tokens)]
            for layer_maps in found.maps]


def ablation_rows(layer: int, pieces: tuple[str, ...],
                  cancel: Callable[[], bool] | None = None) -> list[dict[str, float]]:
    """Each head of ``layer`` switched off, as dicts for the ranking view, most consequential first."""
    import dataclasses

    from mha_explorer.core.models.minilm.ablation import ablate_each_head
    from mha_explorer.core.models.minilm.model import load_model
    from mha_explorer.core.models.minilm.tokenizer import token_ids

    check_layer(layer)
    check_cancel(cancel)
    model = load_model(cancel=cancel)  # hashing its 90 MB hears cancel too
    check_cancel(cancel)
    return [dataclasses.asdict(r) for r in ablate_each_head(model, token_ids(pieces), layer)]


def _round(x: float) -> float:
    return round(float(x), DIGITS)


def heads_report(layer: int, sentence: str, ablate: bool = False) -> dict[str, Any]:
    """The JSON-ready description of layer ``layer``'s heads on ``sentence`` (see module doc)."""
    check_layer(layer)
    model, pieces, ids = _prepare(sentence)
    probs = model.forward(ids).layer(layer - 1).probs[0].float().numpy()  # [H, T, T]
    table = patterns.scores(probs, pieces)
    entropy = patterns.entropy_bits(probs)  # [H]
    heads = [{
        "head": h,
        "weights": np.round(probs[h].astype(np.float64), DIGITS).tolist(),
        "entropy_bits": _round(entropy[h]),
        "patterns": {name: _round(table[name][h]) for name in REPORT_PATTERNS},
    } for h in range(probs.shape[0])]
    report: dict[str, Any] = {"weights": info.WEIGHTS_NAME, "layer": layer, "token_ids": list(ids),
                              "tokens": list(pieces), "heads": heads}
    if ablate:
        from mha_explorer.core.models.minilm.ablation import ablate_each_head

        report["ablation"] = [{"head": r.head, "embedding_cosine": _round(r.embedding_cosine)}
                              for r in ablate_each_head(model, ids, layer)]
    return report
