"""Parameter arithmetic: each weight and bias as a formula, its numbers and its count.

Part of the stage plan (no torch): the parameters panel and the shapes command
print these terms as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_explorer.core.stages.records import ParamPlan, ParamTerm

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig


def _param_terms(D: int, qD: int, kvD: int, bias: bool, norms: int = 0,
                 input_norm: bool = False) -> list[ParamTerm]:
    """The four projections in × out (nn.Linear's out × in, written the way the data flows),
    their biases, with ``norms`` (d_k) the RMSNorm scales of x, q and k, and with
    ``input_norm`` alone that of x."""
    q_sym = "D" if qD == D else "(H·d_k)"
    kv_sym = "D" if kvD == D else ("(H·d_k)" if kvD == qD else "(Hkv·d_k)")
    terms = [
        ParamTerm("W_Q", f"D × {q_sym}", f"{D} × {qD}", D * qD),
        ParamTerm("W_K", f"D × {kv_sym}", f"{D} × {kvD}", D * kvD),
        ParamTerm("W_V", f"D × {kv_sym}", f"{D} × {kvD}", D * kvD),
        ParamTerm("W_O", f"{q_sym} × D", f"{qD} × {D}", qD * D),
    ]
    if bias:
        terms += [
            ParamTerm("b_Q", q_sym.strip("()"), f"{qD}", qD),
            ParamTerm("b_K", kv_sym.strip("()"), f"{kvD}", kvD),
            ParamTerm("b_V", kv_sym.strip("()"), f"{kvD}", kvD),
            ParamTerm("b_O", "D", f"{D}", D),
        ]
    if norms or input_norm:
        terms.append(ParamTerm("norm", "D", f"{D}", D))
    if norms:
        terms += [ParamTerm(name, "d_k", f"{norms}", norms) for name in ("q_norm", "k_norm")]
    return terms


def _formula(cfg: MHAConfig) -> str:
    """The total in symbols: 4·D² for plain MHA, whatever H is."""
    shared, wide = cfg.Hkv != cfg.H, cfg.q_dim != cfg.d_model
    q = "H·d_k" if wide else "D"
    if not shared and not wide:
        formula = "4·D²" + (" + 4·D" if cfg.bias else "")
    else:
        kv = "Hkv·d_k" if shared else q
        formula = (f"2·D·{q} + 2·D·{kv}" if wide else f"2·D² + 2·D·{kv}")
        formula += f" + {q} + 2·{kv} + D" if cfg.bias and wide else (f" + 2·D + 2·{kv}" if cfg.bias else "")
    return formula + (" + D + 2·d_k" if cfg.norms else " + D" if cfg.normed_input else "")


def param_plan(cfg: MHAConfig) -> ParamPlan:
    D = cfg.d_model
    norms, x_norm = (cfg.d_k if cfg.norms else 0), cfg.normed_input
    terms = _param_terms(D, cfg.q_dim, cfg.kv_dim, cfg.bias, norms, x_norm)
    # The comparisons are counted the same way, not assumed: one head of width D,
    # and full MHA (Hkv = H); both come out equal, which is the point to show.
    one_head = sum(t.count for t in _param_terms(D, D, D, cfg.bias, D if cfg.norms else 0, x_norm))
    mha = sum(t.count for t in _param_terms(D, cfg.q_dim, cfg.q_dim, cfg.bias, norms, x_norm))
    return ParamPlan(tuple(terms), sum(t.count for t in terms), _formula(cfg), one_head, mha)
