"""A trained decoder run in plain torch, with a named place for every activation.

The model's description (``ModelDescription`` and its ``DecoderLayout``) says everything
that differs between decoders; nothing here names a model. Each layer:

    attn_in   = RMSNorm(hidden_in)                        input norm
    q, k, v   = attn_in · W_Q, W_K, W_V                   H query heads, Hkv key/value heads, hd wide
    q_normed  = RMSNorm per head (q_norm), same for k     only a model with q/k norms (Gemma 3)
    q_rope    = RoPE(q_normed), k_rope likewise           the layer's base, half-split pairs
    scores    = q_rope · k_ropeᵀ · scale, masked to -inf  causal; local layers keep their window
    probs     = softmax(scores)
    context   = probs · v; merged = heads side by side    query head h reads kv head h // (H / Hkv)
    attn_proj = merged · W_O
    attn_out  = RMSNorm(attn_proj) with post-norms (Gemma 3), else attn_proj itself
    resid_mid = hidden_in + attn_out
    mlp_out   = W_down · (act(W_gate · m) * (W_up · m)), m = RMSNorm(resid_mid); normed again with post-norms
    hidden_out = resid_mid + mlp_out

over token embeddings times the model's embedding scale, then a final RMSNorm and the logits
against the unembedding (the embedding matrix, tied). RMSNorm multiplies by the stored scale
(Gemma's already holds its "1 +"). Layers are numbered from 1, as people count them. Weights
are float32 on the CPU, read from the app's converted copy once its SHA-256 matched the pin.

The names ``embed``, ``layer``, ``finish_layer``, ``attention_weights``, ``post_attention_scale``,
``final_norm_scale``, ``unembedding``, ``final_logits``, ``encode`` and ``run`` are what the
causal tools (ablation, patching, the logit lens) read, for every decoder alike.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mha_explorer.core.models.decoder.layer_math import (
    attention_mask,
    rms_norm,
    rms_scale,
    rope_tables,
    rotate,
)
from mha_explorer.core.models.decoder.tokenizer import DecoderTokenizer
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.progress import Cancel, stop_if_asked

_TEXT_CACHE = 2  # texts whose runs are kept (see TextRun for what a run holds)
FULL_LAYERS = 3  # layers of a text whose every activation is kept
_ACTIVATIONS = {"gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu}


@dataclass(frozen=True)
class LayerInfo:
    """What makes one layer's attention differ from another's."""

    layer: int  # 1-based
    kind: str  # "global" or "local"
    rope_base: float
    window: int | None  # keys a query sees, itself included (None: all earlier ones)
    scale: float  # scores = q·k * scale


def check_layer(d: ModelDescription, layer: int) -> None:
    if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= d.layers:
        raise ValueError(f"{d.name} has layers 1 to {d.layers}, got {layer!r}")


def layer_info(d: ModelDescription, layer: int) -> LayerInfo:
    check_layer(d, layer)
    return LayerInfo(layer, d.layer_kind(layer), float(d.rope_base(layer)), d.layer_window(layer), d.scale)


@dataclass(frozen=True)
class LayerActivations:
    """One layer's activations for one text (T tokens, H heads, Hkv key/value heads, hd wide)."""

    layer: int  # 1-based
    hidden_in: torch.Tensor  # [1, T, D] the residual stream entering the layer
    attn_in: torch.Tensor  # [1, T, D] after the input RMSNorm
    q: torch.Tensor  # [1, T, H*hd]
    k: torch.Tensor  # [1, T, Hkv*hd]
    v: torch.Tensor  # [1, T, Hkv*hd]
    q_normed: torch.Tensor  # [1, H, T, hd] after q_norm (the heads of q, for a model without)
    k_normed: torch.Tensor  # [1, Hkv, T, hd] after k_norm (likewise)
    q_rope: torch.Tensor  # [1, H, T, hd]
    k_rope: torch.Tensor  # [1, Hkv, T, hd]
    scores: torch.Tensor  # [1, H, T, T] scaled; masked cells -inf
    probs: torch.Tensor  # [1, H, T, T] rows sum to 1
    context: torch.Tensor  # [1, H, T, hd] probs · v
    merged: torch.Tensor  # [1, T, H*hd] heads side by side
    attn_proj: torch.Tensor  # [1, T, D] merged · W_O
    attn_out: torch.Tensor  # [1, T, D] what joins the stream (after a post-attention norm, if any)
    resid_mid: torch.Tensor  # [1, T, D] hidden_in + attn_out
    mlp_out: torch.Tensor  # [1, T, D] the MLP (after its post-norm, if any)
    hidden_out: torch.Tensor  # [1, T, D] resid_mid + mlp_out: the next layer's hidden_in


