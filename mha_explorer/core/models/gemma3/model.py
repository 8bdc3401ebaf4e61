"""Gemma 3 270M run in plain torch, with a named place for every activation.

A decoder of 18 layers over token embeddings scaled by sqrt(640). Each layer:

    attn_in   = RMSNorm(hidden_in)                        input norm
    q, k, v   = attn_in · W_Q, W_K, W_V                   4 query heads, 1 key/value head, 256 wide
    q_normed  = RMSNorm per head (q_norm), same for k     before the rotation
    q_rope    = RoPE(q_normed), k_rope likewise           base 10,000 local, 1,000,000 global
    scores    = q_rope · k_ropeᵀ / 16, masked to -inf     causal; local layers keep 512 keys
    probs     = softmax(scores)
    context   = probs · v; merged = heads side by side
    attn_proj = merged · W_O; attn_out = RMSNorm(attn_proj)   Gemma normalises the output too
    resid_mid = hidden_in + attn_out
    mlp_out   = RMSNorm(W_down · (gelu_tanh(W_gate · m) * (W_up · m))), m = RMSNorm(resid_mid)
    hidden_out = resid_mid + mlp_out

then a final RMSNorm and the logits against the (tied) embedding matrix. RMSNorm
multiplies by the stored scale (which already holds Gemma's "1 +"). Layers are
numbered from 1, as people count them. Weights are float32 on the CPU, read from
the app's converted safetensors copy once its SHA-256 matched the manifest.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mha_explorer.core.models.gemma3 import convert, files
from mha_explorer.core.models.gemma3.description import GEMMA3_270M, RMS_NORM_EPS
from mha_explorer.core.models.gemma3.layer_math import attention_mask, rms_norm, rope_tables, rotate
from mha_explorer.core.models.gemma3.tokenizer import GemmaTokenizer, TokenizerFileError, load_tokenizer
from mha_explorer.core.models.gemma3.weights_file import WeightsAltered, read_weights
from mha_explorer.core.models.progress import Cancel, Progress, Share, stop_if_asked

D = GEMMA3_270M
_TEXT_CACHE = 2  # texts whose runs are kept (see TextRun for what a run holds)
FULL_LAYERS = 3  # layers of a text whose every activation is kept


@dataclass(frozen=True)
class LayerInfo:
    """What makes one layer's attention differ from another's."""

    layer: int  # 1-based
    kind: str  # "global" or "local"
    rope_base: float
    window: int | None  # keys a query sees, itself included (None: all earlier ones)
    scale: float  # scores = q·k * scale


def layer_info(layer: int) -> LayerInfo:
    check_layer(layer)
    return LayerInfo(layer, D.layer_kind(layer), float(D.rope_base(layer)), D.layer_window(layer), D.scale)


def check_layer(layer: int) -> None:
    if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= D.layers:
        raise ValueError(f"{D.name} has layers 1 to {D.layers}, got {layer!r}")


@dataclass(frozen=True)
class LayerActivations:
    """One layer's activations for one text (T tokens, H = 4 heads, Hkv = 1, hd = 256)."""

    layer: int  # 1-based
    hidden_in: torch.Tensor  # [1, T, D] the residual stream entering the layer
    attn_in: torch.Tensor  # [1, T, D] after the input RMSNorm
    q: torch.Tensor  # [1, T, H*hd]
    k: torch.Tensor  # [1, T, Hkv*hd]
    v: torch.Tensor  # [1, T, Hkv*hd]
    q_normed: torch.Tensor  # [1, H, T, hd] after q_norm
    k_normed: torch.Tensor  # [1, Hkv, T, hd] after k_norm
    q_rope: torch.Tensor  # [1, H, T, hd]
    k_rope: torch.Tensor  # [1, Hkv, T, hd]
    scores: torch.Tensor  # [1, H, T, T] scaled; masked cells -inf
    probs: torch.Tensor  # [1, H, T, T] rows sum to 1
    context: torch.Tensor  # [1, H, T, hd] probs · v
    merged: torch.Tensor  # [1, T, H*hd] heads side by side
    attn_proj: torch.Tensor  # [1, T, D] merged · W_O
    attn_out: torch.Tensor  # [1, T, D] after the post-attention RMSNorm: what joins the stream
    resid_mid: torch.Tensor  # [1, T, D] hidden_in + attn_out
    mlp_out: torch.Tensor  # [1, T, D] the MLP after its post-norm
    hidden_out: torch.Tensor  # [1, T, D] resid_mid + mlp_out: the next layer's hidden_in


