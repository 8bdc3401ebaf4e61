"""Where a layer's weights come from, as the engine and the plan read it (no torch)."""

from __future__ import annotations

from dataclasses import dataclass

RANDOM = "random"
LAB = "lab"  # a model trained in the Lab, saved at a path


@dataclass(frozen=True)
class WeightsSpec:
    """``random`` (seeded), a trained model's key (``layer`` 1-based) or ``lab`` (a model
    trained in the lab, saved at ``path``)."""

    source: str = "random"
    seed: int = 0
    layer: int = 1
    path: str | None = None

    @property
    def trained(self) -> bool:
        return self.source != RANDOM