@dataclass(frozen=True)
class KeyValues:
    """One layer's cache: rotated keys and values of the tokens kept, and their positions."""

    keys: torch.Tensor  # [1, Hkv, S, hd] after k_norm (if any) and RoPE
    values: torch.Tensor  # [1, Hkv, S, hd]
    positions: torch.Tensor  # [S] long

    @property
    def tokens(self) -> int:
        return int(self.positions.shape[0])

    @property
    def nbytes(self) -> int:
        return self.keys.numel() * self.keys.element_size() + self.values.numel() * self.values.element_size()

    def kept(self, window: int | None) -> KeyValues:
        """The cache a local layer keeps: the last ``window`` tokens (a global layer keeps all)."""
        if window is None or self.tokens <= window:
            return self
        return KeyValues(self.keys[:, :, -window:].contiguous(), self.values[:, :, -window:].contiguous(),
                         self.positions[-window:].clone())


class DecoderModel:
    """The loaded weights (float32, CPU), the tokenizer and the forward pass over them."""

    def __init__(self, description: ModelDescription, tensors: dict[str, torch.Tensor],
                 tokenizer: DecoderTokenizer | None = None, notice: str | None = None):
        if description.decoder is None:
            raise ValueError(f"{description.name} is not a decoder")
        self.description = description
        self.layout = description.decoder
        self.t = tensors
        self.tokenizer = tokenizer
        self.notice = notice  # one sentence when the converted copy had to be made again
        self._act = _ACTIVATIONS[self.layout.activation]
        self._runs: collections.OrderedDict[tuple[int, ...], TextRun] = collections.OrderedDict()
        self._lock = threading.Lock()

    # -- weights -------------------------------------------------------------------------------
    def attention_weights(self, layer: int) -> dict[str, torch.Tensor]:
        """Layer ``layer``'s attention in nn.Linear layout (out × in): W_Q [H·hd, D], W_K and W_V
        [Hkv·hd, D], W_O [D, H·hd]; with q/k norms, "q_norm" and "k_norm" the whole scales [hd]."""
        check_layer(self.description, layer)
        p = f"layers.{layer - 1}."
        found = {"W_Q": self.t[p + "q_proj.weight"], "W_K": self.t[p + "k_proj.weight"],
                 "W_V": self.t[p + "v_proj.weight"], "W_O": self.t[p + "o_proj.weight"]}
        if self.description.qk_norm:
            found.update(q_norm=self.t[p + "q_norm.scale"], k_norm=self.t[p + "k_norm.scale"])
        return found

    def input_norm(self, layer: int) -> torch.Tensor:
        """[D]: the scale of layer ``layer``'s input RMSNorm."""
        check_layer(self.description, layer)
        return self.t[f"layers.{layer - 1}.attn_norm.scale"]

    def layer_info(self, layer: int) -> LayerInfo:
        return layer_info(self.description, layer)

    def unembedding(self) -> torch.Tensor:
        """[vocab, D]: the matrix the final hidden state is read against (the embedding, tied)."""
        return self.t["embed.weight"] if self.layout.tied_embeddings else self.t["unembed.weight"]

    # -- the forward pass ---------------------------------------------------------------------
    def _norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return rms_norm(x, self.t[name], self.layout.rms_eps)

    def embed(self, ids: Sequence[int]) -> torch.Tensor:
        """[1, T, D]: the tokens' embedding rows times the model's embedding scale."""
        index = torch.as_tensor([list(ids)], dtype=torch.long)  # [1, T]
        rows = self.t["embed.weight"][index]
        if self.layout.embed_scale == 1.0:
            return rows
        return rows * torch.tensor(self.layout.embed_scale, dtype=torch.float32)

    def qkv(self, layer: int, x: torch.Tensor, positions: torch.Tensor) -> dict[str, torch.Tensor]:
        """The layer's projections of x [1, T, D] up to the rotated q and k."""
        d = self.description
        w = self.attention_weights(layer)
        info = layer_info(d, layer)
        B, T, _ = x.shape
        H, Hkv, hd = d.heads, d.kv_heads, d.head_dim
        attn_in = self._norm(x, f"layers.{layer - 1}.attn_norm.scale")
        q = F.linear(attn_in, w["W_Q"])  # [B, T, H*hd]
        k = F.linear(attn_in, w["W_K"])  # [B, T, Hkv*hd]
        v = F.linear(attn_in, w["W_V"])  # [B, T, Hkv*hd]
        q_heads = q.view(B, T, H, hd).transpose(1, 2)  # [B, H, T, hd]
        k_heads = k.view(B, T, Hkv, hd).transpose(1, 2)  # [B, Hkv, T, hd]
        if d.qk_norm:
            q_heads = rms_norm(q_heads, w["q_norm"], self.layout.rms_eps)
            k_heads = rms_norm(k_heads, w["k_norm"], self.layout.rms_eps)
        cos, sin = rope_tables(positions, info.rope_base, hd)  # [T, hd]
        return {"attn_in": attn_in, "q": q, "k": k, "v": v, "q_normed": q_heads, "k_normed": k_heads,
                "q_rope": rotate(q_heads, cos, sin), "k_rope": rotate(k_heads, cos, sin)}

    def post_attention_scale(self, layer: int, attn_proj: torch.Tensor) -> torch.Tensor:
        """[1, T, D]: the multiplier m with attn_out == attn_proj · m in this run: the
        post-attention RMSNorm's scale over attn_proj's RMS, or ones without that norm."""
        check_layer(self.description, layer)
        if not self.layout.post_norms:
            return torch.ones_like(attn_proj)
        scale = self.t[f"layers.{layer - 1}.post_attn_norm.scale"]
        return rms_scale(attn_proj, scale, self.layout.rms_eps).expand_as(attn_proj)

    def finish_layer(self, layer: int, x: torch.Tensor, merged: torch.Tensor) -> dict[str, torch.Tensor]:
        """From the merged heads [1, T, H*hd] to the layer's output, given its input x: how a
        head is switched off or patched (its slice of ``merged`` changed)."""
        p = f"layers.{layer - 1}."
        post = self.layout.post_norms
        attn_proj = F.linear(merged, self.t[p + "o_proj.weight"])  # [1, T, D]
        attn_out = self._norm(attn_proj, p + "post_attn_norm.scale") if post else attn_proj
        resid_mid = x + attn_out
        m = self._norm(resid_mid, p + "mlp_norm.scale")
        gate = self._act(F.linear(m, self.t[p + "gate_proj.weight"]))  # [1, T, d_ff]
        inner = gate * F.linear(m, self.t[p + "up_proj.weight"])  # [1, T, d_ff]
        mlp_out = F.linear(inner, self.t[p + "down_proj.weight"])  # [1, T, D]
        if post:
            mlp_out = self._norm(mlp_out, p + "post_mlp_norm.scale")
        return {"attn_proj": attn_proj, "attn_out": attn_out, "resid_mid": resid_mid, "mlp_out": mlp_out,
                "hidden_out": resid_mid + mlp_out}

    def attend(self, layer: int, x: torch.Tensor, positions: torch.Tensor,
               past: KeyValues | None = None) -> dict[str, torch.Tensor]:
        """Layer ``layer`` for new tokens x [1, Tn, D] at ``positions`` [Tn], attending over the
        ``past`` keys and values (a decode step's cache) followed by their own. Returns every
        activation by name, plus "keys", "values" [1, Hkv, S, hd] and "key_positions" [S]: the
        cache after these tokens (before a local layer drops what falls out of its window)."""
        d = self.description
        B, Tn, _ = x.shape
        H, Hkv, hd = d.heads, d.kv_heads, d.head_dim
        group = H // Hkv  # query heads per key/value head: head h reads kv head h // group
        info = layer_info(d, layer)
        a = self.qkv(layer, x, positions)
        v_new = a["v"].view(B, Tn, Hkv, hd).transpose(1, 2)  # [B, Hkv, Tn, hd]
        if past is None:
            keys, values, key_positions = a["k_rope"], v_new, positions
        else:
            keys = torch.cat([past.keys, a["k_rope"]], dim=2)  # [B, Hkv, S, hd]
            values = torch.cat([past.values, v_new], dim=2)  # [B, Hkv, S, hd]
            key_positions = torch.cat([past.positions, positions])  # [S]
        S = keys.shape[2]
        q = a["q_rope"].view(B, Hkv, group, Tn, hd)  # [B, Hkv, group, Tn, hd]: heads by their kv head
        scores = (q @ keys[:, :, None].transpose(-2, -1)).view(B, H, Tn, S) * info.scale  # [B, H, Tn, S]
        allowed = attention_mask(positions, key_positions, info.window)  # [Tn, S]
        scores = scores.masked_fill(~allowed, float("-inf"))
        probs = torch.softmax(scores, dim=-1)  # [B, H, Tn, S]
        context = (probs.view(B, Hkv, group, Tn, S) @ values[:, :, None]).view(B, H, Tn, hd)  # [B, H, Tn, hd]
        merged = context.transpose(1, 2).reshape(B, Tn, H * hd)  # [B, Tn, H*hd]
        return {**a, "scores": scores, "probs": probs, "context": context, "merged": merged,
                **self.finish_layer(layer, x, merged), "keys": keys, "values": values,
                "key_positions": key_positions}

    def layer(self, layer: int, x: torch.Tensor) -> LayerActivations:
        """Run layer ``layer`` (1-based) over the whole text x [1, T, D] (positions 0..T−1)."""
        check_layer(self.description, layer)
        out = self.attend(layer, x, torch.arange(x.shape[1]))
        for cache_only in ("keys", "values", "key_positions"):
            del out[cache_only]
        return LayerActivations(layer=layer, hidden_in=x, **out)

    def final_norm_scale(self, hidden: torch.Tensor) -> torch.Tensor:
        """[..., D]: the multiplier m with the final RMSNorm(hidden) == hidden · m."""
        return rms_scale(hidden, self.t["norm.scale"], self.layout.rms_eps).expand_as(hidden)

    def final_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[..., vocab] from the last layer's output [..., D]: final RMSNorm, then the unembedding."""
        return F.linear(self._norm(hidden, "norm.scale"), self.unembedding())

    def run(self, ids: Sequence[int]) -> TextRun:
        """The text's run, computed lazily layer by layer; the last few texts are kept."""
        key = tuple(int(i) for i in ids)
        if not key:
            raise ValueError("no tokens to run")
        vocab = self.description.vocab_size
        if max(key) >= vocab or min(key) < 0:
            raise ValueError(f"token ids must lie in 0..{vocab - 1}")
        with self._lock:
            run = self._runs.pop(key, None) or TextRun(self, key)
            self._runs[key] = run  # most recent last
            while len(self._runs) > _TEXT_CACHE:
                self._runs.popitem(last=False)
        return run

    def attention_maps(self, ids: Sequence[int], cancel: Cancel | None = None,
                       each_layer: Callable[[int, int], None] | None = None) -> torch.Tensor:
        """[layers, H, T, T]: every head's attention weights, keeping nothing else;
        ``each_layer(done, of)`` hears of each layer as it is read."""
        layers = self.description.layers
        maps = []
        with torch.inference_mode():
            x = self.embed(ids)
            for layer in range(1, layers + 1):
                stop_if_asked(cancel)
                acts = self.layer(layer, x)
                maps.append(acts.probs[0])
                x = acts.hidden_out
                if each_layer is not None:
                    each_layer(layer, layers)
        return torch.stack(maps)

    def logits(self, ids: Sequence[int], cancel: Cancel | None = None) -> torch.Tensor:
        """[T, vocab]: the next-token logits after every position."""
        return self.run(ids).logits(cancel)

    # -- text --------------------------------------------------------------------------------
    def encode(self, text: str, bos: bool = True) -> tuple[list[int], list[str]]:
        if self.tokenizer is None:
            raise RuntimeError("this model was loaded without its tokenizer")
        return self.tokenizer.encode(text, bos=bos)


