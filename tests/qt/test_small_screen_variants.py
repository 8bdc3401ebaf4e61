"""On a 1024×768 screen the window stays 1024 wide whatever attention is chosen: MLA's
extra stage and fields, positions' stage and a preset's longer plan wrap the stage row
and keep the configuration form inside its dock, never widening the window."""

from __future__ import annotations

import pytest
from waits import UI_MS

from mha_explorer.core.config.presets import PRESETS
from mha_explorer.qt.panels.variant_fields import ATTENTION_KINDS, kind_changes

SCREEN = (1024, 768)


def inside(child, window) -> bool:
    """The widget drawn whole inside the window: no part past its right or bottom edge."""
    box = child.rect().translated(child.mapTo(window, child.rect().topLeft()))
    return window.rect().contains(box)


def buttons_whole(window) -> bool:
    return all(b.width() >= b.minimumSizeHint().width() for b in window.stepper.stage_buttons.values())


def assert_fits(window, what: str) -> None:
    assert window.width() <= SCREEN[0] and window.height() <= SCREEN[1], (what, window.size())
    assert window.minimumSizeHint().width() <= SCREEN[0], (what, window.minimumSizeHint())
    for stage, button in window.stepper.stage_buttons.items():  # every stage, its name uncut
        assert inside(button, window), (what, stage)
        assert button.width() >= button.minimumSizeHint().width(), (what, stage)
    form = window.controls.form_scroll  # the form scrolls down, never sideways: nothing cut
    assert form.widget().minimumSizeHint().width() <= form.viewport().width(), what
    assert form.widget().width() <= form.viewport().width(), what
    fields = window.variant_scroll
    assert fields.widget().minimumSizeHint().width() <= fields.viewport().width(), what


def test_every_attention_kind_and_positions_fit_1024_by_768(qtbot, make_window, settle):
    window = make_window(size=SCREEN)
    for kind in ATTENTION_KINDS:
        for positions in ("none", "rope"):  # rope adds a stage, MLA one more
            window.controller.update(**kind_changes(kind, window.controller.config),
                                     positions=positions)
            settle(window.controller)
            # the stage row lays itself out again in a posted request: wait for it, then check
            qtbot.waitUntil(lambda: buttons_whole(window), timeout=UI_MS)
            assert window.controller.config.variant == kind
            assert_fits(window, f"{kind} {positions}")


def test_picking_mla_in_the_form_keeps_the_window_1024_wide(qtbot, make_window, settle):
    window = make_window(size=SCREEN)
    box = window.variant_fields.kind_box
    box.setCurrentIndex(ATTENTION_KINDS.index("MLA"))
    box.activated.emit(box.currentIndex())  # as a pick from the list
    settle(window.controller)
    assert window.controller.config.variant == "MLA"
    assert_fits(window, "MLA")


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_fits_1024_by_768(qtbot, make_window, settle, preset):
    window = make_window(size=SCREEN, wait=False)
    window.controller.apply_preset(preset)
    settle(window.controller)
    assert_fits(window, preset)
