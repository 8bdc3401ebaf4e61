"""Parameter arithmetic: each weight and bias as a formula, its numbers and its count.

Part of the stage plan (no torch): the parameters panel and the shapes command
print these terms as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_explorer.core.stages.records import ParamPlan, ParamTerm

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig


def _param_terms(D: int, kvD: int, shared_kv: bool, bias: bool) -> list[ParamTerm]:
    kv_sym = "D" if not shared_kv else "(Hkv·d_k)"
    terms = [
        ParamTerm("W_Q", "D × D", f"{D} × {D}", D * D),
        ParamTerm("W_K", f"D × {kv_sym}", f"{D} × {kvD}", D * kvD),
        ParamTerm("W_V", f"D × {kv_sym}", f"{D} × {kvD}", D * kvD),
        ParamTerm("W_O", "D × D", f"{D} × {D}", D * D),
    ]
    if bias:
        kv_b = kv_sym.strip("()")
        terms += [
            ParamTerm("b_Q", "D", f"{D}", D),
            ParamTerm("b_K", kv_b, f"{kvD}", kvD),
            ParamTerm("b_V", kv_b, f"{kvD}", kvD),
            ParamTerm("b_O", "D", f"{D}", D),
        ]
    return terms


def param_plan(cfg: MHAConfig) -> ParamPlan:
    D = cfg.d_model
    shared = cfg.Hkv != cfg.H
    terms = _param_terms(D, cfg.kv_dim, shared, cfg.bias)
    if not shared:
        formula = "4·D² + 4·D" if cfg.bias else "4·D²"
    else:
        formula = "2·D² + 2·D·Hkv·d_k" + (" + 2·D + 2·Hkv·d_k" if cfg.bias else "")
    # The comparisons are counted the same way, not assumed: one head of width D,
    # and full MHA (Hkv = H); both come out equal, which is the point to show.
    one_head = sum(t.count for t in _param_terms(D, D, False, cfg.bias))
    mha = sum(t.count for t in _param_terms(D, cfg.H * cfg.d_k, False, cfg.bias))
    return ParamPlan(tuple(terms), sum(t.count for t in terms), formula, one_head, mha)