class TextRun:
    """One text through the model, computed only as far as something asks: layer L needs
    layers 1..L−1 only; the logits need all of them.

    Every layer's output is kept (T × D numbers), but all the activations of only the
    FULL_LAYERS layers asked last: a layer holds a few tens of KB per token plus 8·H·T² bytes
    of scores and weights (Gemma 3: 77 MB at 1,024 tokens). Asking again for a layer no longer
    kept recomputes that one layer from the kept input."""

    def __init__(self, model: DecoderModel, ids: tuple[int, ...]):
        self.model, self.ids = model, ids
        self._layers = model.description.layers
        self._embedded: torch.Tensor | None = None
        self._outputs: list[torch.Tensor] = []  # hidden_out [1, T, D] of layers 1, 2, ...
        self._full: collections.OrderedDict[int, LayerActivations] = collections.OrderedDict()
        self._lock = threading.RLock()

    def input_of(self, layer: int, cancel: Cancel | None = None) -> torch.Tensor:
        """[1, T, D]: the residual stream entering layer ``layer`` (1-based)."""
        check_layer(self.model.description, layer)
        with self._lock, torch.inference_mode():
            if self._embedded is None:
                self._embedded = self.model.embed(self.ids)
            while len(self._outputs) < layer - 1:
                stop_if_asked(cancel)
                x = self._outputs[-1] if self._outputs else self._embedded
                self._keep(self.model.layer(len(self._outputs) + 1, x))
            return self._outputs[layer - 2] if layer > 1 else self._embedded

    def _keep(self, acts: LayerActivations) -> None:
        if acts.layer == len(self._outputs) + 1:
            self._outputs.append(acts.hidden_out)
        self._full[acts.layer] = acts
        self._full.move_to_end(acts.layer)
        while len(self._full) > FULL_LAYERS:
            self._full.popitem(last=False)

    def layer(self, layer: int, cancel: Cancel | None = None) -> LayerActivations:
        """Layer ``layer`` (1-based), computing the ones before it not yet done; Cancelled
        between layers when ``cancel()`` says so (the layers done are kept)."""
        with self._lock, torch.inference_mode():
            x = self.input_of(layer, cancel)
            if layer not in self._full:
                stop_if_asked(cancel)
                self._keep(self.model.layer(layer, x))
            self._full.move_to_end(layer)
            return self._full[layer]

    def layers(self, cancel: Cancel | None = None) -> tuple[LayerActivations, ...]:
        """Every layer's activations (held by the caller; this run keeps the last few)."""
        return tuple(self.layer(layer, cancel) for layer in range(1, self._layers + 1))

    def hidden_out(self, layer: int, cancel: Cancel | None = None) -> torch.Tensor:
        """[1, T, D]: layer ``layer``'s output, without keeping its other activations."""
        if layer < self._layers:
            return self.input_of(layer + 1, cancel)
        return self.layer(layer, cancel).hidden_out

    def logits(self, cancel: Cancel | None = None) -> torch.Tensor:
        """[T, vocab] next-token logits."""
        hidden = self.hidden_out(self._layers, cancel)[0]  # [T, D]
        with torch.inference_mode():
            return self.model.final_logits(hidden)
