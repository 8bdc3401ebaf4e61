"""How SmolLM2-135M-Instruct's GGUF file converts (no torch): what its metadata must say, its
tensors' names, and its byte-level BPE tokenizer. The shared decoder core does the work
(``decoder.conversion``).

llama.cpp's converter stores a "llama" model's W_Q and W_K rows permuted for its own rotation,
which turns neighbouring numbers (2i, 2i + 1) of each head; the app, like transformers,
turns the halves (i, i + 64/2). The conversion puts the rows back (``unpermute_qk``), and the
tests check the attention maps against transformers reading the same file.
"""

from __future__ import annotations

from mha_explorer.core.models.decoder.byte_level import byte_level_tokenizer_json
from mha_explorer.core.models.decoder.conversion import Conversion
from mha_explorer.core.models.smollm2 import files
from mha_explorer.core.models.smollm2.description import SMOLLM2_135M

_D = SMOLLM2_135M
CONVERSION = Conversion(
    record=files.RECORD,
    source_bytes=files.GGUF_BYTES,
    source_paths=lambda: [files.gguf_path()],
    metadata={
        "general.architecture": "llama", "general.license": "apache-2.0", "llama.block_count": _D.layers,
        "llama.embedding_length": _D.d_model, "llama.feed_forward_length": _D.decoder.d_ff,
        "llama.attention.head_count": _D.heads, "llama.attention.head_count_kv": _D.kv_heads,
        "llama.rope.dimension_count": _D.head_dim, "llama.rope.freq_base": _D.rope_bases["global"],
        "llama.context_length": _D.max_tokens, "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.add_bos_token": False, "tokenizer.ggml.eos_token_id": _D.decoder.eos_id,
    },
    layer_names={
        "attn_norm": "attn_norm.scale", "attn_q": "q_proj.weight", "attn_k": "k_proj.weight",
        "attn_v": "v_proj.weight", "attn_output": "o_proj.weight", "ffn_norm": "mlp_norm.scale",
        "ffn_gate": "gate_proj.weight", "ffn_up": "up_proj.weight", "ffn_down": "down_proj.weight",
    },
    global_names={"token_embd.weight": "embed.weight", "output_norm.weight": "norm.scale"},
    tokenizer_json=byte_level_tokenizer_json,
    unpermute_qk=True,
)
