"""Attention layers of real models, with their bias and key/value heads as shipped.

Each preset sets only the layer's architecture; batch, sequence length, dtype and
the rest stay as the person chose them. ``source`` says where the numbers come from
and which configuration fields need care.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.config import ConfigError, MHAConfig


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

    def apply(self, cfg: MHAConfig) -> MHAConfig:
        # MHA presets leave key/value heads following the head count
        kv = None if self.n_kv_heads == self.n_heads else self.n_kv_heads
        return cfg.replace(d_model=self.d_model, n_heads=self.n_heads, n_kv_heads=kv,
                           bias=self.bias, causal=self.causal)


PRESETS: dict[str, Preset] = {p.key: p for p in (
    Preset("transformer-base", "Transformer base (2017)", 512, 8, 8, False, False,
           "Vaswani et al.: d_model 512, h 8, d_k 64; the tensor2tensor layers have no bias"),
    Preset("gpt2", "GPT-2 small", 768, 12, 12, True, True,
           "n_embd 768, n_head 12; c_attn Conv1D 768→2304 and c_proj 768→768, both with bias"),
    Preset("gpt2-medium", "GPT-2 medium", 1024, 16, 16, True, True, "n_embd 1024, n_head 16"),
    Preset("gpt2-large", "GPT-2 large", 1280, 20, 20, True, True, "n_embd 1280, n_head 20"),
    Preset("gpt2-xl", "GPT-2 XL", 1600, 25, 25, True, True, "n_embd 1600, n_head 25 (d_k 64)"),
    Preset("bert-base", "BERT base", 768, 12, 12, True, False,
           "hidden_size 768, 12 heads; query/key/value/output.dense all with bias"),
    Preset("bert-large", "BERT large", 1024, 16, 16, True, False, "hidden_size 1024, 16 heads"),
    Preset("gpt3-175b", "GPT-3 175B", 12288, 96, 96, True, True,
           "Brown et al. table 2.1: d_model 12288, 96 heads of 128; GPT-2 style biases"),
    Preset("llama2-7b", "LLaMA-2 7B", 4096, 32, 32, False, True,
           "hidden_size 4096, 32 heads, num_key_value_heads 32; q/k/v/o_proj without bias"),
    Preset("llama2-70b", "LLaMA-2 70B (GQA)", 8192, 64, 8, False, True,
           "hidden_size 8192, 64 heads, num_key_value_heads 8: k_proj/v_proj are 8192→1024"),
    Preset("llama3-8b", "LLaMA-3 8B (GQA)", 4096, 32, 8, False, True,
           "hidden_size 4096, 32 heads, num_key_value_heads 8: k_proj/v_proj are 4096→1024"),
    Preset("mistral-7b", "Mistral 7B (GQA)", 4096, 32, 8, False, True,
           "hidden_size 4096, 32 heads, num_key_value_heads 8, head_dim 128; no bias"),
    Preset("falcon-7b", "Falcon 7B (MQA)", 4544, 71, 1, False, True,
           "hidden_size 4544, 71 heads of 64, multi_query true: one K/V head, so "
           "query_key_value is 4544→4672; there is no num_kv_heads field, and reading "
           "the head count alone would wrongly give 71 K/V heads; bias false"),
)}


def get_preset(key: str) -> Preset:
    try:
        return PRESETS[key]
    except KeyError:
        raise ConfigError(
            "preset", f"unknown preset '{key}'; choose one of {', '.join(PRESETS)}"
        ) from None
