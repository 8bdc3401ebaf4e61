"""Multi-head latent attention (MLA, DeepSeek-V2/V3): sizes, rules and parameters, no torch.

MLA caches one small latent per token instead of per-head keys and values:

    c_KV   = RMSNorm(X · W_DKVᵀ)          [B, S, r_kv]   the latent (cached)
    k_rope = RoPE(X · W_KRᵀ)              [B, S, d_r]    one key part shared by all heads (cached)
    K_nope = c_KV · W_UKᵀ, V = c_KV · W_UVᵀ   per head, d_n and d_v wide (recomputed)
    Q      = X · W_Qᵀ  or  RMSNorm(X · W_DQᵀ) · W_UQᵀ   per head [q_nope | q_rope]
    score  = (q_nope·k_nope + q_rope·k_rope) / √(d_n + d_r)

In the checkpoints W_DKV and W_KR are one module (``kv_a_proj_with_mqa``, D → r_kv + d_r)
and W_UK, W_UV another (``kv_b_proj``, r_kv → H·(d_n + d_v)).

Sizes left as None in the config are derived from d_k = D / H, in DeepSeek's proportions
(d_k 128 → nope 128, rope 64, v 128, kv_lora_rank 512):

- ``qk_nope_head_dim`` = d_k; ``v_head_dim`` = d_k;
- ``qk_rope_head_dim`` = d_k / 2 rounded down to an even number, at least 2 (RoPE turns pairs);
- ``kv_lora_rank`` = 4·d_k;
- ``q_lora_rank`` None stays None: a plain query projection (as DeepSeek-V2-Lite).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.stages.records import ParamPlan, ParamTerm
from mha_explorer.core.variants.family import VariantField

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig

RMS_EPS = 1e-6  # DeepSeek's rms_norm_eps
FIELD_CAP = 65_536

FIELDS = (
    VariantField("kv_lora_rank", "r_kv", "kv_lora_rank (r_kv)", "--kv-lora-rank", "R", "auto",
                 "width of the cached latent c_KV (default 4·d_k)", FIELD_CAP),
    VariantField("q_lora_rank", "r_q", "q_lora_rank (r_q)", "--q-lora-rank", "R", "none",
                 "width of the query's latent; none (the default): a plain query projection", FIELD_CAP),
    VariantField("qk_nope_head_dim", "d_n", "qk nope dim (d_n)", "--qk-nope-dim", "N", "auto",
                 "per-head query/key width without position (default d_k)", 4_096),
    VariantField("qk_rope_head_dim", "d_r", "qk rope dim (d_r)", "--qk-rope-dim", "N", "auto",
                 "per-head width of the RoPE part, even (default d_k/2 rounded to even)", 4_096),
    VariantField("v_head_dim", "d_v", "v head dim (d_v)", "--v-head-dim", "N", "auto",
                 "per-head value width (default d_k)", 4_096),
)
MLA_FIELDS = tuple(f.name for f in FIELDS)


@dataclass(frozen=True)
class MLADims:
    """The resolved MLA sizes of a config (defaults filled in)."""

    D: int
    H: int
    kv_lora_rank: int  # r_kv
    q_lora_rank: int | None  # r_q; None: plain query projection
    nope: int  # d_n
    rope: int  # d_r
    v: int  # d_v

    @property
    def qk(self) -> int:
        """Per-head query/key width d_n + d_r: what the scores are scaled by."""
        return self.nope + self.rope

    @property
    def cached_width(self) -> int:
        """Numbers cached per token and layer: the latent plus the shared RoPE key."""
        return self.kv_lora_rank + self.rope


def default_rope_dim(d_k: int) -> int:
    return max(2, d_k // 4 * 2)


def mla_dims(cfg: MHAConfig) -> MLADims:
    """MLA sizes of ``cfg``, with the documented defaults for fields left as None."""
    dk = cfg.d_k
    return MLADims(
        D=cfg.d_model, H=cfg.H,
        kv_lora_rank=cfg.kv_lora_rank if cfg.kv_lora_rank is not None else 4 * dk,
        q_lora_rank=cfg.q_lora_rank,
        nope=cfg.qk_nope_head_dim if cfg.qk_nope_head_dim is not None else dk,
        rope=cfg.qk_rope_head_dim if cfg.qk_rope_head_dim is not None else default_rope_dim(dk),
        v=cfg.v_head_dim if cfg.v_head_dim is not None else dk,
    )


def check_mla(cfg: MHAConfig) -> None:
    """The rules that tie the MLA fields to the rest of the config; ConfigError on the first.

    Types and ranges are checked before this (config._check_variant_fields).
    """
    given = [name for name in MLA_FIELDS if getattr(cfg, name) is not None]
    if not cfg.mla:
        if given:
            names = ", ".join(given)
            raise ConfigError(
                given[0], f"{names} {'is' if len(given) == 1 else 'are'} set but latent attention "
                f"is off; turn latent attention on or clear {names}",
                [{"mla": True}, {name: None for name in given}],
            )
        return
    if cfg.n_kv_heads is not None and cfg.n_kv_heads != cfg.n_heads:
        raise ConfigError(
            "n_kv_heads", f"latent attention rebuilds keys and values for all {cfg.n_heads} heads "
            f"from one latent, so key/value heads cannot be {cfg.n_kv_heads}; leave key/value heads "
            "at the head count, or turn latent attention off",
            [{"n_kv_heads": None}, {"mla": False, **{name: None for name in given}}],
        )
    rope = mla_dims(cfg).rope
    if rope % 2:
        raise ConfigError(
            "qk_rope_head_dim", f"qk_rope_head_dim {rope} must be even: RoPE turns pairs of numbers; "
            f"try {rope - 1} or {rope + 1}" if rope > 1 else
            f"qk_rope_head_dim {rope} must be even: RoPE turns pairs of numbers; try 2",
            [{"qk_rope_head_dim": r} for r in (rope - 1, rope + 1) if r >= 2],
        )


def kv_cache_per_token(cfg: MHAConfig) -> int:
    """Bytes cached per token and layer: (kv_lora_rank + qk_rope_head_dim) · itemsize."""
    return mla_dims(cfg).cached_width * cfg.elem_bytes


# Parameters -----------------------------------------------------------------------------


def _linear(name: str, rows: tuple[str, int], cols: tuple[str, int], bias: bool) -> list[ParamTerm]:
    """An nn.Linear(in=rows, out=cols), written in × out as the other terms are."""
    (rs, rn), (cs, cn) = rows, cols
    terms = [ParamTerm(name, f"{rs} × {cs}", f"{rn} × {cn}", rn * cn)]
    if bias:
        terms.append(ParamTerm(f"{name}.bias", cs, f"{cn}", cn))
    return terms


def _norm(name: str, width: tuple[str, int]) -> ParamTerm:
    """An RMSNorm: one learned scale per number, no shift."""
    return ParamTerm(name, width[0], f"{width[1]}", width[1])


def mla_param_terms(m: MLADims, bias: bool) -> list[ParamTerm]:
    """Every module of the checkpoints' attention block, in their order.

    Bias (``attention_bias``) sits on q_a_proj, kv_a_proj_with_mqa and o_proj only; q_proj,
    q_b_proj and kv_b_proj never have one, as in DeepSeek's code.
    """
    D = ("D", m.D)
    q_out = ("H·(d_n+d_r)", m.H * m.qk)
    if m.q_lora_rank is None:
        terms = _linear("q_proj", D, q_out, False)
    else:
        rq = ("r_q", m.q_lora_rank)
        terms = [*_linear("q_a_proj", D, rq, bias), _norm("q_a_layernorm", rq),
                 *_linear("q_b_proj", rq, q_out, False)]
    rkv = ("r_kv", m.kv_lora_rank)
    terms += [
        *_linear("kv_a_proj_with_mqa", D, ("(r_kv+d_r)", m.cached_width), bias),
        _norm("kv_a_layernorm", rkv),
        *_linear("kv_b_proj", rkv, ("H·(d_n+d_v)", m.H * (m.nope + m.v)), False),
        *_linear("o_proj", ("H·d_v", m.H * m.v), D, bias),
    ]
    return terms


def mla_param_formula(m: MLADims, bias: bool) -> str:
    q = "D·H·(d_n+d_r)" if m.q_lora_rank is None else "D·r_q + r_q + r_q·H·(d_n+d_r)"
    formula = f"{q} + D·(r_kv+d_r) + r_kv + r_kv·H·(d_n+d_v) + H·d_v·D"
    if bias:
        formula += (" + r_q" if m.q_lora_rank is not None else "") + " + (r_kv+d_r) + D"
    return formula


def mla_param_plan(cfg: MHAConfig) -> ParamPlan:
    """Parameter arithmetic of the MLA block; the comparisons are counted, not assumed:
    the same block with one head, and plain MHA (4·D², + 4·D with bias) at the same D."""
    m = mla_dims(cfg)
    terms = mla_param_terms(m, cfg.bias)
    one_head = MLADims(m.D, 1, m.kv_lora_rank, m.q_lora_rank, m.nope, m.rope, m.v)
    single = sum(t.count for t in mla_param_terms(one_head, cfg.bias))
    D = cfg.d_model
    mha = 4 * D * D + (4 * D if cfg.bias else 0)
    return ParamPlan(tuple(terms), sum(t.count for t in terms), mla_param_formula(m, cfg.bias),
                     single, mha)
