"""The causal tools as the command line and the window ask for them: input checked first (one
``ConfigError`` a person can act on, nothing loaded), then the model loaded through the shared
decoder core's kit (``decoder.kit``), then the work, with progress and cancel. Results are typed values
of numpy arrays and Python numbers; ``*_json`` turn them into the commands' JSON (layers 1-based,
heads 0-based):

    heads --repeat N --seed S --ablate:
      {"weights", "token_ids", "repeat": {"length", "seed", "loss_first", "loss_second"},
       "ablated_to": "zero" | "mean",
       "ablation": [{"layer", "head", "loss_second", "induction"}, ...]}
    patch: {"weights", "token_ids_clean", "token_ids_corrupt", "answer_id", "wrong_id",
            "logit_diff_clean", "logit_diff_corrupt", "heads": [{"layer", "head", "recovered"}, ...]}
    lens: {"weights", "token_ids", "layers": [{"after", "top_ids", "top_probs"}, ...],
           "attribution": {"position", "token_id", "logit", "components": [{"name", "value"}],
                           "sum", "tolerance"}}

No torch is imported here until the input is good.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS, model_named
from mha_explorer.core.models.causal.results import (
    ATTRIBUTION_TOLERANCE,
    LensResult,
    PatchResult,
    RepeatAblation,
)
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.progress import Cancel, Progress, Share

MAX_REPEAT = 256  # random tokens shown twice: every head reruns the later layers over 2N + 1 tokens
MAX_TOKENS = 512  # a prompt of the lens or of patching
DIGITS = 6  # decimals kept in the JSON
LOAD_SHARE = 0.1  # of a job's progress bar, for loading the model (at once when it is loaded)


def decoder(model_key: str) -> ModelDescription:
    """The catalogue's decoder named ``model_key``; ConfigError naming the decoders otherwise."""
    model = model_named(model_key)
    decoders = " or ".join(m.key for m in MODELS.values() if m.causal)
    if model is None:
        raise ConfigError("weights", f"no trained model is called {model_key!r}; use {decoders}")
    if not model.causal:
        raise ConfigError("weights", f"{model.name} is an encoder: it predicts no next token, so it has no "
                          f"loss or logit to follow; use {decoders}")
    return model


def _load(model: ModelDescription, progress: Progress | None, cancel: Cancel | None):
    """The decoder's forward pass, loaded once per process by its kit (any decoder alike)."""
    ok, message = runtime.is_available(model)
    if not ok:
        raise ConfigError("weights", message)
    from mha_explorer.core.models.decoder.kit import kit_for

    return kit_for(model).load_model(progress, cancel)


