"""Gemma 3 270M's GGUF chunks -> float32 safetensors and tokenizer.json in the cache (no torch).

``prepare`` gives the converted copy, converting first when there is none or it
does not match its manifest.

Done once per source file and converter version (about 15 s here):

1. read the four chunks into memory, hashing them; refuse unless the joined bytes
   have the pinned SHA-256 (the bytes hashed are the bytes converted);
2. check the file's metadata against ``GEMMA3_270M`` (a different model would be
   silently wrong);
3. dequantise each tensor with ``gguf.quants`` (Q4_K, Q5_0, Q6_K, Q8_0 -> float32)
   and stream it into model.safetensors, tensor by tensor, so memory holds one
   tensor at a time and Cancel is seen within a fraction of a second;
4. build the tokenizer from the vocabulary and store it as tokenizer.json (about
   4 s, in steps that cannot all be interrupted);
5. write manifest.json (sizes and SHA-256 of both files) last: without it, the
   copy does not count.

Norm weights are kept as the file stores them: GGUF conversions of Gemma add 1 to
each RMSNorm weight, so the stored value is the whole scale (x / rms · scale);
transformers' weight is scale − 1.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import struct
import threading
from pathlib import Path
from typing import Any

from mha_explorer.core.models.cache_files import (
    CACHE_ENV,
    atomic_file,
    folder_lock,
    own_folder,
    remove_stale_parts,
    sha256_file,
)
from mha_explorer.core.models.gemma3 import files
from mha_explorer.core.models.gemma3.description import D_FF, GEMMA3_270M, RMS_NORM_EPS
from mha_explorer.core.models.gguf_container import GGUFLayout, TensorEntry, read_layout
from mha_explorer.core.models.progress import Cancel, Progress, Share, stop_if_asked
from mha_explorer.core.system.safe_files import describe

READ_BLOCK = 8 << 20  # bytes read (and hashed) between two looks at cancel
ROWS_PER_PIECE = 8192  # rows dequantised at once: the embedding's 262,144 rows in 32 pieces
NAME = GEMMA3_270M.name
# GGUF tensor name -> ours (layers 0-based); norms hold the whole scale, see the module's docstring
_LAYER_NAMES = {
    "attn_norm": "attn_norm.scale", "attn_q": "q_proj.weight", "attn_k": "k_proj.weight",
    "attn_v": "v_proj.weight", "attn_q_norm": "q_norm.scale", "attn_k_norm": "k_norm.scale",
    "attn_output": "o_proj.weight", "post_attention_norm": "post_attn_norm.scale",
    "ffn_norm": "mlp_norm.scale", "ffn_gate": "gate_proj.weight", "ffn_up": "up_proj.weight",
    "ffn_down": "down_proj.weight", "post_ffw_norm": "post_mlp_norm.scale",
}
_GLOBAL_NAMES = {"token_embd.weight": "embed.weight", "output_norm.weight": "norm.scale"}
_LAYER_TENSOR = re.compile(r"blk\.(\d+)\.(\w+)\.weight")


def our_name(gguf_name: str) -> str:
    if gguf_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[gguf_name]
    match = _LAYER_TENSOR.fullmatch(gguf_name)
    if match is None or match.group(2) not in _LAYER_NAMES:
        raise files.GemmaFilesError(f"the GGUF file holds a tensor the app does not know: {gguf_name}")
    return f"layers.{int(match.group(1))}.{_LAYER_NAMES[match.group(2)]}"


def expected_shapes() -> dict[str, tuple[int, ...]]:
    """Every tensor the model needs, by our name, with its float32 shape."""
    d = GEMMA3_270M
    q, kv = d.heads * d.head_dim, d.kv_heads * d.head_dim
    shapes: dict[str, tuple[int, ...]] = {"embed.weight": (d.vocab_size, d.d_model),
                                          "norm.scale": (d.d_model,)}
    for i in range(d.layers):
        p = f"layers.{i}."
        shapes.update({
            p + "attn_norm.scale": (d.d_model,), p + "q_proj.weight": (q, d.d_model),
            p + "k_proj.weight": (kv, d.d_model), p + "v_proj.weight": (kv, d.d_model),
            p + "q_norm.scale": (d.head_dim,), p + "k_norm.scale": (d.head_dim,),
            p + "o_proj.weight": (d.d_model, q), p + "post_attn_norm.scale": (d.d_model,),
            p + "mlp_norm.scale": (d.d_model,), p + "gate_proj.weight": (D_FF, d.d_model),
            p + "up_proj.weight": (D_FF, d.d_model), p + "down_proj.weight": (d.d_model, D_FF),
            p + "post_mlp_norm.scale": (d.d_model,),
        })
    return shapes


def read_chunks(paths: list[Path], progress: Progress | None = None,
                cancel: Cancel | None = None) -> bytearray:
    """The joined file in memory, after its SHA-256 matched the pinned one."""
    data = bytearray(files.GGUF_BYTES)
    view = memoryview(data)
    digest = hashlib.sha256()
    done = 0
    for path in paths:
        with open(path, "rb") as handle:
            while True:
                stop_if_asked(cancel)
                n = handle.readinto(view[done:done + READ_BLOCK])
                if not n:
                    break
                digest.update(view[done:done + n])
                done += n
                if progress is not None:
                    progress(done / len(data),
                             f"checking {NAME}'s files: {done // 10**6} of {len(data) // 10**6} MB")
    actual = digest.hexdigest()
    if done != len(data) or actual != files.GGUF_SHA256:
        raise files.GemmaFilesError(
            f"the installed chunks of {NAME} are not the pinned file (SHA-256 {actual[:12]}…, expected "
            f"{files.GGUF_SHA256[:12]}…); reinstall: {files.INSTALL_HINT}")
    return data


def check_metadata(meta: dict[str, Any]) -> None:
    """Refuse a file whose architecture differs from the description (one line naming it)."""
    d = GEMMA3_270M
    wanted = {
        "general.architecture": "gemma3", "gemma3.block_count": d.layers,
        "gemma3.embedding_length": d.d_model,
        "gemma3.feed_forward_length": D_FF, "gemma3.attention.head_count": d.heads,
        "gemma3.attention.head_count_kv": d.kv_heads, "gemma3.attention.key_length": d.head_dim,
        "gemma3.attention.value_length": d.head_dim, "gemma3.attention.sliding_window": d.window,
        "gemma3.rope.freq_base": d.rope_bases["global"], "tokenizer.ggml.bos_token_id": 2,
    }
    for key, value in wanted.items():
        if meta.get(key) != value:
            raise files.GemmaFilesError(f"the GGUF file says {key} = {meta.get(key)!r}, not {value!r}; "
                                        f"it is not {NAME}")
    eps = meta.get("gemma3.attention.layer_norm_rms_epsilon")
    if eps is None or abs(eps - RMS_NORM_EPS) > 1e-9:
        raise files.GemmaFilesError(f"the GGUF file's RMSNorm epsilon is {eps!r}, not {RMS_NORM_EPS}")
    if len(meta.get("tokenizer.ggml.tokens", ())) != d.vocab_size:
        raise files.GemmaFilesError(f"the GGUF file's vocabulary does not have {d.vocab_size:,} pieces")


def _plan(layout: GGUFLayout) -> list[tuple[str, TensorEntry]]:
    """(our name, entry) for every tensor, checked against the shapes the model needs."""
    wanted = expected_shapes()
    plan = [(our_name(entry.name), entry) for entry in layout.tensors]
    for name, entry in plan:
        if wanted.get(name) != entry.shape:
            raise files.GemmaFilesError(f"the GGUF tensor {entry.name} has shape {entry.shape}, "
                                        f"not {wanted.get(name)}")
    missing = sorted(set(wanted) - {name for name, _ in plan})
    if missing:
        raise files.GemmaFilesError(f"the GGUF file lacks {len(missing)} tensors, e.g. {missing[0]}")
    return plan


def _dequantised_pieces(data: bytearray, entry: TensorEntry, cancel: Cancel | None):
    """The tensor as float32 numpy arrays of at most ROWS_PER_PIECE rows, in order."""
    import gguf
    import numpy as np
    from gguf.quants import dequantize

    kind = gguf.GGMLQuantizationType(entry.ggml_type)
    block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
    cols = entry.dims[0]
    rows = entry.elements // cols
    row_bytes = cols // block * block_bytes
    raw = np.frombuffer(data, dtype=np.uint8, count=rows * row_bytes, offset=entry.offset)
    raw = raw.reshape(rows, row_bytes)  # [rows, bytes of one row]
    for start in range(0, rows, ROWS_PER_PIECE):
        stop_if_asked(cancel)
        piece = dequantize(raw[start:start + ROWS_PER_PIECE], kind)
        yield np.ascontiguousarray(piece, dtype="<f4").reshape(-1, cols)  # [rows in piece, cols]


def write_weights(data: bytearray, layout: GGUFLayout, path: Path, progress: Progress | None = None,
                  cancel: Cancel | None = None) -> tuple[str, int]:
    """Stream every tensor, dequantised, into the safetensors file ``path``; (SHA-256, bytes).

    The safetensors layout (8-byte header length, JSON header, raw little-endian data) is
    written here rather than by ``safetensors.numpy.save_file``, which needs every tensor in
    memory at once; the tests read it back with the safetensors library.
    """
    plan = _plan(layout)
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "source_sha256": files.GGUF_SHA256,
                                               "converter": str(files.CONVERTER_VERSION)}}
    data_bytes = 0
    for name, entry in plan:
        size = entry.elements * 4
        header[name] = {"dtype": "F32", "shape": list(entry.shape),
                        "data_offsets": [data_bytes, data_bytes + size]}
        data_bytes += size
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)  # tensor data starts 8-byte aligned
    digest = hashlib.sha256()
    written = 0
    with atomic_file(path) as out:
        for chunk in (struct.pack("<Q", len(head)), head):
            out.write(chunk)
            digest.update(chunk)
        for index, (_, entry) in enumerate(plan):
            text = f"converting {NAME}: tensor {index + 1} of {len(plan)}"
            for piece in _dequantised_pieces(data, entry, cancel):
                if progress is not None:  # per piece: the embedding alone takes seconds
                    progress(written / data_bytes, text)
                buf = memoryview(piece).cast("B")
                out.write(buf)
                digest.update(buf)
                written += len(buf)
        stop_if_asked(cancel)
        total = out.tell()
    if progress is not None:
        progress(1.0, f"converting {NAME}: {len(plan)} tensors written")
    return digest.hexdigest(), total


def write_tokenizer(meta: dict[str, Any], path: Path, progress: Progress | None = None,
                    cancel: Cancel | None = None) -> tuple[str, int]:
    from mha_explorer.core.models.gemma3.vocab import build_tokenizer, serialise

    share = Share(progress)
    tok = build_tokenizer(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"], cancel,
                          share.part(0.0, 0.6))
    stop_if_asked(cancel)
    share(0.6, "storing the tokenizer")
    data = serialise(tok).encode("utf-8")
    with atomic_file(path) as out:
        out.write(data)
    return hashlib.sha256(data).hexdigest(), len(data)


def _prefixed(progress: Progress, prefix: str) -> Progress:
    return lambda fraction, text: progress(fraction, prefix + text)


def convert(chunks: list[Path], folder: Path, progress: Progress | None = None,
            cancel: Cancel | None = None, keep: files.ConvertedFiles | None = None) -> dict[str, Any]:
    """Convert the chunks into ``folder`` (made if missing); returns the manifest written.

    ``keep``: a copy whose files are whole but one: only the file whose recorded size or
    SHA-256 it no longer has is made again (the other is checked again when loaded).
    Cancelled (from ``cancel``) or any error leaves no partial file and no manifest; a
    previous complete copy is replaced only file by file, each whole."""
    share = Share(progress)
    own_folder(folder.parent)
    own_folder(folder)
    (folder / files.MANIFEST_FILE).unlink(missing_ok=True)  # the copy counts again once rewritten
    data = read_chunks(chunks, share.part(0.0, 0.08), cancel)
    layout = read_layout(data)
    check_metadata(layout.metadata)
    if keep is not None and _still(keep.weights, keep.weights_bytes, keep.weights_sha256):
        weights = keep.weights_sha256, keep.weights_bytes
    else:
        weights = write_weights(data, layout, folder / files.WEIGHTS_FILE, share.part(0.1, 0.8), cancel)
    if keep is not None and _still(keep.tokenizer, keep.tokenizer_bytes, keep.tokenizer_sha256):
        tokenizer = keep.tokenizer_sha256, keep.tokenizer_bytes
    else:
        tokenizer = write_tokenizer(layout.metadata, folder / files.TOKENIZER_FILE,
                                    _prefixed(share.part(0.8, 1.0), f"converting {NAME}: "), cancel)
    share(1.0, f"converting {NAME}: done")
    manifest = {
        "model": GEMMA3_270M.key, "source_sha256": files.GGUF_SHA256, "converter": files.CONVERTER_VERSION,
        "files": {files.WEIGHTS_FILE: {"bytes": weights[1], "sha256": weights[0]},
                  files.TOKENIZER_FILE: {"bytes": tokenizer[1], "sha256": tokenizer[0]}},
    }
    with atomic_file(folder / files.MANIFEST_FILE) as out:
        out.write(json.dumps(manifest, indent=1).encode("utf-8"))
    remove_stale_parts(folder)
    return manifest


def _still(path: Path, size: int, sha256: str) -> bool:
    """Whether ``path`` still has the recorded size and SHA-256 (12 MB: milliseconds; the
    weights' 1 GB: about a second, against several to convert them)."""
    try:
        return path.stat().st_size == size and sha256_file(path) == sha256
    except OSError:
        return False


_prepare_lock = threading.Lock()


def prepare(progress: Progress | None = None, cancel: Cancel | None = None,
            rebuild: str | None = None) -> files.ConvertedFiles:
    """The converted copy, converting it first when it is missing or its manifest disagrees
    with the files; ``rebuild`` (what was found wrong, e.g. by a hash check on load) forces a
    new conversion. ``progress(fraction, text)`` and ``cancel()`` as in ``convert``.

    Another process converting into the same folder (the window and the command line at
    once) is waited for, and its copy used, rather than raced."""
    folder = files.model_cache_dir()
    with _prepare_lock:
        found, problem = files.read_manifest(folder)
        if found is not None and rebuild is None:
            if progress is not None:
                progress(1.0, f"{NAME}: converted copy found")
            return found
        chunks = files.chunk_paths()
        try:
            own_folder(folder.parent)
            own_folder(folder)
            with folder_lock(folder, cancel, progress, f"waiting for another program converting {NAME}"):
                if rebuild is None:
                    found, problem = files.read_manifest(folder)  # made meanwhile by the other one?
                    if found is not None:
                        return found
                notice = files.notice_for(folder, rebuild or problem) if rebuild or problem else None
                if notice and progress is not None:
                    progress(0.0, notice)
                convert(chunks, folder, progress, cancel, keep=found if rebuild else None)
        except OSError as exc:  # a full disk, a read-only or odd folder: one line with the way out
            raise files.GemmaFilesError(
                f"{NAME} cannot be converted into {folder}: {describe(exc)}; free some space or set "
                f"{CACHE_ENV} to a writable folder") from exc
        found, problem = files.read_manifest(folder)
        if found is None:  # written just now: only something outside the app changes it so fast
            raise files.GemmaFilesError(f"the converted copy in {folder} {problem} right after writing it")
        return dataclasses.replace(found, notice=notice)
