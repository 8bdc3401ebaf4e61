"""Every picture a class may see: each attention family and each source of weights, on each
classroom screen, in the everyday window and in presentation, in both themes, at every stage.

``SETUPS`` names the configurations (random weights for each family and variant, then the two
trained models and a Lab run); ``SCREENS`` the screens; ``cases`` walks them all, or a fixed
sample that still meets every stage of every setup in both modes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import get_preset
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS

WORDS = ("the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired")
MODES = ("normal", "presentation")
THEMES = ("light", "dark")


@dataclass(frozen=True)
class Screen:
    name: str
    width: int  # device-independent pixels
    height: int
    dpr: float = 1.0

    def entry(self, x: int) -> dict:
        """The screen for the offscreen platform's configuration file, ``x`` pixels along."""
        return {"name": self.name, "x": x, "y": 0, "width": self.width, "height": self.height,
                "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": self.dpr}


SCREENS = (
    Screen("1024x768", 1024, 768),
    Screen("1280x720", 1280, 720),
    Screen("1366x768", 1366, 768),
    Screen("1920x1080", 1920, 1080),
    Screen("1440x900@2x", 1440, 900, 2.0),  # a high-DPI laptop: 2880×1800 pixels
)


def screens_config(screens=SCREENS) -> dict:
    """The offscreen platform's configuration: the screens side by side."""
    entries, x = [], 0
    for screen in screens:
        entries.append(screen.entry(x))
        x += screen.width
    return {"synchronousWindowSystemEvents": True, "windowFrameMargins": False, "screens": entries}


def _random(**changes) -> Callable[[MHAConfig | None], MHAConfig | None]:
    def make(_lab: MHAConfig | None) -> MHAConfig:
        fields = {"d_model": 512, "n_heads": 8, "batch": 2, "seq": len(WORDS), "tokens": WORDS,
                  "device": "cpu", **changes}
        return MHAConfig(**fields)
    return make


def _preset(key: str, **changes) -> Callable[[MHAConfig | None], MHAConfig]:
    def make(_lab: MHAConfig | None) -> MHAConfig:
        base = MHAConfig(batch=1, seq=len(WORDS), tokens=WORDS, device="cpu")
        return get_preset(key).apply(base).replace(**changes)
    return make


def _trained(key: str, layer: int) -> Callable[[MHAConfig | None], MHAConfig | None]:
    def make(_lab: MHAConfig | None) -> MHAConfig | None:
        model = MODELS[key]
        if not runtime.is_available(model)[0]:
            return None  # its package is not installed: said by the walk, not an error
        pieces = runtime.as_pieces(model, WORDS)
        return MHAConfig(**trained_fields(model, layer), weights=model.key, layer=layer,
                         tokens=pieces, seq=len(pieces), batch=1, device="cpu")
    return make


def _lab(lab: MHAConfig | None) -> MHAConfig | None:
    return lab  # made by whoever trained and saved the run


@dataclass(frozen=True)
class Setup:
    name: str
    make: Callable[[MHAConfig | None], MHAConfig | None]  # given the Lab run's; None: not here


SETUPS = (
    Setup("MHA", _random()),
    Setup("GQA", _random(n_kv_heads=2)),
    Setup("MQA", _random(n_kv_heads=1)),
    Setup("MLA", _preset("deepseek-v3")),
    Setup("RoPE", _random(positions="rope")),
    Setup("window", _random(n_kv_heads=2, positions="rope", causal=True, window=4)),
    Setup("stride", _random(causal=True, stride=3)),
    Setup("global tokens", _random(causal=True, window=3, global_tokens=2)),
    Setup("positions", _random(positions="sinusoidal")),
    Setup("MiniLM", _trained("minilm-l6", 1)),
    Setup("Gemma 3", _trained("gemma3-270m", 6)),
    Setup("Lab run", _lab),
)


@dataclass(frozen=True)
class Case:
    """One window state; the walk looks at its stages: every one, or (``part`` = (i, n)) those
    whose place in the plan is i modulo n."""

    setup: Setup
    screen: Screen
    mode: str
    theme: str
    part: tuple[int, int] | None = None

    def stages(self, plan: tuple[str, ...]) -> tuple[str, ...]:
        if self.part is None:
            return plan
        i, n = self.part
        return tuple(stage for place, stage in enumerate(plan) if place % n == i)


def cases(sample: bool = False, setups=SETUPS, screens=SCREENS) -> Iterator[Case]:
    """Every setup on every screen in each mode and theme. ``sample``: each setup on one
    screen and one theme (turn by turn), every other stage in the window and the rest in
    presentation (the other way round for the next setup): a short run still meets every
    stage of every family and model, each in both modes, and every screen and theme."""
    for i, setup in enumerate(setups):
        if sample:
            screen, theme = screens[i % len(screens)], THEMES[i % len(THEMES)]
            for j, mode in enumerate(MODES):
                yield Case(setup, screen, mode, theme, part=((i + j) % 2, 2))
            continue
        for screen in screens:
            for theme in THEMES:
                for mode in MODES:
                    yield Case(setup, screen, mode, theme)