@dataclass(frozen=True)
class KeyValues:
    """One layer's cache: rotated keys and values of the tokens kept, and their positions."""

    keys: torch.Tensor  # [1, Hkv, S, hd] after k_norm and RoPE
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


class Gemma3:
    """The loaded weights (float32, CPU), the tokenizer and the forward pass over them."""

    def __init__(self, tensors: dict[str, torch.Tensor], tokenizer: GemmaTokenizer | None = None,
                 notice: str | None = None):
        self.t = tensors
        self.tokenizer = tokenizer
        self.notice = notice  # one sentence when the converted copy had to be made again
        self.description = D
        self._runs: collections.OrderedDict[tuple[int, ...], TextRun] = collections.OrderedDict()
        self._lock = threading.Lock()

    # -- weights -------------------------------------------------------------------------------
    def attention_weights(self, layer: int) -> dict[str, torch.Tensor]:
        """Layer ``layer``'s attention in nn.Linear layout (out × in): W_Q [1024, 640],
        W_K and W_V [256, 640], W_O [640, 1024]; q_norm and k_norm the whole scales [256]."""
        check_layer(layer)
        p = f"layers.{layer - 1}."
        return {"W_Q": self.t[p + "q_proj.weight"], "W_K": self.t[p + "k_proj.weight"],
                "W_V": self.t[p + "v_proj.weight"], "W_O": self.t[p + "o_proj.weight"],
                "q_norm": self.t[p + "q_norm.scale"], "k_norm": self.t[p + "k_norm.scale"]}

    def layer_info(self, layer: int) -> LayerInfo:
        return layer_info(layer)

    # -- the forward pass ---------------------------------------------------------------------
    def embed(self, ids: Sequence[int]) -> torch.Tensor:
        """[1, T, D]: the tokens' embedding rows times sqrt(D)."""
        index = torch.as_tensor([list(ids)], dtype=torch.long)  # [1, T]
        scale = torch.tensor(D.d_model ** 0.5, dtype=torch.float32)
        return self.t["embed.weight"][index] * scale

    def qkv(self, layer: int, x: torch.Tensor, positions: torch.Tensor) -> dict[str, torch.Tensor]:
        """The layer's projections of x [1, T, D] up to the rotated q and k."""
        w = self.attention_weights(layer)
        info = layer_info(layer)
        B, T, _ = x.shape
        H, Hkv, hd = D.heads, D.kv_heads, D.head_dim
        attn_in = rms_norm(x, self.t[f"layers.{layer - 1}.attn_norm.scale"])
        q = F.linear(attn_in, w["W_Q"])  # [B, T, H*hd]
        k = F.linear(attn_in, w["W_K"])  # [B, T, Hkv*hd]
        v = F.linear(attn_in, w["W_V"])  # [B, T, Hkv*hd]
        q_normed = rms_norm(q.view(B, T, H, hd).transpose(1, 2), w["q_norm"])  # [B, H, T, hd]
        k_normed = rms_norm(k.view(B, T, Hkv, hd).transpose(1, 2), w["k_norm"])  # [B, Hkv, T, hd]
        cos, sin = rope_tables(positions, info.rope_base)  # [T, hd]
        return {"attn_in": attn_in, "q": q, "k": k, "v": v, "q_normed": q_normed, "k_normed": k_normed,
                "q_rope": rotate(q_normed, cos, sin), "k_rope": rotate(k_normed, cos, sin)}

    def finish_layer(self, layer: int, x: torch.Tensor, merged: torch.Tensor) -> dict[str, torch.Tensor]:
        """From the merged heads [1, T, H*hd] to the layer's output, given its input x."""
        p = f"layers.{layer - 1}."
        attn_proj = F.linear(merged, self.t[p + "o_proj.weight"])  # [1, T, D]
        attn_out = rms_norm(attn_proj, self.t[p + "post_attn_norm.scale"])
        resid_mid = x + attn_out
        m = rms_norm(resid_mid, self.t[p + "mlp_norm.scale"])
        gate = F.gelu(F.linear(m, self.t[p + "gate_proj.weight"]), approximate="tanh")  # [1, T, D_FF]
        inner = gate * F.linear(m, self.t[p + "up_proj.weight"])  # [1, T, D_FF]
        mlp_out = rms_norm(F.linear(inner, self.t[p + "down_proj.weight"]), self.t[p + "post_mlp_norm.scale"])
        return {"attn_proj": attn_proj, "attn_out": attn_out, "resid_mid": resid_mid, "mlp_out": mlp_out,
                "hidden_out": resid_mid + mlp_out}

    def attend(self, layer: int, x: torch.Tensor, positions: torch.Tensor,
               past: KeyValues | None = None) -> dict[str, torch.Tensor]:
        """Layer ``layer`` for new tokens x [1, Tn, D] at ``positions`` [Tn], attending over the
        ``past`` keys and values (a decode step's cache) followed by their own. Returns every
        activation by name, plus "keys", "values" [1, Hkv, S, hd] and "key_positions" [S]: the
        cache after these tokens (before a local layer drops what falls out of its window)."""
        B, Tn, _ = x.shape
        H, Hkv, hd = D.heads, D.kv_heads, D.head_dim
        group = H // Hkv  # query heads per key/value head: head h reads kv head h // group
        info = layer_info(layer)
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
        check_layer(layer)
        out = self.attend(layer, x, torch.arange(x.shape[1]))
        for cache_only in ("keys", "values", "key_positions"):
            del out[cache_only]
        return LayerActivations(layer=layer, hidden_in=x, **out)

    def final_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[..., vocab] from the last layer's output [..., D]: final RMSNorm, tied embedding."""
        return F.linear(rms_norm(hidden, self.t["norm.scale"]), self.t["embed.weight"])

    # -- the norms as multipliers, for attributing a logit to the parts of the stream ------------
    def post_attention_scale(self, layer: int, attn_proj: torch.Tensor) -> torch.Tensor:
        """[..., D]: the multiplier m with attn_out == attn_proj · m in this run (the
        post-attention RMSNorm's scale over the RMS of ``attn_proj``), so a head's share of
        attn_proj can be followed into the residual stream."""
        return _rms_multiplier(attn_proj, self.t[f"layers.{layer - 1}.post_attn_norm.scale"])

    def final_norm_scale(self, hidden: torch.Tensor) -> torch.Tensor:
        """[..., D]: the multiplier m with final_norm(hidden) == hidden · m in this run."""
        return _rms_multiplier(hidden, self.t["norm.scale"])

    def unembedding(self) -> torch.Tensor:
        """[vocab, D]: the output layer's rows (the embedding, tied; not scaled by sqrt(D))."""
        return self.t["embed.weight"]

    def run(self, ids: Sequence[int]) -> TextRun:
        """The text's run, computed lazily layer by layer; the last few texts are kept."""
        key = tuple(int(i) for i in ids)
        if not key:
            raise ValueError("no tokens to run")
        if max(key) >= D.vocab_size or min(key) < 0:
            raise ValueError(f"token ids must lie in 0..{D.vocab_size - 1}")
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
        maps = []
        with torch.inference_mode():
            x = self.embed(ids)
            for layer in range(1, D.layers + 1):
                stop_if_asked(cancel)
                acts = self.layer(layer, x)
                maps.append(acts.probs[0])
                x = acts.hidden_out
                if each_layer is not None:
                    each_layer(layer, D.layers)
        return torch.stack(maps)

    def logits(self, ids: Sequence[int], cancel: Cancel | None = None) -> torch.Tensor:
        """[T, vocab]: the next-token logits after every position."""
        return self.run(ids).logits(cancel)

    # -- text --------------------------------------------------------------------------------
    def encode(self, text: str, bos: bool = True) -> tuple[list[int], list[str]]:
        if self.tokenizer is None:
            raise RuntimeError("this model was loaded without its tokenizer")
        return self.tokenizer.encode(text, bos=bos)


