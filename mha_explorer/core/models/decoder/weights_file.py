"""Reading the converted weights into the app's own memory and proving them unaltered.

The file is the safetensors layout the conversion wrote: an 8-byte header length,
a JSON header, then float32 tensors back to back. It is read with plain reads into
one buffer of the app's own memory, and the tensors are views of that buffer. (The
safetensors library maps the file instead, and a mapped file cut short under a
running app crashes it with SIGBUS; its pread backend takes seconds longer. The
tests check these tensors equal ``safetensors.torch.load_file``'s.)

The SHA-256 of exactly the bytes read is compared with the pinned one the manifest records.
Hashing runs on a thread of its own, slice by slice as the file is read, and goes on while the
caller reads the tokenizer.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import struct
import threading

import torch

from mha_explorer.core.models.decoder.converted import ConvertedFiles
from mha_explorer.core.models.progress import Cancel, Progress, stop_if_asked

READ_SLICE = 32 << 20  # bytes read between two looks at cancel (about 30 ms)
WAIT_SLICE = 0.05  # seconds between two looks at cancel while the hash finishes
MAX_HEADER = 100 << 20


class WeightsAltered(ValueError):
    """The cached weights are not the bytes the conversion wrote."""


def _header(handle) -> tuple[bytes, list[tuple[str, list[int], int, int]]]:
    """The file's first bytes (length + JSON header) and (name, shape, start, end) of every
    tensor in file order; WeightsAltered unless float32 tensors tile the data exactly."""
    prefix = handle.read(8)
    if len(prefix) != 8:
        raise WeightsAltered("it is cut short")
    (n,) = struct.unpack("<Q", prefix)
    if n > MAX_HEADER:
        raise WeightsAltered("its header is not a safetensors header")
    text = handle.read(n)
    try:
        header = json.loads(text)
        entries = sorted((v["data_offsets"][0], v["data_offsets"][1], k, [int(d) for d in v["shape"]],
                          v["dtype"]) for k, v in header.items() if k != "__metadata__")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise WeightsAltered("its header is not a safetensors header") from None
    end = 0
    for start, stop, _name, shape, dtype in entries:
        if start != end or dtype != "F32" or stop - start != 4 * math.prod(shape):
            raise WeightsAltered("its tensors do not tile the file")
        end = stop
    return prefix + text, [(name, shape, start, stop) for start, stop, name, shape, _ in entries]


class PendingWeights:
    """Tensors being read while a thread hashes what has been read so far; ``verified`` hands
    them out once the whole file's hash matched. The hash of each slice runs while the next is
    read (hashing a large buffer releases the GIL), so a load costs the longer of the two, not
    their sum."""

    def __init__(self, head: bytes, raw: memoryview, expected: str):
        self._expected = expected
        self._digest: str | None = None
        self._tensors: dict[str, torch.Tensor] = {}
        self._read: queue.SimpleQueue[int | None] = queue.SimpleQueue()  # bytes read so far; None: stop
        self._thread = threading.Thread(target=self._hash, args=(head, raw), name="weights-hash",
                                        daemon=True)
        self._thread.start()

    def _hash(self, head: bytes, raw: memoryview) -> None:
        digest = hashlib.sha256(head)
        done = 0
        while (upto := self._read.get()) is not None:
            digest.update(raw[done:upto])
            done = upto
        self._digest = digest.hexdigest() if done == len(raw) else None

    def read_up_to(self, at: int) -> None:
        self._read.put(at)

    def finish(self, tensors: dict[str, torch.Tensor] | None) -> None:
        """The reading ended: with every tensor, or (None) without them."""
        self._tensors = tensors or {}
        self._read.put(None)

    def verified(self, cancel: Cancel | None = None) -> dict[str, torch.Tensor]:
        while self._thread.is_alive():
            stop_if_asked(cancel)
            self._thread.join(WAIT_SLICE)
        if self._digest != self._expected:
            raise WeightsAltered("its SHA-256 no longer matches the one recorded when it was written")
        return self._tensors


def read_weights(found: ConvertedFiles, name: str, progress: Progress | None = None,
                 cancel: Cancel | None = None) -> PendingWeights:
    """Read the converted copy's tensors, hashing them on a thread as they come; ``verified``
    ends the check. ``name``: the model's, for the progress words."""
    with open(found.weights, "rb", buffering=0) as handle:
        head, order = _header(handle)
        size = order[-1][3] if order else 0
        if os.fstat(handle.fileno()).st_size != len(head) + size:
            raise WeightsAltered("its size does not match its header")
        data = torch.empty(size, dtype=torch.uint8)  # every tensor's bytes, in file order
        raw = memoryview(data.numpy())
        pending = PendingWeights(head, raw, found.weights_sha256)
        at = 0
        try:
            while at < size:
                stop_if_asked(cancel)
                got = handle.readinto(raw[at:at + READ_SLICE])
                if not got:
                    raise WeightsAltered("it is cut short")
                at += got
                pending.read_up_to(at)
                if progress is not None:
                    progress(at / max(size, 1), f"loading {name}: {at // 10**6} of {size // 10**6} MB")
        except BaseException:
            pending.finish(None)  # the hash thread ends too
            raise
    # each tensor's bytes seen as float32 in its own shape, e.g. [vocab, D]: views, no copy
    tensors = {key: data[start:stop].view(torch.float32).view(shape) for key, shape, start, stop in order}
    pending.finish(tensors)
    return pending
