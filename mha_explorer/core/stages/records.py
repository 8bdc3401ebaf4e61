"""The plain records a stage plan is made of: tensors with their shapes and strides, stages,
and parameter terms (no torch, no numbers of their own)."""

from __future__ import annotations

from dataclasses import dataclass

SOFTMAX_OPS_PER_ELEMENT = 5  # max, subtract, exp, sum, divide


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dims: tuple[str, ...]  # named dims, e.g. ("B", "H", "T", "d_k")
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    contiguous: bool
    allocates: bool  # False for a view that shares storage with an earlier tensor
    elem_bytes: int

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.elem_bytes

    def to_dict(self) -> dict:
        return {
            "name": self.name, "shape": list(self.shape), "dims": list(self.dims),
            "strides": list(self.strides), "contiguous": self.contiguous,
            "allocates": self.allocates, "bytes": self.nbytes,
        }


@dataclass(frozen=True)
class Stage:
    id: str
    title: str
    formula: str
    explanation: str
    tensors: tuple[TensorSpec, ...]
    flops: int
    notes: tuple[str, ...] = ()
    copied: int = 0  # bytes the kernels copy on the way (core.copies), beyond the tensors

    @property
    def bytes(self) -> int:
        """Memory newly allocated by this stage (views allocate nothing), the copies its
        kernels make included."""
        return sum(t.nbytes for t in self.tensors if t.allocates) + self.copied

    def tensor(self, name: str) -> TensorSpec:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {
            "id": self.id, "title": self.title, "formula": self.formula,
            "explanation": self.explanation, "tensors": [t.to_dict() for t in self.tensors],
            "flops": self.flops, "bytes": self.bytes, "notes": list(self.notes),
        }


@dataclass(frozen=True)
class ParamTerm:
    name: str
    formula: str  # symbols, e.g. "D × (Hkv·d_k)"
    numbers: str  # the same with this config's numbers, e.g. "4096 × 1024"
    count: int

    def to_dict(self) -> dict:
        return {"name": self.name, "formula": self.formula, "numbers": self.numbers, "count": self.count}


@dataclass(frozen=True)
class ParamPlan:
    terms: tuple[ParamTerm, ...]
    total: int
    total_formula: str
    single_head_total: int  # H = Hkv = 1 at the same d_model
    mha_total: int  # Hkv = H at the same d_model

    def to_dict(self) -> dict:
        return {
            "terms": [t.to_dict() for t in self.terms], "total": self.total,
            "total_formula": self.total_formula, "single_head_total": self.single_head_total,
            "mha_total": self.mha_total,
            **{t.name: t.count for t in self.terms},
        }


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size
    return tuple(reversed(strides))


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Torch's rule: row-major order, where an axis of size 1 may have any stride
    (stepping along it never happens), so moving a size-1 axis copies nothing."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True
