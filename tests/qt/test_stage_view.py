"""The stage view: the diagram labels carry the plan's shapes, the code panel
lights the current stage's lines, and stage changes slide (or jump, with
reduced motion) without leaving anything behind."""

from __future__ import annotations

import subprocess
import sys

import pytest
from PySide6.QtCore import QPoint

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.core.text.reference_code import stage_lines
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.stage.diagram_items import ChipItem, GapItem, NoteItem, TextItem
from mha_explorer.qt.stage.diagram_motion import duration_for
from mha_explorer.qt.stage.diagram_style import dim_label, shape_text
from mha_explorer.qt.stage.stage_view import StageView

CONFIGS = {
    "mha": MHAConfig(d_model=64, n_heads=4, batch=2, seq=6),
    "gqa": MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, batch=2, seq=5),
    "mqa": MHAConfig(d_model=48, n_heads=6, n_kv_heads=1, batch=3, seq=4),
    "cross-causal": MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, batch=1, seq=7, kv_seq=3,
                              causal=True, causal_alignment="bottom-right", bias=False),
}
SCREEN = (1920, 1080)


def _view(qtbot, controller, size=SCREEN, reduced=True) -> StageView:
    view = StageView(controller)
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    qtbot.waitExposed(view)
    view.set_reduced_motion(reduced)
    return view


@pytest.fixture
def unstarted():
    """A controller for sizes nobody computes: plan only, no worker thread."""
    made = []

    def make(cfg: MHAConfig) -> Controller:
        made.append(Controller(cfg))
        return made[-1]

    yield make
    for ctrl in made:
        ctrl.shutdown()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_stage_labels_the_plans_shapes_and_dims(qtbot, make_controller, name):
    ctrl = make_controller(CONFIGS[name])
    view = _view(qtbot, ctrl)
    for stage_id in STAGE_IDS:
        ctrl.set_stage(stage_id)
        labels = view.diagram.label_texts()
        joined = "\n".join(labels)
        for spec in ctrl.plan.stage(stage_id).tensors:
            assert shape_text(spec.shape) in joined, (stage_id, spec.name, labels)
            for dim, size in zip(spec.dims, spec.shape, strict=True):
                assert dim_label(dim, size) in labels, (stage_id, spec.name, dim, labels)


BIG = MHAConfig(d_model=12288, n_heads=96, n_kv_heads=8, batch=1, seq=2048)  # shapes only


@pytest.mark.parametrize("name", [*CONFIGS, "big"])
@pytest.mark.parametrize("size", [SCREEN, (1280, 720)])
def test_labels_stay_on_the_canvas_and_do_not_overlap(qtbot, make_controller, unstarted, name,
                                                      size):
    ctrl = unstarted(BIG) if name == "big" else make_controller(CONFIGS[name])
    view = _view(qtbot, ctrl, size=size)
    for stage_id in STAGE_IDS:
        ctrl.set_stage(stage_id)
        canvas = view.diagram.sceneRect().adjusted(-1, -1, 1, 1)
        texts = [i for i in view.diagram.items_by_key().values()
                 if isinstance(i, (ChipItem, TextItem, NoteItem))]
        for item in view.diagram.items_by_key().values():
            assert canvas.contains(item.sceneBoundingRect()), (stage_id, item.key)
        for i, a in enumerate(texts):
            for b in texts[i + 1:]:
                overlap = a.sceneBoundingRect().intersected(b.sceneBoundingRect())
                assert overlap.width() < 2 or overlap.height() < 2, (stage_id, a.key, b.key)


def test_labels_are_projector_sized(qtbot, controller):
    view = _view(qtbot, controller)
    for stage_id in STAGE_IDS:
        controller.set_stage(stage_id)
        for item in view.diagram.items_by_key().values():
            if isinstance(item, (ChipItem, TextItem, NoteItem)):
                assert item.font().pointSizeF() >= 14, (stage_id, item.key)
    assert view.title.font().pointSizeF() >= 20 and view.formula.font().pointSizeF() >= 16


def test_many_heads_are_summarised_not_drawn_as_slivers(qtbot, unstarted):
    ctrl = unstarted(BIG)
    view = _view(qtbot, ctrl)
    for stage_id in ("view", "transpose", "merge"):
        ctrl.set_stage(stage_id)
        keys = view.diagram.items_by_key()
        heads = [k for k in keys if k.startswith(("Q.h", "C.h", "M.h")) and k[3:].isdigit()]
        assert 0 < len(heads) <= 8, (stage_id, heads)
        # the heads not drawn are a dotted gap: a "… 96" written there sat on the tensor
        assert any(isinstance(item, GapItem) for item in keys.values()), stage_id
        assert "H=96" in view.diagram.label_texts()
    ctrl.set_stage("project")
    labels = view.diagram.label_texts()
    assert "D=12,288" in labels and "Hkv·d_k=1,024" in labels


