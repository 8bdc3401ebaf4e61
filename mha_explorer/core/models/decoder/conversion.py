"""A decoder's GGUF file -> float32 safetensors and tokenizer.json in the app's cache (no torch).

``Conversion.prepare`` gives the converted copy, converting first when there is none, when
it does not match its manifest, or when the manifest records files this converter never
writes. A model's package describes its conversion once (a ``Conversion``): where its GGUF
bytes are, what the file's metadata must say, the tensors' names, and how its tokenizer is
built from the metadata.

Done once per source file and converter version, holding the folder's lock:

1. remove the part files a killed conversion left (no writer of the app is at work there);
2. read the file into memory, hashing it; refuse unless it has the pinned SHA-256 (the bytes
   hashed are the bytes converted);
3. check its metadata against the model's description (a different model would be silently
   wrong);
4. dequantise each tensor with ``gguf.quants`` and stream it into model.safetensors, tensor
   by tensor, so memory holds one tensor at a time and Cancel is seen within a fraction of a
   second; Q and K stored interleaved for llama.cpp's rotation are turned back into the
   half-split layout (``unpermute_qk``);
5. build tokenizer.json from the metadata;
6. write manifest.json last: without it, the copy does not count.

Each file's SHA-256 is compared with the one pinned for this converter version before it
takes its name; a file already there with its pinned hash is kept. A Cancel, Ctrl+C, a full
disk or any error removes what this conversion made, so nothing half-made is left.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import stat
import struct
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mha_explorer.core.models.cache_files import (
    CACHE_ENV,
    atomic_file,
    folder_lock,
    own_folder,
    remove_dead_parts,
    sha256_file,
)
from mha_explorer.core.models.decoder.converted import (
    MANIFEST_FILE,
    OUTPUTS,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    CacheRecord,
    ConvertedFiles,
    ModelFilesError,
)
from mha_explorer.core.models.gguf_container import GGUFLayout, TensorEntry, read_layout
from mha_explorer.core.models.progress import Cancel, Progress, Share, stop_if_asked
from mha_explorer.core.system.safe_files import describe

READ_BLOCK = 8 << 20  # bytes read (and hashed) between two looks at cancel
ROWS_PER_PIECE = 8192  # rows dequantised at once: Gemma's 262,144 embedding rows in 32 pieces
_LAYER_TENSOR = re.compile(r"blk\.(\d+)\.(\w+)\.weight")

# tokenizer.json's bytes from the GGUF metadata: (metadata, cancel, progress) -> bytes
TokenizerJSON = Callable[..., bytes]


def unpermute_rows(rows: Any, heads: int) -> Any:
    """Q or K [heads·hd, D] from llama.cpp's interleaved rotation layout back to the half-split
    one: its converter stores each head's rows (i, hd/2 + i) as neighbours 2i and 2i + 1."""
    n, cols = rows.shape
    hd = n // heads
    return rows.reshape(heads, hd // 2, 2, cols).swapaxes(1, 2).reshape(n, cols)  # [heads, 2, hd/2, D]


@dataclass(frozen=True)
class Conversion:
    """How one model's GGUF file becomes the app's converted copy (see the module's docstring)."""

    record: CacheRecord  # the model, the source's SHA-256, the converter version, the pinned outputs
    source_bytes: int
    source_paths: Callable[[], list[Path]]  # the file's pieces in joining order (the model's error if not)
    metadata: Mapping[str, Any]  # what the file's metadata must say, key by key
    layer_names: Mapping[str, str]  # GGUF "blk.N.<name>.weight" -> "layers.N.<ours>"
    global_names: Mapping[str, str]  # GGUF name -> ours, outside the layers
    tokenizer_json: TokenizerJSON
    error: type[ModelFilesError] = ModelFilesError
    unpermute_qk: bool = False  # Q and K are stored for llama.cpp's interleaved rotation
    _lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.record.model.name

    # -- what the file must hold --------------------------------------------------------------
    def our_name(self, gguf_name: str) -> str:
        if gguf_name in self.global_names:
            return self.global_names[gguf_name]
        match = _LAYER_TENSOR.fullmatch(gguf_name)
        if match is None or match.group(2) not in self.layer_names:
            raise self.error(f"the GGUF file holds a tensor the app does not know: {gguf_name}")
        return f"layers.{int(match.group(1))}.{self.layer_names[match.group(2)]}"

    def expected_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor the model needs, by our name, with its float32 shape."""
        d = self.record.model
        layout = d.decoder
        D, q, kv, ff = d.d_model, d.heads * d.head_dim, d.kv_heads * d.head_dim, layout.d_ff
        shapes: dict[str, tuple[int, ...]] = {"embed.weight": (d.vocab_size, D), "norm.scale": (D,)}
        if not layout.tied_embeddings:
            shapes["unembed.weight"] = (d.vocab_size, D)
        for i in range(d.layers):
            p = f"layers.{i}."
            shapes.update({
                p + "attn_norm.scale": (D,), p + "q_proj.weight": (q, D), p + "k_proj.weight": (kv, D),
                p + "v_proj.weight": (kv, D), p + "o_proj.weight": (D, q), p + "mlp_norm.scale": (D,),
                p + "gate_proj.weight": (ff, D), p + "up_proj.weight": (ff, D),
                p + "down_proj.weight": (D, ff),
            })
            if d.qk_norm:
                shapes.update({p + "q_norm.scale": (d.head_dim,), p + "k_norm.scale": (d.head_dim,)})
            if layout.post_norms:
                shapes.update({p + "post_attn_norm.scale": (D,), p + "post_mlp_norm.scale": (D,)})
        return shapes

    def check_metadata(self, meta: Mapping[str, Any]) -> None:
        """Refuse a file whose architecture differs from the description (one line naming it)."""
        d = self.record.model
        for key, value in self.metadata.items():
            if meta.get(key) != value:
                raise self.error(f"the GGUF file says {key} = {meta.get(key)!r}, not {value!r}; "
                                 f"it is not {self.name}")
        arch = self.metadata["general.architecture"]
        eps = meta.get(f"{arch}.attention.layer_norm_rms_epsilon")
        if eps is None or abs(eps - d.decoder.rms_eps) > 1e-9:
            raise self.error(f"the GGUF file's RMSNorm epsilon is {eps!r}, not {d.decoder.rms_eps}")
        if len(meta.get("tokenizer.ggml.tokens", ())) != d.vocab_size:
            raise self.error(f"the GGUF file's vocabulary does not have {d.vocab_size:,} pieces")

    def _plan(self, layout: GGUFLayout) -> list[tuple[str, TensorEntry]]:
        """(our name, entry) for every tensor, checked against the shapes the model needs."""
        wanted = self.expected_shapes()
        plan = [(self.our_name(entry.name), entry) for entry in layout.tensors]
        for name, entry in plan:
            if wanted.get(name) != entry.shape:
                raise self.error(f"the GGUF tensor {entry.name} has shape {entry.shape}, "
                                 f"not {wanted.get(name)}")
        missing = sorted(set(wanted) - {name for name, _ in plan})
        if missing:
            raise self.error(f"the GGUF file lacks {len(missing)} tensors, e.g. {missing[0]}")
        return plan

    # -- reading and writing ------------------------------------------------------------------
    def read_source(self, paths: list[Path], progress: Progress | None = None,
                    cancel: Cancel | None = None) -> bytearray:
        """The file in memory (its pieces joined), after its SHA-256 matched the pinned one."""
        data = bytearray(self.source_bytes)
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
                                 f"checking {self.name}'s files: {done // 10**6} of {len(data) // 10**6} MB")
        actual, pinned = digest.hexdigest(), self.record.source_sha256
        if done != len(data) or actual != pinned:
            raise self.error(
                f"the installed GGUF file of {self.name} is not the pinned one (SHA-256 {actual[:12]}…, "
                f"expected {pinned[:12]}…); reinstall: {self.record.model.distribution.install_hint}")
        return data

    def _rows(self, data: bytearray, entry: TensorEntry, name: str, cancel: Cancel | None) -> Iterator[Any]:
        """The tensor as float32 numpy arrays of at most ROWS_PER_PIECE rows, in order (Q and K
        whole, turned back into the half-split layout, when ``unpermute_qk``)."""
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
        d = self.record.model
        heads = {"q_proj.weight": d.heads, "k_proj.weight": d.kv_heads}.get(name.split(".", 2)[-1])
        if self.unpermute_qk and heads is not None:
            stop_if_asked(cancel)
            whole = dequantize(raw, kind).reshape(rows, cols)  # [heads·hd, D], a few hundred rows
            yield np.ascontiguousarray(unpermute_rows(whole, heads), dtype="<f4")
            return
        for start in range(0, rows, ROWS_PER_PIECE):
            stop_if_asked(cancel)
            piece = dequantize(raw[start:start + ROWS_PER_PIECE], kind)
            yield np.ascontiguousarray(piece, dtype="<f4").reshape(-1, cols)  # [rows in piece, cols]

    def _refuse_unpinned(self, name: str, actual: str) -> None:
        pinned = self.record.pinned[name]
        if actual != pinned:
            raise self.error(
                f"converting {self.name} gave a {name} other than the one this converter writes "
                f"(SHA-256 {actual[:12]}…, expected {pinned[:12]}…); the libraries that convert it "
                f"(gguf, tokenizers) may differ from the tested ones: reinstall "
                f"{self.record.model.distribution.install_hint}")

    def write_weights(self, data: bytearray, layout: GGUFLayout, path: Path, progress: Progress | None = None,
                      cancel: Cancel | None = None) -> tuple[str, int]:
        """Stream every tensor, dequantised, into the safetensors file ``path``; (SHA-256, bytes).

        The safetensors layout (8-byte header length, JSON header, raw little-endian data) is
        written here rather than by ``safetensors.numpy.save_file``, which needs every tensor in
        memory at once; the tests read it back with the safetensors library."""
        plan = self._plan(layout)
        header: dict[str, Any] = {"__metadata__": {"format": "pt", "source_sha256": self.record.source_sha256,
                                                   "converter": str(self.record.version)}}
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
            for index, (name, entry) in enumerate(plan):
                text = f"converting {self.name}: tensor {index + 1} of {len(plan)}"
                for piece in self._rows(data, entry, name, cancel):
                    if progress is not None:  # per piece: an embedding alone takes seconds
                        progress(written / data_bytes, text)
                    buf = memoryview(piece).cast("B")
                    out.write(buf)
                    digest.update(buf)
                    written += len(buf)
            stop_if_asked(cancel)
            total = out.tell()
            self._refuse_unpinned(WEIGHTS_FILE, digest.hexdigest())  # before it takes the name
        if progress is not None:
            progress(1.0, f"converting {self.name}: {len(plan)} tensors written")
        return digest.hexdigest(), total

    def write_tokenizer(self, meta: Mapping[str, Any], path: Path, progress: Progress | None = None,
                        cancel: Cancel | None = None) -> tuple[str, int]:
        data = self.tokenizer_json(meta, cancel, progress)
        stop_if_asked(cancel)
        digest = hashlib.sha256(data).hexdigest()
        self._refuse_unpinned(TOKENIZER_FILE, digest)
        with atomic_file(path) as out:
            out.write(data)
        return digest, len(data)

    def _kept(self, path: Path) -> tuple[str, int] | None:
        """(SHA-256, bytes) of a regular file already at ``path`` with its pinned hash, else None
        (1 GB of weights: about a second to hash, against many to convert)."""
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                return None
            digest = sha256_file(path)
        except OSError:
            return None
        return (digest, info.st_size) if digest == self.record.pinned[path.name] else None

    def convert(self, paths: list[Path], folder: Path, progress: Progress | None = None,
                cancel: Cancel | None = None) -> dict[str, Any]:
        """Convert the file into ``folder`` (made if missing); returns the manifest written.

        A file already there with its pinned SHA-256 is kept. Cancelled (from ``cancel``) or
        any error removes the files this call wrote and leaves no part file and no manifest."""
        share = Share(progress)
        own_folder(folder.parent)
        own_folder(folder)
        (folder / MANIFEST_FILE).unlink(missing_ok=True)  # the copy counts again once rewritten
        made: list[Path] = []
        try:
            data = self.read_source(paths, share.part(0.0, 0.08), cancel)
            layout = read_layout(data)
            self.check_metadata(layout.metadata)
            weights = self._kept(folder / WEIGHTS_FILE)
            if weights is None:
                made.append(folder / WEIGHTS_FILE)
                weights = self.write_weights(data, layout, folder / WEIGHTS_FILE, share.part(0.1, 0.8),
                                             cancel)
            del data  # the file's bytes: the tokenizer needs only the metadata read from them
            tokenizer = self._kept(folder / TOKENIZER_FILE)
            if tokenizer is None:
                made.append(folder / TOKENIZER_FILE)
                tokenizer = self.write_tokenizer(layout.metadata, folder / TOKENIZER_FILE,
                                                 _prefixed(share.part(0.8, 1.0), f"converting {self.name}: "),
                                                 cancel)
            share(1.0, f"converting {self.name}: done")
            manifest = {
                "model": self.record.model.key, "source_sha256": self.record.source_sha256,
                "converter": self.record.version,
                "files": {WEIGHTS_FILE: {"bytes": weights[1], "sha256": weights[0]},
                          TOKENIZER_FILE: {"bytes": tokenizer[1], "sha256": tokenizer[0]}},
            }
            with atomic_file(folder / MANIFEST_FILE) as out:
                out.write(json.dumps(manifest, indent=1).encode("utf-8"))
        except BaseException:
            for path in made:  # what this call wrote, whole but without a manifest: nothing half-made
                _remove_regular(path)
            raise
        return manifest

    # -- the converted copy ---------------------------------------------------------------------
    def usable(self, folder: Path) -> tuple[ConvertedFiles | None, str | None]:
        """The manifest's copy when every file has its recorded size and the pinned SHA-256 is
        what it records; else (None, what is wrong), or (None, None) when nothing is there."""
        found, problem = self.record.read_manifest(folder)
        if found is not None:
            problem = self.record.forged(found)
            if problem is not None:
                found = None
        return found, problem

    def prepare(self, progress: Progress | None = None, cancel: Cancel | None = None,
                rebuild: str | None = None) -> ConvertedFiles:
        """The converted copy, converting it first when it is missing or wrong (see ``usable``);
        ``rebuild`` (what was found wrong, e.g. by a hash check on load) forces a new conversion.
        ``progress(fraction, text)`` and ``cancel()`` as in ``convert``.

        Another process converting into the same folder (the window and the command line at
        once) is waited for, and its copy used, rather than raced."""
        folder = self.record.folder()
        with self._lock:
            found, problem = self.usable(folder)
            if found is not None and rebuild is None:
                if progress is not None:
                    progress(1.0, f"{self.name}: converted copy found")
                return found
            paths = self.source_paths()
            notice = None
            try:
                own_folder(folder.parent)
                own_folder(folder)
                waiting = f"waiting for another program converting {self.name}"
                with folder_lock(folder, cancel, progress, waiting):
                    if rebuild is None:
                        found, problem = self.usable(folder)  # made meanwhile by the other one?
                        if found is not None:
                            return found
                    notice = self.record.notice(folder, rebuild or problem) if rebuild or problem else None
                    if notice and progress is not None:
                        progress(0.0, notice)
                    remove_dead_parts(folder, (*OUTPUTS, MANIFEST_FILE))  # no writer is at work here now
                    self.convert(paths, folder, progress, cancel)
            except OSError as exc:  # a full disk, a read-only or odd folder: one line with the way out
                raise self.error(
                    f"{self.name} cannot be converted into {folder}: {describe(exc)}; free some space or set "
                    f"{CACHE_ENV} to a writable folder") from exc
            found, problem = self.usable(folder)
            if found is None:  # written just now: only something outside the app changes it so fast
                raise self.error(f"the converted copy in {folder} {problem} right after writing it")
            return dataclasses.replace(found, notice=notice)


def _prefixed(progress: Progress, prefix: str) -> Progress:
    return lambda fraction, text: progress(fraction, prefix + text)


def _remove_regular(path: Path) -> None:
    """Remove ``path`` if it is a regular file (a link put there meanwhile is not ours)."""
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)
    except OSError:
        pass