def _rms_multiplier(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """[..., D]: what RMSNorm multiplies x by, its scale over x's RMS (eps as the model's)."""
    return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_NORM_EPS) * scale


class TextRun:
    """One text through the model, computed only as far as something asks: layer L needs
    layers 1..L−1 only; the logits need all 18.

    Every layer's output is kept (T × 640 numbers), but all the activations of only the
    FULL_LAYERS layers asked last: a layer holds about 42 KB per token plus 32·T² bytes of
    scores and weights (77 MB at 1,024 tokens). Asking again for a layer no longer kept
    recomputes that one layer from the kept input."""

    def __init__(self, model: Gemma3, ids: tuple[int, ...]):
        self.model, self.ids = model, ids
        self._embedded: torch.Tensor | None = None
        self._outputs: list[torch.Tensor] = []  # hidden_out [1, T, D] of layers 1, 2, ...
        self._full: collections.OrderedDict[int, LayerActivations] = collections.OrderedDict()
        self._lock = threading.RLock()

    def input_of(self, layer: int, cancel: Cancel | None = None) -> torch.Tensor:
        """[1, T, D]: the residual stream entering layer ``layer`` (1-based)."""
        check_layer(layer)
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
        """All 18 layers' activations (held by the caller; this run keeps the last few)."""
        return tuple(self.layer(layer, cancel) for layer in range(1, D.layers + 1))

    def hidden_out(self, layer: int, cancel: Cancel | None = None) -> torch.Tensor:
        """[1, T, D]: layer ``layer``'s output, without keeping its other activations."""
        return self.input_of(layer + 1, cancel) if layer < D.layers else self.layer(layer, cancel).hidden_out

    def logits(self, cancel: Cancel | None = None) -> torch.Tensor:
        """[T, vocab] next-token logits."""
        hidden = self.hidden_out(D.layers, cancel)[0]  # [T, D]
        with torch.inference_mode():
            return self.model.final_logits(hidden)


