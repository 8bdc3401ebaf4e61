"""The code the stage view shows must be the computation itself: run it on the
engine's own inputs and weights and it must give the engine's output."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.core.text.reference_code import reference_code, stage_lines

torch = pytest.importorskip("torch")
from mha_explorer.core.engine import runner as engine  # noqa: E402  (needs torch)

CONFIGS = {
    "mha": MHAConfig(d_model=64, n_heads=4, batch=2, seq=6),
    "gqa": MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, batch=2, seq=5),
    "mqa": MHAConfig(d_model=48, n_heads=6, n_kv_heads=1, batch=3, seq=4),
    "mha-no-bias": MHAConfig(d_model=32, n_heads=4, batch=1, seq=5, bias=False),
    "gqa-no-bias-causal": MHAConfig(d_model=64, n_heads=4, n_kv_heads=2, seq=7, causal=True,
                                    bias=False),
    "causal-top-left-T<S": MHAConfig(d_model=32, n_heads=4, seq=4, kv_seq=7, causal=True),
    "causal-bottom-right-T<S": MHAConfig(d_model=32, n_heads=4, seq=4, kv_seq=7, causal=True,
                                         causal_alignment="bottom-right"),
    "causal-top-left-T>S": MHAConfig(d_model=32, n_heads=2, n_kv_heads=1, seq=7, kv_seq=3,
                                     causal=True),
    "causal-bottom-right-T>S": MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, seq=7, kv_seq=3,
                                         causal=True, causal_alignment="bottom-right"),
    "cross-no-bias": MHAConfig(d_model=48, n_heads=3, seq=3, kv_seq=5, bias=False),
    "sinusoidal": MHAConfig(d_model=30, n_heads=3, seq=6, positions="sinusoidal"),
    "sinusoidal-cross": MHAConfig(d_model=32, n_heads=4, seq=3, kv_seq=5, positions="sinusoidal"),
    "learned": MHAConfig(d_model=32, n_heads=4, seq=5, positions="learned"),
    "learned-cross": MHAConfig(d_model=32, n_heads=2, seq=4, kv_seq=6, positions="learned"),
    "rope-gqa-causal": MHAConfig(d_model=64, n_heads=4, n_kv_heads=2, seq=7, causal=True,
                                 positions="rope"),
    "rope-bottom-right-T<S": MHAConfig(d_model=32, n_heads=4, seq=4, kv_seq=7, causal=True,
                                       causal_alignment="bottom-right", positions="rope"),
    "window-causal": MHAConfig(d_model=32, n_heads=4, seq=9, causal=True, window=3),
    "window-both-sides": MHAConfig(d_model=32, n_heads=4, seq=8, window=2),
    "dilated-global": MHAConfig(d_model=32, n_heads=2, seq=10, causal=True, window=6, stride=2,
                                global_tokens=1),
    "strided-bottom-right-T>S": MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, seq=7, kv_seq=4,
                                          causal=True, causal_alignment="bottom-right", stride=3),
}


def _attention_for(cfg: MHAConfig):
    namespace: dict = {}
    exec(compile(reference_code(cfg), "<reference_code>", "exec"), namespace)
    return namespace["attention"]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_generated_code_reproduces_the_engine(name):
    cfg = CONFIGS[name]
    trace = engine.run(cfg, mode="full")
    x = torch.from_numpy(trace.tensors["input"]["X"])
    x_kv = torch.from_numpy(trace.tensors["input"].get("X_kv", trace.tensors["input"]["X"]))
    w = {k: torch.from_numpy(v) for k, v in trace.weights.items()}
    args = [w["W_Q"], w.get("b_Q"), w["W_K"], w.get("b_K"), w["W_V"], w.get("b_V"),
            w["W_O"], w.get("b_O")]
    if cfg.positions == "learned":  # the tables are the layer's own numbers: passed in
        after = trace.tensors["positions"]
        args.append(torch.from_numpy(after["PE"]))
        if cfg.is_cross:
            args.append(torch.from_numpy(after["X_kv"][0] - trace.tensors["input"]["X_kv"][0]))
    if cfg.bias:
        assert all(a is not None for a in args)
    # the defaults carry the config's head counts, so no keyword is needed
    y = _attention_for(cfg)(x, x_kv, *args)
    assert tuple(y.shape) == (cfg.batch, cfg.T, cfg.d_model)
    np.testing.assert_allclose(y.numpy(), trace.output, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_stage_lines_cover_every_stage_in_order(name):
    cfg = CONFIGS[name]
    lines = reference_code(cfg).splitlines()
    ranges = stage_lines(cfg)
    stage_ids = build_plan(cfg).stage_ids
    assert list(ranges) == list(stage_ids)
    previous_end = 0
    for stage in stage_ids:
        first, last = ranges[stage]
        assert previous_end < first <= last <= len(lines)
        assert all(lines[i - 1].strip() for i in range(first, last + 1)), stage
        previous_end = last


def test_each_stage_highlights_its_own_statement():
    cfg = CONFIGS["causal-bottom-right-T>S"]
    lines = reference_code(cfg).splitlines()
    expected = {
        "input": "x.shape", "project": "F.linear(x, W_Q", "view": ".view(B, T, H, d_k)",
        "transpose": ".transpose(1, 2)", "scores": "masked_fill", "softmax": "softmax(dim=-1)",
        "weighted_sum": "att @ v", "merge": ".contiguous()", "output": "W_O",
    }
    for stage, snippet in expected.items():
        first, last = stage_lines(cfg)[stage]
        assert any(snippet in line for line in lines[first - 1:last]), stage


def test_shape_comments_follow_the_config():
    small = reference_code(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6))
    big = reference_code(MHAConfig(d_model=4096, n_heads=32, n_kv_heads=8, batch=1, seq=128))
    assert "# [2, 4, 6, 16]  B, H, T, d_k" in small
    assert "# [1, 32, 128, 128]  B, H, T, d_k" in big
    assert "# [1, 128, 1024]  B, S, Hkv·d_k" in big
    assert "repeat_interleave" in big and "repeat_interleave" not in small
    assert "masked_fill" not in small


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_code_reads_like_python_and_fits_the_panel(name):
    code = reference_code(CONFIGS[name])
    ast.parse(code)
    lines = code.splitlines()
    # the classic nine stages fit 60 lines; a positions or RoPE step adds at most a dozen,
    # and the panel keeps the highlighted stage in view
    assert len(lines) <= (60 if build_plan(CONFIGS[name]).stage_ids == STAGE_IDS else 72)
    assert max(len(line) for line in lines) <= 72  # the code panel's width at 13 pt


def test_merge_comment_says_when_nothing_is_copied():
    one_head = reference_code(MHAConfig(d_model=32, n_heads=1, seq=4))
    assert "no copy" in one_head and "first copy" not in one_head


def test_the_module_imports_neither_torch_nor_qt():
    import mha_explorer.core.text.reference_code as module

    with open(module.__file__, encoding="utf-8") as f:
        source = f.read()
    imports = [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {a.name for n in imports for a in n.names} | {getattr(n, "module", None) or "" for n in imports}
    assert not any(n.startswith(("torch", "PySide6")) for n in names)


MLA_CONFIGS = {
    "mla-plain-query": MHAConfig(d_model=32, n_heads=4, seq=5, mla=True),
    "mla-latent-query-rope-causal": MHAConfig(d_model=32, n_heads=4, seq=6, mla=True, q_lora_rank=16,
                                              positions="rope", causal=True),
    "mla-cross-bottom-right-window": MHAConfig(d_model=48, n_heads=3, seq=4, kv_seq=7, mla=True,
                                               causal=True, causal_alignment="bottom-right", window=3,
                                               positions="rope", bias=False),
}


@pytest.mark.parametrize("name", list(MLA_CONFIGS))
def test_latent_attention_code_reproduces_the_engine(name):
    cfg = MLA_CONFIGS[name]
    trace = engine.run(cfg, mode="full")
    x = torch.from_numpy(trace.tensors["input"]["X"])
    x_kv = torch.from_numpy(trace.tensors["input"].get("X_kv", trace.tensors["input"]["X"]))
    w = {k: torch.from_numpy(v) for k, v in trace.weights.items()}
    y = _attention_for(cfg)(x, x_kv, w)
    np.testing.assert_allclose(y.numpy(), trace.output, atol=1e-5, rtol=0)
    code = reference_code(cfg)
    ast.parse(code)
    assert max(len(line) for line in code.splitlines()) <= 72
    ranges = stage_lines(cfg)
    assert list(ranges) == list(build_plan(cfg).stage_ids)  # every MLA stage highlights its lines