def _text(text: Any, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(what, f"the {what} is empty: type a few words")
    return text


def _encode(model, text: str, what: str) -> tuple[list[int], list[str]]:
    ids, pieces = model.encode(text)
    if len(ids) > MAX_TOKENS:
        raise ConfigError(what, f"the {what} is {len(ids):,} tokens long; this reads at most {MAX_TOKENS:,}; "
                          "shorten it")
    return ids, pieces


def _quoted(pieces: Sequence[str]) -> str:
    return " ".join(repr(p) for p in pieces)


def single_token(model, text: Any, what: str) -> int:
    """The one token ``text`` is (no <bos>); ConfigError naming its pieces when it is not one."""
    if not isinstance(text, str) or not text:
        raise ConfigError(what, f"the {what} is empty: give a word that is one token, such as ' Paris'")
    ids, pieces = model.encode(text, bos=False)
    if len(ids) != 1:
        raise ConfigError(what, f"the {what} {text!r} is {len(ids)} tokens ({_quoted(pieces)}); a logit "
                          "difference compares two single tokens: give a word the tokenizer keeps whole")
    return ids[0]


def same_length(clean: tuple[list[int], list[str]], corrupt: tuple[list[int], list[str]]) -> None:
    """ConfigError naming where two prompts' tokens part, when their lengths differ."""
    (a, pa), (b, pb) = clean, corrupt
    if len(a) == len(b):
        return
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    raise ConfigError("corrupt", f"the clean prompt is {len(a)} tokens and the corrupted one {len(b)}; "
                      f"a head is patched position by position, so they must be equally long. From token "
                      f"{at + 1} the clean one reads {_quoted(pa[at:at + 4]) or 'nothing'}, the corrupted "
                      f"one {_quoted(pb[at:at + 4]) or 'nothing'}")


def token_texts(model, ids) -> list[str]:
    """Each token's own text (the tokenizer's decoding of it alone), or its label where that text
    cannot stand alone: a lone byte of a longer character decodes to "�" and a control character
    to nothing visible, so such a top token shows as "<0xE2>" or "\\n"."""
    found = []
    for i in ids:
        text = model.tokenizer.token_text(int(i))
        found.append(text if text.isprintable() and "\ufffd" not in text else model.tokenizer.label(int(i)))
    return found


def _work(model, total: float, share: Share, cancel: Cancel | None):
    from mha_explorer.core.models.causal.stream import Work  # torch

    return Work(total, share.part(LOAD_SHARE, 1.0), cancel)


# -- the three tools ------------------------------------------------------------------------------


def repeat_ablation(model_key: str, n: int, seed: int = 0, ablate: bool = True, mean: bool = False,
                    progress: Progress | None = None, cancel: Cancel | None = None) -> RepeatAblation:
    """Random tokens shown twice: the loss on each copy and, with ``ablate``, the second copy's
    loss with each head switched off. The tokens are those of the model's induction
    demonstration for ``seed``, so every head's prefix-matching score stands beside its effect."""
    desc = decoder(model_key)
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= MAX_REPEAT:
        whole = isinstance(n, int) and not isinstance(n, bool)
        fix = [{"repeat": min(max(n, 2), MAX_REPEAT)}] if whole else []
        raise ConfigError("repeat", f"the repeated tokens must number from 2 to {MAX_REPEAT}, got {n!r}", fix)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError("seed", f"the seed must be a whole number from 0, got {seed!r}")
    share = Share(progress)
    model = _load(desc, share.part(0.0, LOAD_SHARE), cancel)
    demo = runtime.part(desc, "report").induction_report(n, seed, cancel=cancel)
    ids = demo["token_ids"]
    from mha_explorer.core.models.causal import ablation, readout, stream  # torch

    first, second = ablation.repeat_positions(n, len(ids))
    total = (stream.layer_cost(model, 1, len(ids)) * desc.layers + readout.read_cost(model, 2 * (n - 1))
             + (ablation.ablation_cost(model, len(ids), n - 1) if ablate else 0))
    work = _work(model, total, share, cancel)
    work.text = "reading the repeated tokens through every layer…"
    rec = stream.record(model, ids, work)
    losses = ablation.position_losses(model, rec.final, ids, first + second, work)[0]  # [2(n - 1)]
    ablated = ablation.ablate_heads(model, rec, second, mean, work) if ablate else None
    return RepeatAblation(desc.key, tuple(ids), n, seed, mean, float(losses[:n - 1].mean()),
                          float(losses[n - 1:].mean()), ablated,
                          np.asarray(demo["prefix_matching"], dtype=np.float64), _kinds(desc))


def patch(model_key: str, clean: str, corrupt: str, answer: str, wrong: str,
          progress: Progress | None = None, cancel: Cancel | None = None) -> PatchResult:
    """Every head patched from the run of ``clean`` into the run of ``corrupt``: the fraction
    of the logit difference ``answer`` − ``wrong`` at the last position it recovers."""
    desc = decoder(model_key)
    _text(clean, "clean prompt")
    _text(corrupt, "corrupted prompt")
    share = Share(progress)
    model = _load(desc, share.part(0.0, LOAD_SHARE), cancel)
    clean_enc = _encode(model, clean, "clean prompt")
    corrupt_enc = _encode(model, corrupt, "corrupted prompt")
    answer_id, wrong_id = single_token(model, answer, "answer"), single_token(model, wrong, "wrong answer")
    if answer_id == wrong_id:
        raise ConfigError("wrong answer", f"the answer and the wrong answer are the same token ({answer!r}); "
                          "the logit difference compares two different ones")
    same_length(clean_enc, corrupt_enc)
    from mha_explorer.core.models.causal import patching, stream  # torch

    T = len(clean_enc[0])
    work = _work(model, 2 * stream.layer_cost(model, 1, T) * desc.layers + patching.patching_cost(model, T),
                 share, cancel)
    work.text = "reading both prompts through every layer…"
    clean_run = stream.record(model, clean_enc[0], work)
    corrupt_run = stream.record(model, corrupt_enc[0], work)
    found = patching.patch_heads(model, clean_run, corrupt_run, answer_id, wrong_id, work)
    if found.logit_diff_clean == found.logit_diff_corrupt:
        raise ConfigError("corrupt", "both prompts give the same logit difference, so there is nothing to "
                          "recover: make the corrupted prompt change the answer")
    return PatchResult(desc.key, tuple(clean_enc[0]), tuple(corrupt_enc[0]), tuple(clean_enc[1]),
                       tuple(corrupt_enc[1]), answer_id, wrong_id, found.logit_diff_clean,
                       found.logit_diff_corrupt, found.recovered, _kinds(desc))


def lens(model_key: str, text: str, progress: Progress | None = None,
         cancel: Cancel | None = None) -> LensResult:
    """The logit lens over ``text`` and the attribution of the model's top token at its end."""
    desc = decoder(model_key)
    _text(text, "text")
    share = Share(progress)
    model = _load(desc, share.part(0.0, LOAD_SHARE), cancel)
    ids, pieces = _encode(model, text, "text")
    from mha_explorer.core.models.causal import lens as lens_tools
    from mha_explorer.core.models.causal import stream  # torch

    total = stream.layer_cost(model, 1, len(ids)) * desc.layers + lens_tools.lens_cost(model, len(ids))
    work = _work(model, total, share, cancel)
    work.text = "reading the text through every layer…"
    rec = stream.record(model, ids, work)
    work.text = "reading every layer's stream through the unembedding…"
    found = lens_tools.logit_lens(model, rec, work)
    token = int(found.top_ids[-1, -1])
    texts = token_texts(model, np.unique(found.top_ids))
    by_id = dict(zip(np.unique(found.top_ids).tolist(), texts, strict=True))
    return LensResult(desc.key, tuple(ids), tuple(pieces), found.top_ids, found.top_probs,
                      tuple(tuple(by_id[int(i)] for i in row) for row in found.top_ids),
                      lens_tools.attribute(model, rec, token), by_id[token])


def _kinds(desc: ModelDescription) -> tuple[str, ...]:
    return tuple(desc.layer_kinds) or ("global",) * desc.layers


# -- JSON -----------------------------------------------------------------------------------------


def _round(x: float) -> float:
    return round(float(x), DIGITS)


def _each_head(values: np.ndarray, name: str, extra: dict[str, np.ndarray] | None = None) -> list[dict]:
    layers, heads = values.shape
    return [{"layer": layer + 1, "head": h, name: _round(values[layer, h]),
             **{k: _round(v[layer, h]) for k, v in (extra or {}).items()}}
            for layer in range(layers) for h in range(heads)]


def repeat_json(r: RepeatAblation) -> dict[str, Any]:
    out: dict[str, Any] = {"weights": r.model, "token_ids": list(r.token_ids),
                           "repeat": {"length": r.n, "seed": r.seed, "loss_first": _round(r.loss_first),
                                      "loss_second": _round(r.loss_second)}}
    if r.ablated is not None:
        out["ablated_to"] = "mean" if r.mean else "zero"
        out["ablation"] = _each_head(r.ablated, "loss_second", {"induction": r.induction})
    return out


def patch_json(r: PatchResult) -> dict[str, Any]:
    return {"weights": r.model, "token_ids_clean": list(r.clean_ids),
            "token_ids_corrupt": list(r.corrupt_ids), "answer_id": r.answer_id, "wrong_id": r.wrong_id,
            "logit_diff_clean": _round(r.logit_diff_clean),
            "logit_diff_corrupt": _round(r.logit_diff_corrupt),
            "heads": _each_head(r.recovered, "recovered")}


def lens_json(r: LensResult) -> dict[str, Any]:
    a = r.attribution
    return {"weights": r.model, "token_ids": list(r.token_ids),
            "layers": [{"after": k, "top_ids": [int(i) for i in ids],
                        "top_probs": [_round(p) for p in probs]}
                       for k, (ids, probs) in enumerate(zip(r.top_ids, r.top_probs, strict=True))],
            "attribution": {"position": a.position, "token_id": a.token_id, "logit": _round(a.logit),
                            "components": [{"name": n, "value": _round(v)} for n, v in zip(a.names, a.values,
                                                                                           strict=True)],
                            "sum": _round(a.total), "tolerance": ATTRIBUTION_TOLERANCE}}


