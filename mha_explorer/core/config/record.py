"""The attention configuration a person picks, and its validation.

No torch and no Qt here: the window, the CLI and the tests all validate through
this module, so a student sees the same message wherever the mistake was made.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from mha_explorer.core.config.rules import check_trained, check_variants
from mha_explorer.core.errors import ConfigError
from mha_explorer.core.fixes import divisors, nearest
from mha_explorer.core.fixes import join_words as _join
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.specs.masks import MaskSpec
from mha_explorer.core.specs.norms import RMS_EPS
from mha_explorer.core.specs.positions import POSITION_KINDS, ROPE_BASE, PositionsSpec
from mha_explorer.core.specs.weights import LAB, RANDOM, WeightsSpec
from mha_explorer.core.system.typed_input import TypedInputError, utf8_text
from mha_explorer.core.variants.registry import FAMILIES, kind_of, variant_fields

WEIGHT_SOURCES = (RANDOM, *MODELS, LAB)  # random, every trained model, a Lab run
DTYPES: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2}
DEVICES = ("auto", "cpu", "cuda", "mps")
ALIGNMENTS = ("top-left", "bottom-right")

# Upper caps keep the shapes table meaningful and the integers printable; the
# memory guard in the engine decides separately what can actually be computed.
CAPS: dict[str, int] = {
    "d_model": 65_536,
    "n_heads": 1_024,
    "n_kv_heads": 1_024,
    "batch": 4_096,
    "seq": 1_048_576,
    "kv_seq": 1_048_576,
    "seed": 2**32 - 1,
    "layer": 64,
    "window": 1_048_576,
    "stride": 1_048_576,
    "global_tokens": 1_048_576,
    "rope_base": 1_000_000_000,
} | {f.name: f.cap for f in variant_fields()}  # each family caps its own sizes

# how each field is named in messages (most by their own name)
FIELD_LABELS = {name: name for name in (
    "d_model", "batch", "seed", "dtype", "device", "causal", "bias", "weights", "layer", "positions",
    "window", "stride", *(f.name for f in variant_fields()),
)} | {
    "n_heads": "heads",
    "n_kv_heads": "key/value heads",
    "seq": "sequence length",
    "kv_seq": "key/value length",
    "causal_alignment": "causal alignment",
    "weights_path": "weights file",
    "global_tokens": "global tokens",
    "rope_base": "RoPE base",
} | {family.switch: family.title.split(" (")[0].lower() for family in FAMILIES if family.switch}


@dataclass(frozen=True)
class MHAConfig:
    """One multi-head attention layer and the input it runs on.

    Notation: B batch, T query length, S key/value length, D d_model, H heads,
    Hkv key/value heads, d_k = D / H unless ``head_dim`` says otherwise.
    """

    d_model: int = 512
    n_heads: int = 8
    n_kv_heads: int | None = None  # None: same as n_heads (MHA)
    batch: int = 2
    seq: int = 8
    kv_seq: int | None = None  # None: same as seq (self-attention)
    causal: bool = False
    causal_alignment: str = "top-left"
    bias: bool = True
    dtype: str = "float32"
    device: str = "auto"
    seed: int = 0
    tokens: tuple[str, ...] | None = field(default=None, compare=True)
    # where the weights come from (core/specs.py WeightsSpec)
    weights: str = "random"
    layer: int = 1  # 1-based, for trained weights
    weights_path: str | None = None  # a saved lab run, for weights "lab"
    # positions (PositionsSpec) and masks beyond causal (MaskSpec)
    positions: str = "none"
    window: int | None = None
    stride: int | None = None
    global_tokens: int = 0
    rope_base: int | None = None  # None: 10,000, RoPE's usual base
    # the grouped family's own fields (core/variants/grouped): None / off by default
    head_dim: int | None = None  # None: d_k = D / H
    norms: bool = False  # RMSNorm on the layer's input and on each head's q and k
    input_norm: bool = False  # RMSNorm on the layer's input alone (norms covers it too)
    # the latent family's switch and sizes (core/variants/latent); None: derived from d_k
    mla: bool = False
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None

    def __post_init__(self) -> None:
        validate(self)

    # Derived sizes -------------------------------------------------------
    @property
    def H(self) -> int:
        return self.n_heads

    @property
    def Hkv(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def T(self) -> int:
        return self.seq

    @property
    def S(self) -> int:
        return self.seq if self.kv_seq is None else self.kv_seq

    @property
    def d_k(self) -> int:
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    @property
    def q_dim(self) -> int:
        """The queries' width, H·d_k: D itself unless the heads are set wider or narrower."""
        return self.H * self.d_k

    @property
    def kv_dim(self) -> int:
        return self.Hkv * self.d_k

    @property
    def group_size(self) -> int:
        """Query heads per key/value head."""
        return self.H // self.Hkv

    @property
    def normed_input(self) -> bool:
        """Whether the layer's input is RMS-normalised before the projections."""
        return self.norms or self.input_norm

    @property
    def norm_eps(self) -> float:
        """The RMSNorms' epsilon: the trained model's own, else the usual 1e-6."""
        model = MODELS.get(self.weights)
        eps = model.norm_eps if model is not None else None
        return RMS_EPS if eps is None else eps

    @property
    def is_cross(self) -> bool:
        return self.S != self.T

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype]

    @property
    def variant(self) -> str:
        """What people call this kind of attention: "MHA", "GQA", "MQA" or "MLA"."""
        return kind_of(self)

    # The descriptions the engine and the plan read (core/specs.py) -------
    @property
    def mask_spec(self) -> MaskSpec:
        return MaskSpec(self.causal, self.causal_alignment, self.window, self.stride,
                        self.global_tokens)

    @property
    def positions_spec(self) -> PositionsSpec:
        return PositionsSpec(self.positions, float(self.rope_base or ROPE_BASE))

    @property
    def weights_spec(self) -> WeightsSpec:
        return WeightsSpec(self.weights, self.seed, self.layer, self.weights_path)

    def kv_head_of(self, head: int) -> int:
        """The key/value head that query head ``head`` reads (GQA: i // (H / Hkv))."""
        return head // self.group_size

    def replace(self, **changes: Any) -> MHAConfig:
        """A new config with ``changes`` applied; raises ConfigError if invalid."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["tokens"] = list(self.tokens) if self.tokens is not None else None
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MHAConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(unknown[0], f"unknown setting {unknown[0]!r}")
        data = dict(data)
        if data.get("tokens") is not None:
            tokens = data["tokens"]
            if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
                raise ConfigError("tokens", "tokens must be a list of words")
            data["tokens"] = tuple(tokens)
        return cls(**data)


def _show_int(value: int) -> str:
    """12,345 -- or 'about 10^5000' for a number too long to print usefully (or at all)."""
    if abs(value).bit_length() > 100:
        sign = "-" if value < 0 else ""
        return f"{sign}about 10^{int(abs(value).bit_length() * 0.30103)}"
    return f"{value:,}"


def _check_int(name: str, value: Any, minimum: int = 1) -> None:
    label = FIELD_LABELS[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, f"{label} must be a whole number, got {value!r}")
    cap = CAPS[name]
    if value < minimum:
        kind = "a positive whole number" if minimum == 1 else f"at least {minimum}"
        raise ConfigError(name, f"{label} must be {kind}, got {_show_int(value)}", [{name: minimum}])
    if value > cap:
        raise ConfigError(name, f"{label} {_show_int(value)} is above the cap of {cap:,}", [{name: cap}])


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(
            name, f"{FIELD_LABELS[name]} {value!r} is not one of {', '.join(choices)}",
            [{name: choices[0]}],
        )


def validate(cfg: MHAConfig) -> None:
    """Raise ConfigError naming the first problem, with the nearest valid fixes.

    The message is about the first problem only; each suggestion is completed so
    that applying it gives a valid config even when later fields are also wrong
    (e.g. fixing heads to 4 while key/value heads is 3 also moves key/value heads).
    """
    try:
        _check(cfg)
    except ConfigError as err:
        err.suggestions = _complete(cfg, err.suggestions)
        raise


def _unchecked(cfg: MHAConfig, changes: dict[str, Any]) -> MHAConfig:
    """``cfg`` with ``changes``, built without validation (only to test a fix)."""
    trial = object.__new__(MHAConfig)
    for f in dataclasses.fields(MHAConfig):
        object.__setattr__(trial, f.name, changes.get(f.name, getattr(cfg, f.name)))
    return trial


def _complete(cfg: MHAConfig, suggestions: list[dict[str, Any]], rounds: int = 8) -> list[dict[str, Any]]:
    """Each suggestion, extended by the first fix of whatever is still wrong after it;
    ones that cannot be completed are dropped."""
    done: list[dict[str, Any]] = []
    for suggestion in suggestions:
        fix = dict(suggestion)
        for _ in range(rounds):
            try:
                _check(_unchecked(cfg, fix))
            except ConfigError as err:
                if not err.suggestions:
                    break
                fix.update(min(err.suggestions, key=lambda o: _distance(cfg, o)))
            else:
                if fix not in done:
                    done.append(fix)
                break
    return done


def _distance(cfg: MHAConfig, option: dict[str, Any]) -> tuple[int, int]:
    """Fewest fields changed, then smallest change: 5 key/value heads -> 4, not 2."""
    moved = 0
    for name, value in option.items():
        old = getattr(cfg, name, None)
        if isinstance(old, int) and isinstance(value, int):
            moved += abs(value - old)
    return len(option), moved


def _heads(values: list[int]) -> str:
    return _join(values) + (" head" if values == [1] else " heads")


def _check(cfg: MHAConfig) -> None:
    _check_int("d_model", cfg.d_model)
    _check_int("n_heads", cfg.n_heads)
    if cfg.n_kv_heads is not None:
        _check_int("n_kv_heads", cfg.n_kv_heads)
    _check_int("batch", cfg.batch)
    _check_int("seq", cfg.seq)
    if cfg.kv_seq is not None:
        _check_int("kv_seq", cfg.kv_seq)
    _check_int("seed", cfg.seed, minimum=0)
    for flag in ("causal", "bias"):
        if not isinstance(getattr(cfg, flag), bool):
            raise ConfigError(flag, f"{flag} must be true or false, got {getattr(cfg, flag)!r}")
    _check_choice("dtype", cfg.dtype, tuple(DTYPES))
    _check_choice("device", cfg.device, DEVICES)
    _check_choice("causal_alignment", cfg.causal_alignment, ALIGNMENTS)
    _check_variant_fields(cfg)

    D, H = cfg.d_model, cfg.n_heads
    head_counts = [h for h in divisors(D) if h <= CAPS["n_heads"]]
    if H > D:
        fix = nearest(head_counts, H)
        raise ConfigError(
            "n_heads", f"{H} heads is more than d_model {D}: each head needs at least one "
            f"dimension; try {_heads(fix)}", [{"n_heads": h} for h in fix],
        )
    if D % H and cfg.head_dim is None:  # heads of a width of their own need not divide D
        heads = nearest(head_counts, H)
        models = sorted({max(H, D - D % H), D - D % H + H} - {0})
        raise ConfigError(
            "n_heads", f"d_model {D} is not divisible by {H} heads; try {_heads(heads)}, "
            f"or d_model {_join(models)}",
            [{"n_heads": h} for h in heads] + [{"d_model": m} for m in models if m <= CAPS["d_model"]],
        )
    Hkv = cfg.Hkv
    if Hkv > H:
        fix = nearest(divisors(H), Hkv)
        raise ConfigError(
            "n_kv_heads", f"{Hkv} key/value heads is more than the {H} query heads; "
            f"try {_join(fix)}", [{"n_kv_heads": k} for k in fix],
        )
    if H % Hkv:
        fix = nearest(divisors(H), Hkv)
        raise ConfigError(
            "n_kv_heads", f"{H} heads cannot be shared evenly by {Hkv} key/value heads; "
            f"try {_join(fix)} key/value heads", [{"n_kv_heads": k} for k in fix],
        )
    if cfg.tokens is not None:
        if not isinstance(cfg.tokens, tuple) or not all(isinstance(t, str) and t for t in cfg.tokens):
            raise ConfigError("tokens", "tokens must be a tuple of non-empty words")
        try:  # words that are not UTF-8 (a settings file's "\udcff") have no reading
            utf8_text(" ".join(cfg.tokens), "the sentence")
        except TypedInputError as exc:
            raise ConfigError("tokens", str(exc)) from None
        if len(cfg.tokens) != cfg.seq:
            raise ConfigError(
                "tokens", f"the sentence has {len(cfg.tokens)} words but the sequence length "
                f"is {cfg.seq}", [{"seq": len(cfg.tokens)}] if len(cfg.tokens) else [],
            )
    check_variants(cfg)  # the attention family's rules, then the mask's


def _check_variant_fields(cfg: MHAConfig) -> None:
    """Types and ranges of the weights, positions, mask and attention-family fields.

    The rules that tie them to the rest (a trained model's shape, a family's sizes)
    live with the code that gives them meaning and are checked after this.
    """
    _check_choice("weights", cfg.weights, WEIGHT_SOURCES)
    _check_choice("positions", cfg.positions, POSITION_KINDS)
    _check_int("layer", cfg.layer)
    if cfg.weights_path is not None and not isinstance(cfg.weights_path, str):
        raise ConfigError("weights_path", f"weights file must be a path, got {cfg.weights_path!r}")
    for name in ("window", "stride", *(f.name for f in variant_fields() if f.kind == "int")):
        if getattr(cfg, name) is not None:
            _check_int(name, getattr(cfg, name))
    if cfg.rope_base is not None:
        _check_int("rope_base", cfg.rope_base, minimum=2)
    for name in (f.name for f in variant_fields() if f.kind == "bool"):
        if not isinstance(getattr(cfg, name), bool):
            raise ConfigError(name, f"{FIELD_LABELS[name]} must be true or false, got {getattr(cfg, name)!r}")
    _check_int("global_tokens", cfg.global_tokens, minimum=0)
    for switch in (family.switch for family in FAMILIES if family.switch):
        if not isinstance(getattr(cfg, switch), bool):
            raise ConfigError(switch, f"{FIELD_LABELS[switch]} must be true or false, got "
                              f"{getattr(cfg, switch)!r}")
    check_trained(cfg, FIELD_LABELS)  # a trained model's layer fixes the shape, mask and positions


def sentence_tokens(text: str) -> tuple[str, ...]:
    """Split a sentence into word tokens (whitespace, punctuation kept on its word)."""
    return tuple(text.split())
