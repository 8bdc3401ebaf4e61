"""Attention layers of real models, with their bias and key/value heads as shipped.

Each preset sets the layer's architecture (heads, bias, causal, positions, the
sliding window and the latent-attention sizes) and the dtype its released weights
are stored in, so its byte counts (the KV cache above all) are the model's own;
batch, sequence length and the rest stay as the person chose them. ``layers`` is the model's layer count, for
whole-model KV-cache figures. ``source`` says where the numbers come from and which
configuration fields need care.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.specs.weights import RANDOM


@dataclass(frozen=True)
class Preset:
    key: str
    name: str
    d_model: int
    n_heads: int
    n_kv_heads: int
    bias: bool
    causal: bool
    source: str
    positions: str = "none"  # what the real model uses: sinusoidal, learned or rope
    layers: int = 1  # num_hidden_layers
    window: int | None = None  # sliding window, where the model has one
    mla: bool = False
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None  # None: a plain query projection
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    dtype: str = "float32"  # as the released weights are stored (config.json's torch_dtype)
    rope_base: int | None = None  # rope_theta, where it is not RoPE's usual 10,000
    head_dim: int | None = None  # where a head is not D / H wide
    norms: bool = False  # RMSNorm on the input and on each head's q and k
    input_norm: bool = False  # RMSNorm on the input alone

    def apply(self, cfg: MHAConfig) -> MHAConfig:
        # MHA presets leave key/value heads following the head count; every preset sets
        # the whole mask (none has a stride or global tokens) and every family's fields, so
        # none lingers from before, and applying one never fails on what it did not set
        kv = None if self.n_kv_heads == self.n_heads else self.n_kv_heads
        # another model's shape: no trained layer's weights (a model's or a Lab run's) fit it
        return cfg.replace(weights=RANDOM, weights_path=None, d_model=self.d_model, n_heads=self.n_heads,
                           n_kv_heads=kv,
                           bias=self.bias, causal=self.causal, positions=self.positions,
                           window=self.window, stride=None, global_tokens=0, mla=self.mla,
                           kv_lora_rank=self.kv_lora_rank,
                           q_lora_rank=self.q_lora_rank, qk_nope_head_dim=self.qk_nope_head_dim,
                           qk_rope_head_dim=self.qk_rope_head_dim, v_head_dim=self.v_head_dim,
                           dtype=self.dtype, rope_base=self.rope_base, head_dim=self.head_dim,
                           norms=self.norms, input_norm=self.input_norm)


def model_preset(model: ModelDescription, dtype: str = "bfloat16") -> Preset:
    """A trained model's attention layer as a preset (its first layer's window and RoPE base),
    read from its description: random weights in its exact shape."""
    kind = "MQA" if model.kv_heads == 1 else "GQA" if model.kv_heads < model.heads else "MHA"
    wide = model.head_dim * model.heads != model.d_model
    return Preset(
        model.key, f"{model.name} ({kind})", model.d_model, model.heads, model.kv_heads, model.bias,
        model.causal, f"{model.name}'s own description: {'; '.join(model.notes) or model.norm}",
        positions="rope" if model.positions == "rope" else "learned", layers=model.layers,
        window=model.layer_window(1), dtype=dtype,
        rope_base=int(model.rope_base(1)) if model.positions == "rope" else None,
        head_dim=model.head_dim if wide else None, norms=model.qk_norm, input_norm=model.decoder is not None)


PRESETS: dict[str, Preset] = {p.key: p for p in (
    Preset("transformer-base", "Transformer base (2017)", 512, 8, 8, False, False,
           "Vaswani et al.: d_model 512, h 8, d_k 64, N = 6 layers, sinusoidal positions; "
           "the tensor2tensor layers have no bias", positions="sinusoidal", layers=6),
    Preset("gpt2", "GPT-2 small", 768, 12, 12, True, True,
           "n_embd 768, n_head 12, n_layer 12, learned positions; c_attn Conv1D 768→2304 and "
           "c_proj 768→768, both with bias", positions="learned", layers=12),
    Preset("gpt2-medium", "GPT-2 medium", 1024, 16, 16, True, True, "n_embd 1024, n_head 16, n_layer 24",
           positions="learned", layers=24),
    Preset("gpt2-large", "GPT-2 large", 1280, 20, 20, True, True, "n_embd 1280, n_head 20, n_layer 36",
           positions="learned", layers=36),
    Preset("gpt2-xl", "GPT-2 XL", 1600, 25, 25, True, True, "n_embd 1600, n_head 25 (d_k 64), n_layer 48",
           positions="learned", layers=48),
    Preset("bert-base", "BERT base", 768, 12, 12, True, False,
           "hidden_size 768, 12 heads, 12 layers, learned positions; query/key/value/output.dense "
           "all with bias", positions="learned", layers=12),
    Preset("bert-large", "BERT large", 1024, 16, 16, True, False, "hidden_size 1024, 16 heads, 24 layers",
           positions="learned", layers=24),
    Preset("gpt3-175b", "GPT-3 175B", 12288, 96, 96, True, True,
           "Brown et al. table 2.1: d_model 12288, 96 heads of 128, 96 layers; GPT-2 style biases "
           "and learned positions", positions="learned", layers=96),
    Preset("llama2-7b", "LLaMA-2 7B", 4096, 32, 32, False, True,
           "hidden_size 4096, 32 heads, num_key_value_heads 32, 32 layers, RoPE; q/k/v/o_proj "
           "without bias", positions="rope", layers=32, dtype="float16"),
    Preset("llama2-70b", "LLaMA-2 70B (GQA)", 8192, 64, 8, False, True,
           "hidden_size 8192, 64 heads, num_key_value_heads 8, 80 layers, RoPE: k_proj/v_proj "
           "are 8192→1024", positions="rope", layers=80, dtype="float16"),
    Preset("llama3-8b", "LLaMA-3 8B (GQA)", 4096, 32, 8, False, True,
           "hidden_size 4096, 32 heads, num_key_value_heads 8, 32 layers, RoPE (rope_theta 500000): "
           "k_proj/v_proj are 4096→1024", positions="rope", layers=32, dtype="bfloat16", rope_base=500_000),
    Preset("mistral-7b", "Mistral 7B v0.1 (GQA, sliding window)", 4096, 32, 8, False, True,
           "hidden_size 4096, 32 heads, num_key_value_heads 8, head_dim 128, 32 layers, RoPE, "
           "sliding_window 4096; no bias", positions="rope", layers=32, window=4096, dtype="bfloat16"),
    Preset("falcon-7b", "Falcon 7B (MQA)", 4544, 71, 1, False, True,
           "hidden_size 4544, 71 heads of 64, 32 layers, rotary positions, multi_query true: one "
           "K/V head, so query_key_value is 4544→4672; there is no num_kv_heads field, and reading "
           "the head count alone would wrongly give 71 K/V heads; bias false",
           positions="rope", layers=32, dtype="bfloat16"),
    Preset("deepseek-v2-lite", "DeepSeek-V2-Lite (MLA)", 2048, 16, 16, False, True,
           "hidden_size 2048, 16 heads, 27 layers, q_lora_rank null (a plain q_proj), "
           "kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, "
           "attention_bias false, RoPE on the decoupled 64", positions="rope", layers=27, mla=True,
           kv_lora_rank=512, q_lora_rank=None, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
           dtype="bfloat16"),
    Preset("deepseek-v3", "DeepSeek-V3 (MLA)", 7168, 128, 128, False, True,
           "hidden_size 7168, 128 heads, 61 layers, q_lora_rank 1536, kv_lora_rank 512, "
           "qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, attention_bias false; "
           "d_model / heads = 56 is not the head width here, the MLA sizes are",
           positions="rope", layers=61, mla=True, kv_lora_rank=512, q_lora_rank=1536,
           qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, dtype="bfloat16"),
    *(model_preset(m) for m in MODELS.values() if m.causal),  # each trained decoder's own shape
)}


def get_preset(key: str) -> Preset:
    try:
        return PRESETS[key]
    except KeyError:
        raise ConfigError(
            "preset", f"unknown preset '{key}'; choose one of {', '.join(PRESETS)}"
        ) from None
