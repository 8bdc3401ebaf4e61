"""The rules that tie the attention family, the mask and the trained model to the rest of the
config, in one call for config validation (the record's own fields are checked first)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models.catalog import model_named
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.variants.registry import FAMILIES, check_families

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig


def check_variants(cfg: MHAConfig) -> None:
    """ConfigError for the first broken rule: the families' own (latent sizes, RoPE's even
    head width), then the mask."""
    check_families(cfg)
    check_mask(cfg)


def check_mask(cfg: MHAConfig) -> None:
    """Rules tying the mask fields to the sequence; ConfigError on the first problem."""
    spec = cfg.mask_spec
    longest = max(cfg.T, cfg.S)
    if spec.global_tokens > longest:
        raise ConfigError(
            "global_tokens", f"{spec.global_tokens} global tokens is more than the {longest} tokens "
            f"in the sequence; try {longest} or fewer", [{"global_tokens": longest}],
        )
    if spec.global_tokens and not spec.sparse:
        raise ConfigError(
            "global_tokens", "global tokens only widen a sliding window or a stride, and neither is "
            "set; set a window, or clear the global tokens",
            [{"global_tokens": 0}, {"window": max(1, cfg.S // 4)}],
        )


def trained_fields(model: ModelDescription, layer: int) -> dict[str, Any]:
    """The config values a trained model's layer imposes (its shape, its mask, its positions)."""
    return {
        "d_model": model.d_model, "n_heads": model.heads,
        "n_kv_heads": None if model.kv_heads == model.heads else model.kv_heads,
        "bias": model.bias, "kv_seq": None, "causal": model.causal,
        # learned positions are already in the layer's input; RoPE turns q and k in the layer
        "positions": "rope" if model.positions == "rope" else "none",
        "window": model.layer_window(layer), "stride": None, "global_tokens": 0,
        "rope_base": int(model.rope_base(layer)) if model.positions == "rope" else None,
        # the default family with the model's own head width and norms; every other family off
        **{name: value for family in FAMILIES for name, value in family.leave().items()},
        "head_dim": None if model.head_dim * model.heads == model.d_model else model.head_dim,
        "norms": model.qk_norm,
        # a decoder normalises each layer's input before attention (its q and k too with norms)
        "input_norm": model.decoder is not None,
    }


def layer_fields(model: ModelDescription, layer: int) -> dict[str, Any]:
    """What changes with the layer: the layer itself, and a local or global layer's window and
    RoPE base (an edit that moves to another layer of the same model)."""
    fields = trained_fields(model, layer)
    return {"layer": layer, "window": fields["window"], "rope_base": fields["rope_base"]}


def _reason(model: ModelDescription, field: str, layer: int) -> str:
    """Why ``model`` fixes ``field``, in words."""
    name = model.name
    kv = ("plain MHA" if model.kv_heads == model.heads else
          "MQA" if model.kv_heads == 1 else "GQA")
    window = model.layer_window(layer)
    return {
        "d_model": f"{name} is {model.d_model} wide",
        "n_heads": f"{name} has {model.heads} heads",
        "n_kv_heads": f"{name} has {model.kv_heads} key/value heads ({kv})",
        "bias": f"{name}'s projections {'have' if model.bias else 'have no'} biases",
        "kv_seq": f"{name} attends within its own text",
        "causal": (f"{name} is a decoder: each token sees only the tokens before it" if model.causal else
                   f"{name} sees the whole sentence; a mask would change its maps"),
        "positions": (f"{name} turns q and k by position (RoPE)" if model.positions == "rope" else
                      f"{name}'s learned positions are already in the layer's input"),
        "window": (f"layer {layer} of {name} is local: it sees the last {window} keys" if window else
                   f"layer {layer} of {name} sees the whole text"),
        "stride": f"{name} has no strided mask",
        "global_tokens": f"{name} has no global tokens",
        "rope_base": (f"layer {layer} of {name} turns q and k with base {model.rope_base(layer):,.0f}"
                      if model.positions == "rope" else f"{name} has no rotary positions"),
        "head_dim": f"{name}'s heads are {model.head_dim} wide",
        "norms": (f"{name} normalises its input and each head's q and k" if model.qk_norm else
                  f"{name} has no RMSNorm on q and k"),
        "input_norm": (f"{name} normalises each layer's input (RMSNorm)" if model.decoder is not None else
                       f"{name}'s layer input is already normalised (LayerNorm after the layer before)"),
    }.get(field, f"{name} uses {FAMILIES[0].title}")


def _shown(field: str, value: Any, model: ModelDescription) -> str:
    if field == "n_kv_heads":
        return str(model.kv_heads)
    if field == "kv_seq":
        return "the sequence length"
    if value is None:
        return "left unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _differs(field: str, value: Any, wanted: Any, model: ModelDescription) -> bool:
    if field == "n_kv_heads":
        return value not in (None, model.kv_heads) or (value is None and model.kv_heads != model.heads)
    return value != wanted


def check_trained(cfg: MHAConfig, labels: dict[str, str]) -> None:
    """ConfigError when ``cfg`` names a trained model whose layer it does not fit: the first
    mismatch with the reason and a fix. ``labels`` name the fields as messages do."""
    model = model_named(cfg.weights)
    if model is None:
        return
    if not 1 <= cfg.layer <= model.layers:
        fix = min(max(cfg.layer, 1), model.layers)
        raise ConfigError("layer", f"{model.name} has layers 1 to {model.layers}, got {cfg.layer}",
                          [{"layer": fix}])
    for field, wanted in trained_fields(model, cfg.layer).items():
        if _differs(field, getattr(cfg, field), wanted, model):
            raise ConfigError(field, f"{labels.get(field, field)} must be {_shown(field, wanted, model)} "
                              f"with trained weights: {_reason(model, field, cfg.layer)}", [{field: wanted}])
    if cfg.tokens is None:
        raise ConfigError("tokens", "trained weights need a text: its tokens are the model's own")
    if len(cfg.tokens) > model.max_tokens:
        raise ConfigError("tokens", f"the text has {len(cfg.tokens)} tokens; {model.name} reads at most "
                          f"{model.max_tokens}")
