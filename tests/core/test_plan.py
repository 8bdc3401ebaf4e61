"""The stage plan against what torch actually does, worked arithmetic, and the
promise that the plan (and the `shapes` CLI) never import torch or Qt."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.engine.runner import run
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.stages.catalog import STAGE_IDS


@st.composite
def configs(draw) -> MHAConfig:
    """Small valid configs: every variant, cross and self, causal or not."""
    kv_heads = draw(st.integers(1, 3))
    heads = kv_heads * draw(st.integers(1, 3))
    d_k = draw(st.integers(1, 4))
    return MHAConfig(
        d_model=heads * d_k, n_heads=heads, n_kv_heads=kv_heads,
        batch=draw(st.integers(1, 3)), seq=draw(st.integers(1, 5)),
        kv_seq=draw(st.none() | st.integers(1, 5)),
        causal=draw(st.booleans()), causal_alignment=draw(st.sampled_from(["top-left", "bottom-right"])),
        bias=draw(st.booleans()), device="cpu", seed=draw(st.integers(0, 3)),
    )


@settings(max_examples=40, deadline=None)
@given(configs())
def test_trace_shapes_follow_the_plan(c):
    plan, trace = build_plan(c), run(c)
    assert [s.id for s in plan.stages] == list(STAGE_IDS)
    for stage in plan.stages:
        assert set(trace.tensors[stage.id]) == {t.name for t in stage.tensors}, stage.id
        for spec in stage.tensors:
            assert trace.tensors[stage.id][spec.name].shape == spec.shape, (stage.id, spec.name)
            assert len(spec.dims) == len(spec.shape)
            assert tuple(plan.dims[d] for d in spec.dims) == spec.shape, (stage.id, spec.name)


def torch_views(c: MHAConfig) -> dict[tuple[str, str], torch.Tensor]:
    """The same ops as the stages, on tiny real tensors (so storage sharing shows)."""
    B, T, S, D, H, Hkv, dk = c.batch, c.T, c.S, c.d_model, c.H, c.Hkv, c.d_k
    e = lambda *shape: torch.empty(shape)  # noqa: E731
    q, k, v = e(B, T, D), e(B, S, Hkv * dk), e(B, S, Hkv * dk)
    qv, kv, vv = q.view(B, T, H, dk), k.view(B, S, Hkv, dk), v.view(B, S, Hkv, dk)
    ctx = e(B, H, T, dk)
    back = ctx.transpose(1, 2)
    out = {
        ("input", "X"): e(B, T, D),
        ("project", "Q"): q, ("project", "K"): k, ("project", "V"): v,
        ("view", "Q"): qv, ("view", "K"): kv, ("view", "V"): vv,
        ("transpose", "Q"): qv.transpose(1, 2), ("transpose", "K"): kv.transpose(1, 2),
        ("transpose", "V"): vv.transpose(1, 2),
        ("scores", "scores"): e(B, H, T, S), ("softmax", "weights"): e(B, H, T, S),
        ("weighted_sum", "context"): ctx,
        ("merge", "context"): back, ("merge", "merged"): back.contiguous().view(B, T, D),
        ("output", "Y"): e(B, T, D),
    }
    if c.is_cross:
        out[("input", "X_kv")] = e(B, S, D)
    return out


@settings(max_examples=40, deadline=None)
@given(configs())
def test_strides_and_contiguity_match_torch(c):
    plan = build_plan(c)
    views = torch_views(c)
    assert {(s.id, t.name) for s in plan.stages for t in s.tensors} == set(views)
    for (stage, name), x in views.items():
        spec = plan.stage(stage).tensor(name)
        assert spec.shape == tuple(x.shape), (stage, name)
        assert spec.strides == x.stride(), (stage, name)
        assert spec.contiguous == x.is_contiguous(), (stage, name)
    # a tensor that "allocates" has storage of its own; views share their source's
    source = {"view": "project", "transpose": "project", "merge": "weighted_sum"}
    for (stage, name), x in views.items():
        if stage in source:
            src = views[(source[stage], "context" if stage == "merge" else name)]
            shares = x.untyped_storage().data_ptr() == src.untyped_storage().data_ptr()
            assert plan.stage(stage).tensor(name).allocates == (not shares), (stage, name)


@pytest.mark.parametrize("d_model,heads", [(4, 1), (8, 8), (6, 2)])
def test_single_head_or_single_token_transpose_is_contiguous(d_model, heads):
    # with H = 1 (or T = 1) the transpose moves a size-1 axis: the memory order is
    # unchanged, so torch calls it contiguous, and merging back copies nothing
    c = MHAConfig(d_model=d_model, n_heads=heads, seq=1 if heads > 1 else 3)
    plan = build_plan(c)
    t = plan.stage("transpose").tensor("Q")
    assert t.contiguous and not t.allocates
    assert "still contiguous" in plan.stage("transpose").explanation
    assert not plan.stage("merge").tensor("merged").allocates and plan.stage("merge").bytes == 0


def test_transpose_is_a_view_and_merge_is_the_first_copy():
    plan = build_plan(MHAConfig(d_model=8, n_heads=2, batch=2, seq=3))
    for stage in ("view", "transpose"):
        assert plan.stage(stage).bytes == 0
        assert not any(t.allocates for t in plan.stage(stage).tensors)
    assert not plan.stage("transpose").tensor("Q").contiguous
    assert plan.stage("transpose").tensor("Q").strides == (24, 4, 8, 1)  # from [2, 3, 2, 4]
    merge = plan.stage("merge")
    assert not merge.tensor("context").allocates and merge.tensor("merged").allocates
    assert merge.bytes == 2 * 3 * 8 * 4  # B·T·D float32


def test_flops_and_bytes_worked_example_mha():
    # B=2, T=S=4, D=8, H=2, d_k=4, bias, float32 (4 bytes)
    plan = build_plan(MHAConfig(d_model=8, n_heads=2, batch=2, seq=4, bias=True))
    flops = {s.id: s.flops for s in plan.stages}
    assert flops == {
        "input": 0,
        # Q: 2·B·T·D·D = 2·2·4·8·8 = 1024; K, V: 2 × 1024 = 2048;
        # biases: B·T·D + 2·B·S·D = 64 + 128 = 192  -> 3264
        "project": 3264,
        "view": 0, "transpose": 0,
        # 2·B·H·T·S·d_k = 2·2·2·4·4·4 = 512, plus the scaling B·H·T·S = 64
        "scores": 576,
        "softmax": 320,  # 5 ops × B·H·T·S = 5 × 64
        "weighted_sum": 512,  # 2·B·H·T·S·d_k
        "merge": 0,
        "output": 1088,  # 2·B·T·D·D + bias B·T·D = 1024 + 64
    }
    assert plan.total_flops == 3264 + 576 + 320 + 512 + 1088
    nbytes = {s.id: s.bytes for s in plan.stages}
    btd = 2 * 4 * 8 * 4  # B·T·D × 4 bytes = 256
    assert nbytes == {
        "input": btd, "project": 3 * btd, "view": 0, "transpose": 0,
        # B·H·T·S × 4 = 256, and matmul's copies of the transposed Q and Kᵀ, B·H·T·d_k × 4 each
        "scores": 2 * 2 * 4 * 4 * 4 + 2 * (2 * 2 * 4 * 4 * 4),
        # B·H·T·d_k × 4 = 256, and matmul's copy of the transposed V, B·H·S·d_k × 4
        "softmax": 256, "weighted_sum": 2 * 2 * 4 * 4 * 4 + 2 * 2 * 4 * 4 * 4,
        "merge": btd, "output": btd,
    }


def test_flops_bytes_and_memory_worked_example_gqa_cross_fp16():
    # B=1, T=3, S=5, D=8, H=4, Hkv=2, d_k=2 (K/V width Hkv·d_k = 4), no bias, fp16
    c = MHAConfig(d_model=8, n_heads=4, n_kv_heads=2, batch=1, seq=3, kv_seq=5, bias=False,
                  dtype="float16")
    plan = build_plan(c)
    assert plan.stage("project").flops == 384 + 640  # Q 2·1·3·8·8; K,V 2 × 2·1·5·8·4
    assert plan.stage("scores").flops == 240 + 60  # 2·1·4·3·5·2 + 1·4·3·5
    assert plan.stage("softmax").flops == 300  # 5 × 60
    assert plan.stage("weighted_sum").flops == 240
    assert plan.stage("output").flops == 384
    assert plan.stage("input").bytes == 48 + 80  # X 1·3·8·2, X_kv 1·5·8·2
    assert plan.stage("project").bytes == 48 + 40 + 40  # Q 1·3·8·2, K and V 1·5·4·2
    # 1·4·3·5·2, and repeat_interleave's copy of K out to 4 heads, 1·4·5·2·2 (B = 1: the
    # transposed Q flattens to [B·H, T, d_k] without a copy)
    assert plan.stage("scores").bytes == 120 + 80
    assert plan.stage("project").tensor("K").shape == (1, 5, 4)
    assert plan.stage("transpose").tensor("K").shape == (1, 2, 5, 2)
    m = plan.memory
    assert m.kv_cache_per_token == 16  # K and V: 2 · 4 wide · 2 bytes
    assert m.kv_cache_per_sequence == 80 and m.kv_cache_batch == 80  # × S=5, × B=1
    assert m.attention_matrix == 120
    assert m.weights == (64 + 32 + 32 + 64) * 2  # W_Q 8·8, W_K 8·4, W_V 8·4, W_O 8·8


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("d_model", [12, 24, 60])
def test_mha_parameters_do_not_depend_on_heads(d_model, bias):
    expected = 4 * d_model**2 + (4 * d_model if bias else 0)
    for heads in [h for h in range(1, d_model + 1) if d_model % h == 0]:
        p = build_plan(MHAConfig(d_model=d_model, n_heads=heads, bias=bias)).params
        assert p.total == expected == p.single_head_total == p.mha_total, heads
        assert p.total_formula == ("4·D² + 4·D" if bias else "4·D²")


def test_gqa_parameters_shrink_k_and_v_only():
    # D=24, H=6, Hkv=2, d_k=4: W_Q, W_O 24·24; W_K, W_V 24·8; biases 24, 8, 8, 24
    p = build_plan(MHAConfig(d_model=24, n_heads=6, n_kv_heads=2, bias=True)).params
    counts = {t.name: t.count for t in p.terms}
    assert counts == {"W_Q": 576, "W_K": 192, "W_V": 192, "W_O": 576,
                      "b_Q": 24, "b_K": 8, "b_V": 8, "b_O": 24}
    assert p.total == 2 * 576 + 2 * 192 + 2 * 24 + 2 * 8 == 1600
    assert p.mha_total == 4 * 576 + 4 * 24 == 2400


NO_HEAVY_IMPORTS = (
    "import sys; {body}; "
    "heavy = sorted(m for m in ('torch', 'PySide6', 'pyqtgraph') if m in sys.modules); "
    "assert not heavy, heavy"
)


def _python(code: str) -> subprocess.CompletedProcess:
    # a fresh interpreter: this test process has torch loaded already
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_plan_presets_memory_and_cli_import_no_torch_or_qt():
    body = ("import mha_explorer.core.plan.build, mha_explorer.core.config.presets, mha_explorer.core.plan.memory, "
            "mha_explorer.cli")
    r = _python(NO_HEAVY_IMPORTS.format(body=body))
    assert r.returncode == 0, r.stderr


def test_shapes_command_runs_without_torch():
    body = ("from mha_explorer.cli import main; "
            "assert main(['shapes', '--json', '--preset', 'llama3-8b', '--seq', '4096']) == 0")
    r = _python(NO_HEAVY_IMPORTS.format(body=body))
    assert r.returncode == 0, r.stderr
    assert '"total": 41943040' in r.stdout  # the command really ran
