"""Cancel is seen within one small piece of work, the projections included, and
progress moves while they run."""

from __future__ import annotations

import pytest
import torch

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.engine import runner as engine
from mha_explorer.core.errors import Cancelled
from mha_explorer.core.kernels.steps import TILE_FLOPS, Work, linear
from mha_explorer.core.plan.build import build_plan


def test_cancel_after_the_first_progress_stops_before_any_more_work():
    c = MHAConfig(d_model=1024, n_heads=16, batch=2, seq=512, device="cpu")
    total = build_plan(c).total_flops
    projection_q = 2 * c.batch * c.T * c.d_model * c.d_model
    seen: list[float] = []
    flag = {"set": False}

    def progress(fraction: float) -> None:
        seen.append(fraction)
        flag["set"] = True

    with pytest.raises(Cancelled):
        engine.run(c, cancel=lambda: flag["set"], progress=progress)
    # progress moved inside the first projection, and nothing ran once the flag was up
    assert len(seen) == 1
    assert 0 < seen[0] <= projection_q / total


class CountingWork(Work):
    """Records the floating-point work done between two looks at cancel."""

    def __init__(self):
        super().__init__(1, None, None)
        self.between: list[int] = [0]

    def check(self) -> None:
        self.between.append(0)

    def advance(self, flops: int) -> None:
        self.between[-1] += flops


@pytest.mark.parametrize("d_in,d_out,rows", [(16384, 16384, 2048), (65536, 65536, 4096), (4096, 1024, 8192),
                                             (64, 64, 100_000)])
def test_projection_work_between_cancel_checks_stays_small(d_in, d_out, rows):
    """At the largest sizes the guard accepts (d_model 16384, T 2048) one projection is
    137 GFLOP; computed on the meta device, only the tiling is exercised."""
    x = torch.empty(1, rows, d_in, device="meta")
    w = torch.empty(d_out, d_in, device="meta")
    work = CountingWork()
    out = linear(x, w, torch.empty(d_out, device="meta"), work)
    assert out.shape == (1, rows, d_out)
    assert sum(work.between) == 2 * rows * d_in * d_out
    assert max(work.between) <= TILE_FLOPS


def test_cancel_is_seen_while_weights_are_drawn_and_nothing_half_made_is_kept():
    from mha_explorer.core.engine.weights import WEIGHT_CACHE

    WEIGHT_CACHE.clear()
    c = MHAConfig(d_model=2048, n_heads=16, batch=1, seq=4, device="cpu")  # 4M numbers per matrix
    looks = [0]

    def cancel() -> bool:
        looks[0] += 1
        return looks[0] >= 3  # up on the third look: inside the first weight matrix

    with pytest.raises(Cancelled):
        engine.run(c, cancel=cancel)
    assert looks[0] == 3
    again = engine.run(c)  # the cancelled draw is not reused: the weights are whole
    W_O = torch.from_numpy(again.weights["W_O"])
    assert W_O.std().item() == pytest.approx(1 / c.d_model ** 0.5, rel=0.01)


def _after(n: int):
    """A cancel that says stop from its ``n``-th look on, counting the looks."""
    looks = [0]

    def cancel() -> bool:
        looks[0] += 1
        return looks[0] >= n

    return cancel, looks


def test_tiles_with_one_by_one_blocks_stop_within_a_tile():
    """A million 1 × 1 tiles once ran for minutes with nobody able to stop them."""
    from mha_explorer.core.display.generation import tiles_data

    cfg = MHAConfig(d_model=8, n_heads=1, batch=1, seq=1024, device="cpu")
    cancel, looks = _after(50)
    with pytest.raises(Cancelled):
        tiles_data(cfg, (1, 1), cancel=cancel)
    assert looks[0] == 50  # nothing went on after the first "stop"


def test_decode_stops_between_steps_and_says_how_far_it_got():
    from mha_explorer.core.display.generation import decode_data

    cfg = MHAConfig(d_model=64, n_heads=4, batch=1, seq=6, device="cpu")
    seen: list[float] = []
    with pytest.raises(Cancelled):  # asked to stop once two steps have begun
        decode_data(cfg, 8, 40, cancel=lambda: len(seen) >= 2, progress=seen.append)
    assert seen == [0.0, 1 / 41]  # the third step never began


def test_decode_hears_cancel_while_a_wide_layer_s_weights_are_drawn():
    """Drawing d_model 2048's weights took a third of a second with nobody looking."""
    from mha_explorer.core.display.generation import decode_data

    cfg = MHAConfig(d_model=2048, n_heads=16, batch=1, seq=6, device="cpu")
    cancel, looks = _after(4)
    seen: list[float] = []
    with pytest.raises(Cancelled):
        decode_data(cfg, 4, 2, cancel=cancel, progress=seen.append)
    assert looks[0] == 4 and seen == []  # stopped before the first step: inside the drawing
