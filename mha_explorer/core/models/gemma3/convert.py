"""Gemma 3 270M's GGUF chunks -> float32 safetensors and tokenizer.json in the cache (no torch).

The shared decoder core converts it (``decoder.conversion``: the file read and checked
against its pinned SHA-256, tensors dequantised one by one, the outputs checked against
their pinned hashes, a manifest last); this module says what is Gemma's own: the four
chunks joined, what the metadata must say, the tensors' names, and the tokenizer built
from the vocabulary (``vocab``). About 15 s here, once per source file and converter version.

Norm weights are kept as the file stores them: GGUF conversions of Gemma add 1 to
each RMSNorm weight, so the stored value is the whole scale (x / rms · scale);
transformers' weight is scale − 1.
"""

from __future__ import annotations

from mha_explorer.core.models.decoder.conversion import Conversion
from mha_explorer.core.models.gemma3 import files
from mha_explorer.core.models.gemma3.description import D_FF, GEMMA3_270M
from mha_explorer.core.models.gemma3.vocab import tokenizer_json

_D = GEMMA3_270M
CONVERSION = Conversion(
    record=files.RECORD,
    source_bytes=files.GGUF_BYTES,
    source_paths=lambda: files.chunk_paths(),
    metadata={
        "general.architecture": "gemma3", "gemma3.block_count": _D.layers,
        "gemma3.embedding_length": _D.d_model,
        "gemma3.feed_forward_length": D_FF, "gemma3.attention.head_count": _D.heads,
        "gemma3.attention.head_count_kv": _D.kv_heads, "gemma3.attention.key_length": _D.head_dim,
        "gemma3.attention.value_length": _D.head_dim, "gemma3.attention.sliding_window": _D.window,
        "gemma3.rope.freq_base": _D.rope_bases["global"], "tokenizer.ggml.bos_token_id": _D.decoder.bos_id,
    },
    # GGUF tensor name -> ours (layers 0-based); norms hold the whole scale, see the module's docstring
    layer_names={
        "attn_norm": "attn_norm.scale", "attn_q": "q_proj.weight", "attn_k": "k_proj.weight",
        "attn_v": "v_proj.weight", "attn_q_norm": "q_norm.scale", "attn_k_norm": "k_norm.scale",
        "attn_output": "o_proj.weight", "post_attention_norm": "post_attn_norm.scale",
        "ffn_norm": "mlp_norm.scale", "ffn_gate": "gate_proj.weight", "ffn_up": "up_proj.weight",
        "ffn_down": "down_proj.weight", "post_ffw_norm": "post_mlp_norm.scale",
    },
    global_names={"token_embd.weight": "embed.weight", "output_norm.weight": "norm.scale"},
    tokenizer_json=tokenizer_json,
    error=files.GemmaFilesError,
)

prepare = CONVERSION.prepare
convert = CONVERSION.convert
read_chunks = CONVERSION.read_source
check_metadata = CONVERSION.check_metadata
expected_shapes = CONVERSION.expected_shapes
