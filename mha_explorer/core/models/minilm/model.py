"""all-MiniLM-L6-v2 run in plain torch, keeping what the app shows of each layer.

A BERT encoder: word + position + segment embeddings and a LayerNorm; then six
layers, each self-attention with biases, its output projection added back to
the input and normalised, and a GELU feed-forward added back and normalised.
The sentence embedding is the mean over tokens of the last hidden states,
scaled to unit length (as the sentence model is used). Weights are read with
safetensors (never pickle) after their SHA-256 matched the pinned one.
"""

from __future__ import annotations

import collections
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mha_explorer.core.models.minilm import info
from mha_explorer.core.models.minilm.files import (
    TrainedWeightsError,
    model_dir,
    read_verified,
    verify_weights,
)

HASH_SHARE = 0.8  # of the loading progress bar: hashing reads the whole file once
Ablate = int | Sequence[int] | None  # see MiniLM.layer
_FORWARD_CACHE = 3  # sentences kept; at 256 tokens each holds about 27 MB


@dataclass(frozen=True)
class LayerRun:
    """One layer for nb copies of a sentence (1, or one per ablated head). d_k = D / H."""

    hidden_in: torch.Tensor  # [nb, T, D] the layer's input
    probs: torch.Tensor  # [nb, H, T, T] attention weights, rows sum to 1
    context: torch.Tensor  # [nb, H, T, d_k] weights @ V, before the heads are merged
    attn_out: torch.Tensor  # [nb, T, D] W_O · merged + b_O, before the residual
    hidden_out: torch.Tensor  # [nb, T, D] the layer's output (next layer's input)


@dataclass(frozen=True)
class ForwardRun:
    """Layers from some layer to the last (an ablation run), and the sentence embedding."""

    layers: tuple[LayerRun, ...]
    embedding: torch.Tensor  # [1, D] mean-pooled, unit length


def _prefix(layer: int) -> str:
    """Checkpoint key prefix of layer ``layer`` (0-based)."""
    return f"encoder.layer.{layer}."


class MiniLM:
    """The loaded weights (float32, CPU) and the forward pass over them."""

    def __init__(self, tensors: dict[str, torch.Tensor]):
        self.t = tensors
        self._cache: collections.OrderedDict[tuple[int, ...], SentenceRun] = collections.OrderedDict()
        self._lock = threading.Lock()

    def attention_weights(self, layer: int) -> dict[str, torch.Tensor]:
        """Layer ``layer`` (0-based) self-attention in nn.Linear layout (out × in)."""
        p = _prefix(layer) + "attention."
        names = {"Q": "self.query", "K": "self.key", "V": "self.value", "O": "output.dense"}
        out = {}
        for short, key in names.items():
            out[f"W_{short}"] = self.t[p + key + ".weight"]
            out[f"b_{short}"] = self.t[p + key + ".bias"]
        return out

    def _layer_norm(self, x: torch.Tensor, key: str) -> torch.Tensor:
        return F.layer_norm(x, (info.D_MODEL,), self.t[key + ".weight"], self.t[key + ".bias"],
                            eps=info.LAYER_NORM_EPS)

    def _linear(self, x: torch.Tensor, key: str) -> torch.Tensor:
        return F.linear(x, self.t[key + ".weight"], self.t[key + ".bias"])

    def embed(self, ids: list[int] | tuple[int, ...]) -> torch.Tensor:
        """[1, T, D]: word + position + segment (all sentence A) embeddings, normalised."""
        T = len(ids)
        token = torch.tensor([ids], dtype=torch.long)  # [1, T]
        x = (self.t["embeddings.word_embeddings.weight"][token]
             + self.t["embeddings.position_embeddings.weight"][:T][None]
             + self.t["embeddings.token_type_embeddings.weight"][0])  # [1, T, D]
        return self._layer_norm(x, "embeddings.LayerNorm")

    def layer(self, layer: int, x: torch.Tensor, ablate: Ablate = None) -> LayerRun:
        """Run layer ``layer`` (0-based) on x [nb, T, D].

        ``ablate`` zeroes heads' context: an int, that head in every batch element; a
        sequence, head ablate[b] in batch element b (so all heads can be tried at once).
        """
        w = self.attention_weights(layer)
        nb, T, D = x.shape
        H, dk = info.N_HEADS, info.D_K
        q = F.linear(x, w["W_Q"], w["b_Q"]).view(nb, T, H, dk).transpose(1, 2)  # [nb, H, T, d_k]
        k = F.linear(x, w["W_K"], w["b_K"]).view(nb, T, H, dk).transpose(1, 2)  # [nb, H, T, d_k]
        v = F.linear(x, w["W_V"], w["b_V"]).view(nb, T, H, dk).transpose(1, 2)  # [nb, H, T, d_k]
        probs = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(dk), dim=-1)  # [nb, H, T, T]
        context = probs @ v  # [nb, H, T, d_k]
        if ablate is not None:
            # the head says nothing; W_O's bias still applies
            context = context.clone()
            if isinstance(ablate, int):
                context[:, ablate] = 0.0
            else:
                context[torch.arange(nb), torch.as_tensor(list(ablate))] = 0.0
        merged = context.transpose(1, 2).reshape(nb, T, D)  # [nb, T, D]
        attn_out = F.linear(merged, w["W_O"], w["b_O"])  # [nb, T, D]
        p = _prefix(layer)
        a = self._layer_norm(attn_out + x, p + "attention.output.LayerNorm")
        inner = F.gelu(self._linear(a, p + "intermediate.dense"))  # [nb, T, D_FF], erf GELU as BERT
        out = self._layer_norm(self._linear(inner, p + "output.dense") + a, p + "output.LayerNorm")
        return LayerRun(x, probs, context, attn_out, out)

    def run_from(self, layer: int, x: torch.Tensor, ablate: Ablate = None) -> ForwardRun:
        """Layers ``layer``..5 (0-based) from hidden states x [nb, T, D]; ``ablate`` (see
        ``layer``) switches heads off in the first of them."""
        runs = []
        with torch.inference_mode():
            for i in range(layer, info.N_LAYERS):
                runs.append(self.layer(i, x, ablate if i == layer else None))
                x = runs[-1].hidden_out
            return ForwardRun(tuple(runs), sentence_embedding(x))

    def forward(self, ids: list[int] | tuple[int, ...]) -> SentenceRun:
        """The sentence's run, computed lazily layer by layer; the last few sentences are kept,
        so moving between layers (or back to a sentence) costs no new computation."""
        key = tuple(int(i) for i in ids)
        with self._lock:
            run = self._cache.pop(key, None) or SentenceRun(self, key)
            self._cache[key] = run  # most recent last
            while len(self._cache) > _FORWARD_CACHE:
                self._cache.popitem(last=False)
        return run


