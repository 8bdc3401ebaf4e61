"""What the causal tools' reference checks do to transformers' decoders, with hooks of their own:
rewrite a layer's W_O input (o_proj's), keep every layer's W_O input, and read a loss."""

from __future__ import annotations

import contextlib

import torch

F = torch.nn.functional


@contextlib.contextmanager
def o_proj_input(reference, layer: int, edit):
    """While inside, ``edit(merged [1, T, H*hd]) -> merged`` rewrites layer ``layer``'s W_O input."""
    handle = reference.model.layers[layer - 1].self_attn.o_proj.register_forward_pre_hook(
        lambda _module, args: (edit(args[0].clone()),))
    try:
        yield
    finally:
        handle.remove()


def forward_logits(reference, ids) -> torch.Tensor:
    with torch.no_grad():
        return reference(torch.tensor([list(ids)])).logits[0]  # [T, vocab]


def mean_nats(found: torch.Tensor, ids, positions) -> float:
    """The mean next-token loss of logits ``found`` [T, vocab] at ``positions``."""
    return float(F.cross_entropy(found[positions], torch.tensor([ids[p + 1] for p in positions])))


def merged_inputs(reference, ids) -> list[torch.Tensor]:
    """Every layer's W_O input [1, T, H*hd] in a plain run."""
    kept = []
    handles = [layer.self_attn.o_proj.register_forward_pre_hook(lambda _m, args: kept.append(args[0].clone()))
               for layer in reference.model.layers]
    try:
        forward_logits(reference, ids)
    finally:
        for handle in handles:
            handle.remove()
    return kept
