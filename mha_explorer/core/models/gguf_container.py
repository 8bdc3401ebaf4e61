"""The layout of a GGUF file held in memory: its metadata and where each tensor's
bytes are (no torch; numpy is not needed either).

The ``gguf`` package reads the same layout, but it wraps each of a vocabulary's
262,144 strings in numpy views, which takes about half a minute and cannot be
interrupted; this reader takes well under a second and leaves dequantising to
``gguf.quants``. It follows the GGUF v2/v3 layout: a header, key/value metadata,
tensor descriptions, then the tensor data from an aligned offset.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# metadata value types, as numbered by the format
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GGUFLayoutError(ValueError):
    """The bytes are not a GGUF file this reader understands."""


@dataclass(frozen=True)
class TensorEntry:
    """One tensor as the file describes it; ``dims`` innermost first, as GGUF stores them."""

    name: str
    dims: tuple[int, ...]
    ggml_type: int
    offset: int  # from the start of the file

    @property
    def shape(self) -> tuple[int, ...]:
        """The numpy / torch shape (outermost first): [out, in] for a weight matrix."""
        return tuple(reversed(self.dims))

    @property
    def elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n


@dataclass(frozen=True)
class GGUFLayout:
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorEntry, ...]
    data_start: int


class _Cursor:
    def __init__(self, buf: memoryview):
        self.buf, self.pos = buf, 0

    def take(self, fmt: str) -> Any:
        try:
            (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        except struct.error:
            raise GGUFLayoutError(f"the file ends early (at byte {self.pos:,})") from None
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.take("<Q")
        end = self.pos + n
        if end > len(self.buf):
            raise GGUFLayoutError(f"the file ends early (a string at byte {self.pos:,})")
        text = bytes(self.buf[self.pos:end]).decode("utf-8", errors="surrogateescape")
        self.pos = end
        return text

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item_kind, count = self.take("<I"), self.take("<Q")
            if item_kind in _SCALARS:
                fmt = _SCALARS[item_kind]
                size = struct.calcsize(fmt) * count
                if self.pos + size > len(self.buf):
                    raise GGUFLayoutError(f"the file ends early (an array at byte {self.pos:,})")
                values = list(struct.unpack_from(f"<{count}{fmt[1]}", self.buf, self.pos))
                self.pos += size
                return values
            return [self.value(item_kind) for _ in range(count)]
        raise GGUFLayoutError(f"unknown metadata value type {kind} at byte {self.pos:,}")


def read_layout(data: bytes | bytearray | memoryview) -> GGUFLayout:
    """Metadata and tensor descriptions of the GGUF file whose bytes are ``data``."""
    cur = _Cursor(memoryview(data))
    if bytes(cur.buf[:4]) != MAGIC:
        raise GGUFLayoutError("not a GGUF file (its first bytes are not 'GGUF')")
    cur.pos = 4
    version = cur.take("<I")
    if version not in (2, 3):
        raise GGUFLayoutError(f"GGUF version {version} is not supported (2 or 3 are)")
    n_tensors, n_keys = cur.take("<Q"), cur.take("<Q")
    metadata: dict[str, Any] = {}
    for _ in range(n_keys):
        key = cur.string()
        metadata[key] = cur.value(cur.take("<I"))
    raw = []
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.take("<I")
        dims = tuple(cur.take("<Q") for _ in range(n_dims))
        raw.append((name, dims, cur.take("<I"), cur.take("<Q")))
    alignment = int(metadata.get("general.alignment", DEFAULT_ALIGNMENT))
    data_start = -(-cur.pos // alignment) * alignment  # the next multiple of the alignment
    tensors = tuple(TensorEntry(name, dims, kind, data_start + offset) for name, dims, kind, offset in raw)
    return GGUFLayout(version, metadata, tensors, data_start)