# -- loading ---------------------------------------------------------------------------------

_model: Gemma3 | None = None
_model_lock = threading.Lock()


def load_model(progress: Progress | None = None, cancel: Cancel | None = None) -> Gemma3:
    """The model and its tokenizer, loaded once per process; later calls return the same one.

    The first call ever converts the packages' GGUF file into the cache (about 15 s, with
    progress); later ones read the converted copy (about 2 s). A copy found altered is
    converted again, once, and ``model.notice`` says so in one sentence. Raises
    GemmaFilesError (one line with the fix) when the extra is missing, Cancelled on cancel.
    """
    global _model
    with _model_lock:
        if _model is None:
            _model = _load(progress, cancel)
        elif progress is not None:
            progress(1.0, f"{D.name} loaded")
        return _model


def _read_both(found: files.ConvertedFiles, progress: Share, cancel: Cancel | None):
    """The tokenizer and the weights, both checked against the manifest. The weights' hash runs
    on a thread while the tokenizer is read (which holds the GIL for about 1.5 s)."""
    pending = read_weights(found, progress.part(0.0, 0.4), cancel)
    progress(0.4, f"loading {D.name}: its 262,144-piece vocabulary")
    tok = load_tokenizer(found.tokenizer, found.tokenizer_sha256)
    progress(0.95, f"loading {D.name}: checking the weights' SHA-256")
    return tok, pending.verified(cancel)


def _load(progress: Progress | None, cancel: Cancel | None) -> Gemma3:
    ok, message = files.is_available()
    if not ok:
        raise files.GemmaFilesError(message)
    share = Share(progress)
    converting = share.part(0.0, 0.8)
    ready, _ = files.read_manifest(files.model_cache_dir())
    found = convert.prepare(None if ready is not None else converting, cancel)
    try:
        tok, tensors = _read_both(found, share if ready is not None else share.part(0.8, 1.0), cancel)
    except (WeightsAltered, TokenizerFileError) as err:
        which = files.TOKENIZER_FILE if isinstance(err, TokenizerFileError) else files.WEIGHTS_FILE
        found = convert.prepare(converting, cancel, rebuild=f"was altered ({which}: {err})")
        try:
            tok, tensors = _read_both(found, share.part(0.8, 1.0), cancel)
        except (WeightsAltered, TokenizerFileError) as again:
            raise files.GemmaFilesError(f"the converted copy in {found.folder} changed again while "
                                        f"loading ({again}); close other programs using it") from None
    if progress is not None:
        progress(1.0, f"{D.name} loaded")
    return Gemma3(tensors, GemmaTokenizer(tok), found.notice)