class SentenceRun:
    """One sentence through the model, computed only as far as something asks.

    Layer L's input needs layers 1..L−1 only, so the first layer of a new sentence
    costs just the embeddings; the sentence embedding needs all six.
    """

    def __init__(self, model: MiniLM, ids: tuple[int, ...]):
        self.model, self.ids = model, ids
        self._embedded: torch.Tensor | None = None
        self._layers: list[LayerRun] = []
        self._lock = threading.RLock()  # layer() asks input_of() while holding it

    def input_of(self, layer: int) -> torch.Tensor:
        """[1, T, D]: the hidden states entering layer ``layer`` (0-based)."""
        if layer == 0:
            with self._lock, torch.inference_mode():
                if self._embedded is None:
                    self._embedded = self.model.embed(self.ids)
                return self._embedded
        return self.layer(layer - 1).hidden_out

    def layer(self, layer: int) -> LayerRun:
        """Layer ``layer`` (0-based), computing the layers up to it that are not yet done."""
        with self._lock, torch.inference_mode():
            while len(self._layers) <= layer:
                x = self._layers[-1].hidden_out if self._layers else self.input_of(0)
                self._layers.append(self.model.layer(len(self._layers), x))
            return self._layers[layer]

    @property
    def layers(self) -> tuple[LayerRun, ...]:
        self.layer(info.N_LAYERS - 1)
        return tuple(self._layers)

    @property
    def embedding(self) -> torch.Tensor:
        """[1, D]: mean pooling of the last layer's output, unit length."""
        return sentence_embedding(self.layer(info.N_LAYERS - 1).hidden_out)


def sentence_embedding(hidden: torch.Tensor) -> torch.Tensor:
    """[nb, D]: the mean over tokens of hidden [nb, T, D], scaled to unit length."""
    return F.normalize(hidden.mean(dim=1), p=2, dim=-1)


_model: MiniLM | None = None
_model_lock = threading.Lock()


def load_model(progress: Callable[[float], None] | None = None,
               cancel: Callable[[], bool] | None = None) -> MiniLM:
    """The model, loaded once per process (hash check, then safetensors); later calls return it.

    ``progress(fraction)`` is called while loading; raises TrainedWeightsError with the fix.
    """
    global _model
    with _model_lock:
        if _model is None:
            _model = _load(progress, cancel)
        elif progress is not None:
            progress(1.0)
        return _model


def _load(progress: Callable[[float], None] | None, cancel: Callable[[], bool] | None = None) -> MiniLM:
    try:
        from safetensors.torch import load_file
    except ImportError:
        raise TrainedWeightsError(f"{info.DISPLAY_NAME} needs the 'safetensors' library; install "
                                  f"the optional extra: {info.INSTALL_HINT}") from None
    folder = model_dir()
    path = folder / info.WEIGHTS_FILE
    verify_weights(path, progress=(lambda f: progress(f * HASH_SHARE)) if progress else None, cancel=cancel)
    read_verified(folder / info.CONFIG_FILE, info.CONFIG_SHA256, "model configuration")  # the shape it states
    tensors = load_file(str(path), device="cpu")
    tensors.pop("embeddings.position_ids", None)  # an index buffer, not a weight
    tensors = {k: v.float() for k, v in tensors.items() if not k.startswith("pooler.")}
    if progress is not None:
        progress(1.0)
    return MiniLM(tensors)
