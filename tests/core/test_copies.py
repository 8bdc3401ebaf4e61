"""The copies core.copies names are the ones torch makes: every aten call of the
layer's steps is watched, and each clone is matched to a named copy."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from mha_explorer.core.variants.grouped.copies import kernel_copies

COPYING = ("aten.clone", "aten.copy_", "aten.contiguous")


class Clones(TorchDispatchMode):
    """Elements of every tensor an aten clone/copy makes, in call order."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[int] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if str(func).startswith(COPYING):
            self.made.append(out.numel())
        return out


def measured(B, T, S, H, Hkv, dk) -> dict[str, list[int]]:
    """Run the layer's attention steps as the engine writes them; the clones per stage."""
    q = torch.randn(B, T, H * dk)  # [B, T, D]
    k = torch.randn(B, S, Hkv * dk)  # [B, S, Hkv·d_k]
    v = torch.randn(B, S, Hkv * dk)  # [B, S, Hkv·d_k]
    qt = q.view(B, T, H, dk).transpose(1, 2)  # [B, H, T, d_k]
    kt = k.view(B, S, Hkv, dk).transpose(1, 2)  # [B, Hkv, S, d_k]
    vt = v.view(B, S, Hkv, dk).transpose(1, 2)  # [B, Hkv, S, d_k]
    found = {}
    with Clones() as watch:
        k_rep = kt.repeat_interleave(H // Hkv, dim=1) if Hkv != H else kt  # [B, H, S, d_k]
        scores = qt @ k_rep.transpose(-2, -1)  # [B, H, T, S]
    found["scores"] = watch.made
    weights = torch.softmax(scores, dim=-1)
    with Clones() as watch:
        v_rep = vt.repeat_interleave(H // Hkv, dim=1) if Hkv != H else vt  # [B, H, S, d_k]
        ctx = weights @ v_rep  # [B, H, T, d_k]
    found["weighted_sum"] = watch.made
    with Clones() as watch:
        ctx.transpose(1, 2).contiguous().view(B, T, H * dk)  # [B, T, D]
    found["merge"] = watch.made
    return found


SHAPES = [(B, T, S, H, Hkv) for B, T, S, (H, Hkv) in itertools.product(
    (1, 2), (1, 3), (1, 4), ((1, 1), (4, 4), (4, 2), (4, 1)))]


@pytest.mark.parametrize("B,T,S,H,Hkv", SHAPES)
def test_every_copy_torch_makes_is_named_and_nothing_else(B, T, S, H, Hkv):
    dk = 8
    seen = measured(B, T, S, H, Hkv, dk)
    named = kernel_copies(batch=B, T=T, S=S, H=H, Hkv=Hkv, d_k=dk)
    for stage in ("scores", "weighted_sum", "merge"):
        assert sorted(seen[stage]) == sorted(c.elements for c in named if c.stage == stage), stage


def test_the_first_copy_is_at_the_scores_not_at_merge():
    named = kernel_copies(batch=2, T=6, S=6, H=4, Hkv=4, d_k=16)
    assert [(c.stage, c.tensor) for c in named] == [
        ("scores", "Q"), ("scores", "Kᵀ"), ("weighted_sum", "V"), ("merge", "context")]
    assert named[0].elements == 2 * 4 * 6 * 16  # B·H·T·d_k


def test_storage_shows_the_reshape_copy():
    """The same fact by storage pointers: the flattened transposed Q lives elsewhere."""
    q = torch.randn(2, 5, 4, 8)  # [B, T, H, d_k]
    qt = q.transpose(1, 2)  # [B, H, T, d_k], a view
    assert qt.data_ptr() == q.data_ptr()
    flat = qt.reshape(2 * 4, 5, 8)  # [B·H, T, d_k], as matmul flattens it
    assert flat.untyped_storage().data_ptr() != q.untyped_storage().data_ptr()
    one = torch.randn(1, 5, 4, 8).transpose(1, 2).reshape(4, 5, 8)  # B = 1: still a view
    assert one._base is not None