def test_highlighted_code_lines_follow_the_stage(qtbot, controller):
    view = _view(qtbot, controller)
    ranges = stage_lines(controller.config)
    controller.first_stage()
    for stage_id in STAGE_IDS:
        first, last = ranges[stage_id]
        assert controller.stage == stage_id
        assert view.code_panel.highlighted_lines() == list(range(first, last + 1)), stage_id
        assert view.code_panel.highlighted_range() == (first, last)
        controller.next_stage()
    controller.set_stage("scores")
    lines = view.code_panel.toPlainText().splitlines()
    lit = [lines[n - 1] for n in view.code_panel.highlighted_lines()]
    assert any("k.transpose(-2, -1)" in line for line in lit)


def test_code_follows_the_config(qtbot, controller, settle):
    view = _view(qtbot, controller)
    controller.set_stage("scores")
    assert "repeat_interleave" not in view.code_panel.toPlainText()
    with qtbot.waitSignal(controller.config_changed):
        controller.update(n_kv_heads=2, causal=True)
    settle(controller)
    code = view.code_panel.toPlainText()
    assert "repeat_interleave" in code and "masked_fill" in code
    first, last = stage_lines(controller.config)["scores"]
    assert view.code_panel.highlighted_lines() == list(range(first, last + 1))
    assert view.code_panel.horizontalScrollBar().maximum() == 0  # the code fits its width


def test_title_formula_and_explanation_come_from_the_plan(qtbot, controller):
    view = _view(qtbot, controller)
    controller.set_stage("merge")
    stage = controller.plan.stage("merge")
    assert view.title.text() == stage.title
    assert view.formula.text() == stage.formula
    assert view.explanation.text() == stage.explanation


def test_reduced_motion_jumps(qtbot, controller):
    view = _view(qtbot, controller, reduced=True)
    for _ in range(3):
        controller.next_stage()
        assert not view.is_animating()
        assert len(view.diagram.scene().items()) == len(view.diagram.items_by_key())


def test_normal_motion_slides_then_settles(qtbot, controller):
    view = _view(qtbot, controller, reduced=False)
    controller.set_speed(3.0)
    assert view.diagram.duration_ms() == duration_for(3.0) < duration_for(1.0)
    for _ in range(len(STAGE_IDS) - 1):
        controller.next_stage()
        assert view.is_animating()
        assert view.diagram.transition.animation.duration() == duration_for(3.0)
        qtbot.waitUntil(lambda: not view.is_animating(), timeout=5_000)
        # the previous stage's items are gone, every current item is fully shown
        items = view.diagram.items_by_key()
        assert len(view.diagram.scene().items()) == len(items)
        assert all(item.opacity() == 1.0 for item in items.values())


def test_a_stage_change_mid_slide_finishes_the_first_one(qtbot, controller):
    view = _view(qtbot, controller, reduced=False)
    controller.next_stage()
    controller.next_stage()
    controller.next_stage()
    assert view.diagram.stage == "transpose"
    qtbot.waitUntil(lambda: not view.is_animating(), timeout=5_000)
    assert len(view.diagram.scene().items()) == len(view.diagram.items_by_key())


def test_turning_reduced_motion_on_mid_slide_settles_at_once(qtbot, controller):
    view = _view(qtbot, controller, reduced=False)
    controller.next_stage()
    assert view.is_animating()
    view.set_reduced_motion(True)
    assert not view.is_animating()
    assert view.reduced_motion


def test_grids_show_values_only_from_a_trace_of_this_config(qtbot, controller, settle):
    view = _view(qtbot, controller)
    controller.set_stage("softmax")
    assert view.diagram.items_by_key()["grid"].has_values()
    with qtbot.waitSignal(controller.config_changed):
        controller.update(seq=5)  # the old trace no longer fits: draw the outline only
    settle(controller)
    # the new trace may already be in (a fast machine): the grid's values are its, or none
    fresh = controller.trace is not None and controller.trace.config == controller.config
    assert view.diagram.items_by_key()["grid"].has_values() == fresh
    qtbot.waitUntil(lambda: view.diagram.items_by_key()["grid"].has_values(), timeout=60_000)


def test_the_view_modules_do_not_import_torch():
    code = ("import sys; import mha_explorer.qt.stage.stage_view; "
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_header_moves_above_the_diagram_when_the_view_is_narrow(qtbot, controller):
    def top_left(widget):
        return widget.mapTo(view, QPoint(0, 0))

    view = _view(qtbot, controller, size=SCREEN)
    assert not view.compact
    assert top_left(view.header).x() >= view.diagram.width()  # beside the diagram
    view.resize(1000, 700)
    qtbot.waitUntil(lambda: view.compact)
    qtbot.waitUntil(lambda: top_left(view.diagram).y() >= view.header.height())  # above it
    assert view.diagram.width() > view.code_panel.width()
    view.resize(*SCREEN)
    qtbot.waitUntil(lambda: not view.compact)
