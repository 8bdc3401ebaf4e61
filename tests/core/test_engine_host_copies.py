"""What an engine run copies to the host, counted at the one function every copy goes through.

A run whose tensors are not already float32 numpy in the host's memory (a GPU's, or a
float16/bfloat16 run on the CPU, which must be converted) keeps them where they were computed.
While it runs only the batch element the views draw first crosses; a view that draws another
element copies that element when it reads it, and nothing else. What crosses is still exactly
the run's result. On the CPU the float16/bfloat16 runs take the same path a GPU run takes; the
last test runs it on a GPU where there is one.
"""

from __future__ import annotations

import math
import pickle
import pickletools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.display.head_maps import build_stage_maps
from mha_explorer.core.engine.runner import run
from mha_explorer.core.kernels import host
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.held import HeldArray

# GQA (8 query heads on 2 K/V heads), causal, cross-attention lengths: every kind of kept tensor
SMALL = dict(d_model=32, n_heads=8, n_kv_heads=2, batch=3, seq=6, kv_seq=7, causal=True,
             device="cpu", seed=5)
# the stages whose tensors are their own (view, transpose and merge's context are views of them)
OWN = {StageId.input: ("X", "X_kv"), StageId.project: ("Q", "K", "V"), StageId.scores: ("scores",),
       StageId.softmax: ("weights",), StageId.weighted_sum: ("context",),
       StageId.merge: ("merged",), StageId.output: ("Y",)}
# torch's own tolerances for a chain of low-precision stages against float32 (as
# test_engine_reference's CHAIN_TOL)
CHAIN_TOL = {"float16": dict(atol=4e-3, rtol=4e-3), "bfloat16": dict(atol=4e-2, rtol=6.4e-2)}


@pytest.fixture
def crossings(monkeypatch) -> list[tuple[int, ...]]:
    """The shape of every tensor copied to the host, in order."""
    seen: list[tuple[int, ...]] = []
    copy = host.copy_to_host

    def counted(t, wait=True):
        seen.append(tuple(t.shape))
        return copy(t, wait)

    monkeypatch.setattr(host, "copy_to_host", counted)
    return seen


def kept(trace) -> dict[tuple[str, str], HeldArray]:
    return {(stage, name): trace.tensors[stage][name]
            for stage, names in OWN.items() for name in names if name in trace.tensors[stage]}


def sdpa_output(trace) -> np.ndarray:
    """Y [B, T, D] in float32 from the trace's own (rounded) inputs and weights: projections,
    F.scaled_dot_product_attention with GQA, W_O."""
    c = trace.config
    w = {k: torch.from_numpy(v) for k, v in trace.weights.items()}
    x = torch.from_numpy(np.asarray(trace.tensors[StageId.input]["X"]))
    xkv = torch.from_numpy(np.asarray(trace.tensors[StageId.input]["X_kv"]))
    B, T, S, H, Hkv, dk = c.batch, c.T, c.S, c.H, c.Hkv, c.d_k
    q = F.linear(x, w["W_Q"], w.get("b_Q")).view(B, T, H, dk).transpose(1, 2)  # [B, H, T, d_k]
    k = F.linear(xkv, w["W_K"], w.get("b_K")).view(B, S, Hkv, dk).transpose(1, 2)  # [B, Hkv, S, d_k]
    v = F.linear(xkv, w["W_V"], w.get("b_V")).view(B, S, Hkv, dk).transpose(1, 2)
    i, j = torch.arange(T)[:, None], torch.arange(S)[None, :]
    sees = j <= i + (S - T if c.causal_alignment == "bottom-right" else 0)  # [T, S]
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=sees, enable_gqa=True)  # [B, H, T, d_k]
    return F.linear(o.transpose(1, 2).reshape(B, T, H * dk), w["W_O"], w.get("b_O")).numpy()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_run_copies_only_the_batch_element_shown(crossings, dtype):
    trace = run(MHAConfig(**SMALL, dtype=dtype), show_batch=1)
    arrays = kept(trace)
    assert all(isinstance(a, HeldArray) for a in arrays.values())  # nothing whole on the host
    one_element = sorted(a.shape[1:] for a in arrays.values())
    norms = [(trace.config.batch,)]  # ||Y[b]|| for the status line: three numbers
    assert sorted(crossings) == sorted(one_element + norms)
    # what crossed is the run's result: Y against float32 SDPA on the same rounded inputs
    np.testing.assert_allclose(trace.output[1], sdpa_output(trace)[1], **CHAIN_TOL[dtype])


