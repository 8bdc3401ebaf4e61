"""What every kind of attention answers, and the small records its answers are made of (no torch).

A family of attention (``grouped``: MHA, GQA and MQA, told apart by the key/value heads;
``latent``: multi-head latent attention) is one object. The config asks it for its rules and
fields, the plan for its stages, parameters and KV cache, the engine for the module that
computes it, the reference
code for its listing, the decode and tile plans for their per-step arithmetic. Nothing else
branches on which family a config belongs to.

The config reaches a family as a duck-typed object (the family sits below the config), so a
family never imports the config module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig
    from mha_explorer.core.stages.catalog import StageId
    from mha_explorer.core.stages.records import ParamPlan, Stage


@dataclass(frozen=True)
class VariantField:
    """A config field a family owns: how the window's form and the command line offer it."""

    name: str  # the config field, e.g. "kv_lora_rank"
    symbol: str  # e.g. "r_kv"
    label: str  # the form's label
    flag: str  # the command line's flag, e.g. "--kv-lora-rank"
    metavar: str
    unset: str  # what leaving it unset means, shown for 0 / None: "auto", "none"
    help: str
    cap: int = 0  # the largest whole number (int fields)
    kind: str = "int"  # "int" (a size, None = unset) or "bool" (on/off, False = unset)

    @property
    def default(self) -> Any:
        return False if self.kind == "bool" else None


@dataclass(frozen=True)
class HeadWidths:
    """Per head: the query/key width (the scores are scaled by its root) and the value width;
    and how many key/value heads attention reads (Hkv; H where keys are rebuilt per head)."""

    qk: int
    v: int
    kv_heads: int


@dataclass(frozen=True)
class CacheLayout:
    """What one layer keeps per cached token, and its formula for people.

    ``symbols`` and ``numbers`` are the per-token element count written out (the panels and
    the command line print them as they are); ``elements_per_token`` is their value.
    """

    names: tuple[str, ...]  # ("K", "V") or ("c_KV", "k_rope")
    dims: tuple[str, ...]  # named dims of the cached tensor, the token axis named "S_t"
    per_token: tuple[int, ...]  # elements per token per sequence, for each cached tensor
    lead: tuple[int, ...]  # the shape before the token axis, e.g. (B, Hkv)
    trail: int  # the size after the token axis (d_k, or the latent width)
    symbols: str  # e.g. "2 × Hkv × d_k"
    numbers: str  # e.g. "2 × 2 × 64"

    def shape(self, tokens: int) -> list[int]:
        return [*self.lead, tokens, self.trail]

    @property
    def elements_per_token(self) -> int:
        return sum(self.per_token)


@dataclass(frozen=True)
class CodeListing:
    """A reference implementation's text, and the lines (1-based, inclusive) of each stage."""

    text: str
    ranges: dict[str, tuple[int, int]]


class AttentionFamily:
    """The interface; ``grouped`` and ``latent`` each fill it in once."""

    key: str  # "grouped" or "latent"
    title: str  # for people: the form's group title, the About text
    kinds: tuple[str, ...]  # what people call its members, e.g. "MHA", "GQA", "MQA"
    kind_tips: dict[str, str]
    fields: tuple[VariantField, ...] = ()
    switch: str | None = None  # the config's on/off field for it; None for the default family
    compute_module: str  # dotted path of its torch module (imported only by the engine)
    computed_whole: bool = False  # no row blocks: the whole batch in one pass
    classic_maps: frozenset[str] = frozenset()  # stages the heads panel draws in the classic layout
    # stages the stage diagram draws with its classic pictures, in this family's own widths
    classic_diagrams: frozenset[str] = frozenset()
    # where a trace keeps the query and key RoPE turns, before it turns them (stage, tensor),
    # and what part of a head it turns, in words
    rope_inputs: tuple[tuple[str, str], tuple[str, str]]
    rope_part: str = "each head"

    # config -------------------------------------------------------------------------------
    def kind(self, cfg: MHAConfig) -> str:
        raise NotImplementedError

    def changes_for(self, kind: str, cfg: MHAConfig) -> dict[str, Any]:
        """The config edit that makes ``cfg`` the member ``kind`` of this family."""
        raise NotImplementedError

    def kv_heads_rule(self, kind: str) -> str:
        """How ``kind`` sets the key/value heads: "all" (one per query head), "one", or "free"
        (the person chooses, between 1 and H)."""
        return "all"

    def leave(self) -> dict[str, Any]:
        """The edit that turns this family off: its switch (if it has one) and its own fields
        back to their defaults."""
        cleared = {f.name: f.default for f in self.fields}
        return {self.switch: False, **cleared} if self.switch else cleared

    def check(self, cfg: MHAConfig, owned: bool) -> None:
        """ConfigError for a rule of this family that ``cfg`` breaks. ``owned``: ``cfg`` is of
        this family; a family also refuses its own fields set on another family's config."""

    def describe(self, cfg: MHAConfig) -> str:
        """The sizes in effect, in one line for the form ("" when there is nothing to add)."""
        return ""

    # arithmetic -----------------------------------------------------------------------------
    def widths(self, cfg: MHAConfig) -> HeadWidths:
        raise NotImplementedError

    def rope_width(self, cfg: MHAConfig) -> int:
        """The per-head width RoPE turns."""
        raise NotImplementedError

    def dims(self, cfg: MHAConfig) -> dict[str, int]:
        """Symbols beyond B, T, S, D, H, Hkv and d_k that its stages name."""
        return {}

    def stages(self, cfg: MHAConfig) -> tuple[Stage, ...]:
        raise NotImplementedError

    def params(self, cfg: MHAConfig) -> ParamPlan:
        raise NotImplementedError

    def cache(self, cfg: MHAConfig) -> CacheLayout:
        raise NotImplementedError

    def step_flops(self, cfg: MHAConfig, rows: int, keys: int) -> dict[StageId, int]:
        """FLOPs of ``rows`` new tokens attending over ``keys`` cached keys, by stage, in the
        form a decoder runs."""
        raise NotImplementedError

    def weights_read(self, cfg: MHAConfig) -> int:
        """Numbers of weight one decoding step reads."""
        raise NotImplementedError

    def summary(self, cfg: MHAConfig) -> dict | None:
        """Extra figures for ``shapes --json``; None when there are none."""
        return None

    def whole_peak(self, cfg: MHAConfig, plan, weights: int, host_copy: bool) -> int | None:
        """Peak bytes of a whole-batch run, for a family that only runs whole; else None."""
        return None

    # words ------------------------------------------------------------------------------------
    def reference_code(self, cfg: MHAConfig) -> CodeListing:
        raise NotImplementedError

    def cache_notes(self, cfg: MHAConfig) -> tuple[str, ...]:
        """What ``decode`` says about this family's cache and step arithmetic."""
        return ()
