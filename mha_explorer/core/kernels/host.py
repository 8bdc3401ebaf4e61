"""What one engine run hands to the host, and the one function every copy to it goes through.

On the CPU a float32 tensor is handed over as numpy sharing its memory: nothing is copied.
Anywhere else (a GPU, or a float16/bfloat16 tensor that must become float32) a kept tensor
stays where it was computed as a HeldArray (core/stages/held.py), and only pieces of it cross:

- while the run goes on, the batch element the views draw first (the request's), for every
  tensor whose piece is small enough to cross in well under a millisecond, copied on a stream
  of its own into pinned memory, behind the work that made it (the first read waits for it);
- anything else (another batch element, a long sequence's attention maps) when a view indexes it.
"""

from __future__ import annotations

import operator

import numpy as np
import torch

from mha_explorer.core.stages.held import HeldArray, Key

# a piece up to this size is copied while the run goes on (about 0.7 ms over a 25 GB/s link);
# a larger one (attention maps of a long sequence) when a view reads it
EARLY_COPY_MAX_BYTES = 16 << 20


def copy_to_host(t: torch.Tensor, wait: bool = True) -> torch.Tensor:
    """``t`` as float32 in the host's memory: every crossing to the host goes through here.
    A CPU float32 tensor is returned as it is. ``wait=False`` on a GPU: an asynchronous copy
    into pinned memory, complete once the stream it was issued on has reached it."""
    t = t.detach()
    if t.device.type == "cpu":
        return t.to(torch.float32)  # itself when already float32
    if wait:
        return t.to("cpu", torch.float32)
    out = torch.empty(t.shape, dtype=torch.float32, pin_memory=True)  # from torch's pinned cache
    return out.copy_(t, non_blocking=True)  # on the current stream


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """float32 numpy of ``t``, now (a sum, a norm, a small mask: not a kept tensor)."""
    return copy_to_host(t).numpy()


class DeviceArray(HeldArray):
    """A kept tensor on its device; ``early`` holds host copies of some batch elements
    (by index on the first axis): those the run copied, valid once ``copies`` has waited for
    them, and those a view has read since."""

    def __init__(self, tensor: torch.Tensor, copies: HostCopies,
                 early: dict[int, np.ndarray] | None = None) -> None:
        super().__init__(tuple(tensor.shape))
        self._tensor = tensor
        self._copies = copies
        self._early = early or {}

    def _element(self, key: tuple) -> int | None:
        """The batch element ``key`` reads within (its first index), or None."""
        if not key or isinstance(key[0], bool | slice | np.ndarray | list):
            return None
        try:
            i = operator.index(key[0])
        except TypeError:
            return None
        return i + self.shape[0] if i < 0 else i

    def _read(self, key: Key) -> np.ndarray:
        """A read within one batch element copies that element once (views read the same one
        again and again: its maps, then their statistics); any other read, just itself."""
        key = key if isinstance(key, tuple) else (key,)
        i = self._element(key)
        if i is None or not 0 <= i < self.shape[0]:
            return copy_to_host(self._tensor[key]).numpy()
        if i in self._early:
            self._copies.wait()
        else:
            self._early[i] = copy_to_host(self._tensor[i]).numpy()
        # a view of one lasting array, so what remembers an array by its memory finds it again
        return self._early[i][key[1:]]

    def _derived(self, how: str, args: tuple[int, ...]) -> HeldArray:
        if how == "transpose":
            tensor = self._tensor.permute(*args)
            keeps_batch = args[0] == 0
        else:
            tensor = self._tensor.reshape(*args)
            keeps_batch = bool(args) and args[0] == self.shape[0]
        early = {}
        if keeps_batch:  # the host's pieces read the same way, as views (nothing is read yet)
            for i, piece in self._early.items():
                if how == "transpose":
                    early[i] = piece.transpose(*(a - 1 for a in args[1:]))
                elif piece.flags.c_contiguous:
                    early[i] = piece.reshape(args[1:])
        return DeviceArray(tensor, self._copies, early)


class HostCopies:
    """One run's crossings: ``keep(t)`` for each tensor the trace keeps; ``wait()``, before
    the first read of what it copied. ``shown``: the index on the kept tensors' first axis of
    the batch element the views draw first (None: none of them)."""

    def __init__(self, device: str, shown: int | None) -> None:
        self.shown = shown
        self._stream = torch.cuda.Stream() if device == "cuda" else None
        self._pending = False

    def keep(self, t: torch.Tensor) -> np.ndarray | HeldArray:
        t = t.detach()
        if t.device.type == "cpu" and t.dtype == torch.float32:
            return t.numpy()  # shared, as it always was: nothing to copy
        early = {}
        i = self.shown
        if i is not None and t.ndim and i < t.shape[0] and t[i].numel() * 4 <= EARLY_COPY_MAX_BYTES:
            early[i] = self._start(t[i]).numpy()  # its memory, not yet read
        return DeviceArray(t, self, early)

    def _start(self, piece: torch.Tensor) -> torch.Tensor:
        if self._stream is None:  # the CPU: a float32 copy, made now
            return copy_to_host(piece)
        made = torch.cuda.current_stream()
        self._stream.wait_stream(made)  # behind the work that made the piece, not before it
        with torch.cuda.stream(self._stream):
            host = copy_to_host(piece, wait=False)
        piece.record_stream(self._stream)  # its memory is read on the copy stream too
        self._pending = True
        return host

    def wait(self) -> None:
        """Every early copy is on the host (a reader's first wait; later ones return at once)."""
        if self._pending:
            self._stream.synchronize()
            self._pending = False