def test_a_view_copies_the_element_it_draws_and_what_it_shows_is_exact(crossings):
    cfg = MHAConfig(**SMALL, dtype="bfloat16")
    trace = run(cfg, show_batch=1)
    # the reference: the same run again, every element read whole
    whole = {key: np.asarray(a) for key, a in kept(run(cfg)).items()}
    crossings.clear()
    for stage in (StageId.softmax, StageId.project, StageId.transpose, StageId.merge):
        build_stage_maps(trace, stage, 1)  # the element the run copied: nothing more crosses
    assert crossings == []

    maps = build_stage_maps(trace, StageId.softmax, 2)  # another element: its weights, once
    assert crossings == [(trace.config.H, trace.config.T, trace.config.S)]
    for h, heat in enumerate(maps.maps):
        np.testing.assert_array_equal(heat.image, whole[StageId.softmax, "weights"][2, h])
    crossings.clear()
    keys = build_stage_maps(trace, StageId.transpose, 0, tensor="K")  # K by kv head, a view of K
    c = trace.config
    assert crossings == [(c.Hkv, c.S, c.d_k)]  # element 0 of K, as the transpose reads it
    k_heads = whole[StageId.project, "K"][0].reshape(c.S, c.Hkv, c.d_k)
    for g, heat in enumerate(keys.maps):
        np.testing.assert_array_equal(heat.image, k_heads[:, g])
    # and the run's result: the output against float32 SDPA, every element (read whole)
    np.testing.assert_allclose(np.asarray(trace.output), sdpa_output(trace), **CHAIN_TOL["bfloat16"])


def test_a_windowed_run_copies_only_the_shown_rows(crossings, monkeypatch):
    from mha_explorer.core.plan import memory

    monkeypatch.setattr(memory, "SHOWN_MAX_ROWS", 2)  # rows 2-3 of 6, in blocks of 2
    monkeypatch.setattr(memory, "CHUNK_MAX_CELLS", 2 * 8 * 7)
    trace = run(MHAConfig(**SMALL, dtype="bfloat16"), mode="windowed", show_batch=2,
                show_rows_from=2)
    assert trace.rows == (2, 4) and trace.batch_index == 2
    c = trace.config
    assert (c.H, 2, c.S) in crossings and (c.H, c.T, c.S) not in crossings  # the window's rows only
    full = run(MHAConfig(**SMALL, dtype="bfloat16"), mode="full")
    np.testing.assert_array_equal(trace.tensors[StageId.softmax]["weights"][0],
                                  full.tensors[StageId.softmax]["weights"][2, :, 2:4])
    np.testing.assert_array_equal(trace.output[0], full.output[2])


def test_a_held_trace_crosses_a_pipe_as_plain_numpy():
    """The early engine's process pickles its trace to the window: the window reads it
    without torch, every array whole."""
    trace = run(MHAConfig(**SMALL, dtype="bfloat16"), show_batch=1)
    data = pickle.dumps(trace)
    names = {arg for _op, arg, _pos in pickletools.genops(data) if isinstance(arg, str)}
    assert not any(n.startswith("torch") or n.startswith("mha_explorer.core.kernels") for n in names)
    back = pickle.loads(data)
    for (stage, name), held in kept(trace).items():
        assert isinstance(back.tensors[stage][name], np.ndarray)
        np.testing.assert_array_equal(back.tensors[stage][name], np.asarray(held))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_gpu_run_copies_only_the_shown_element_and_matches_the_cpu(crossings):
    cfg = MHAConfig(**{**SMALL, "d_model": 64, "seq": 40, "kv_seq": 40, "device": "cuda"})
    trace = run(cfg, show_batch=1)
    assert trace.device == "cuda"
    arrays = kept(trace)
    assert sorted(crossings) == sorted([a.shape[1:] for a in arrays.values()] + [(cfg.batch,)])
    cpu = run(cfg.replace(device="cpu"))
    for (stage, name), held in arrays.items():  # the early element, and one read on demand
        for b in (1, 2):
            np.testing.assert_allclose(held[b], cpu.tensors[stage][name][b], atol=1e-4, rtol=1e-4,
                                       err_msg=f"{stage}/{name}[{b}]")
    assert all(math.isfinite(s) and s >= 0 for s in trace.timings.values())
    assert sum(trace.timings.values()) > 0  # timed on the device, with its events
