"""A tensor the engine kept where it computed it, read as float32 numpy a piece at a time.

A trace computed on a GPU keeps its tensors in the GPU's memory: copying every stage of every
batch element to the host made a run there 6-130 times slower than the attention itself, while
the views draw one batch element, one stage at a time. Indexing a held array copies only the
piece asked for (``held[b]``, ``held[b, h]``, ``held[b, h, rows]``) and returns plain numpy, so a
view reads it as it reads an array; ``np.asarray(held)`` copies the whole. The engine copies
the piece it expects to be drawn first while it runs (core/kernels/host.py).

No torch here: the views see this type, never the tensor behind it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

Key = int | slice | tuple


class HeldArray:
    """Read-only, float32, with numpy's ``shape``, ``ndim``, ``size``, ``nbytes``, ``dtype``,
    indexing, ``transpose`` and ``reshape`` (views, as in numpy). Pickled, it is the plain
    numpy array it stands for: another process reads it without torch."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(int(n) for n in shape)
        self._whole: np.ndarray | None = None

    # what the engine's subclass provides ---------------------------------------------------
    def _read(self, key: Key) -> np.ndarray:
        """``self[key]`` copied to the host as float32 numpy."""
        raise NotImplementedError

    def _derived(self, how: str, args: tuple[int, ...]) -> HeldArray:
        """A view of the same tensor: ``how`` is "transpose" or "reshape"."""
        raise NotImplementedError

    # numpy's face ---------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return 4 * self.size

    @property
    def dtype(self):
        import numpy as np

        return np.dtype(np.float32)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __getitem__(self, key: Key) -> np.ndarray:
        if self._whole is not None:  # already on the host whole: no second copy
            return self._whole[key]
        return self._read(key)

    def __array__(self, dtype=None, copy=None):
        if self._whole is None:
            self._whole = self._read(())  # kept: a second whole read copies nothing
        whole = self._whole if dtype is None else self._whole.astype(dtype, copy=False)
        return whole.copy() if copy and whole is self._whole else whole

    def transpose(self, *axes: int) -> HeldArray:
        axes = tuple(axes[0]) if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return self._derived("transpose", axes or tuple(reversed(range(self.ndim))))

    def reshape(self, *shape: int) -> HeldArray:
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self._derived("reshape", shape)

    @property
    def T(self) -> HeldArray:  # noqa: N802 - numpy's name
        return self.transpose()

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __reduce__(self):
        import numpy as np

        return np.asarray, (np.asarray(self),)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, float32)"
