"""The read-outs: the shapes table, the parameter panel and the status bar."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMainWindow
from waits import TRACE_MS, UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.display.colors import dim_color
from mha_explorer.core.plan.memory import format_bytes
from mha_explorer.core.units import format_count
from mha_explorer.qt.panels.parameters import ParamsPanel
from mha_explorer.qt.panels.shapes import CHIPS_ROLE, COLUMNS, ShapesTable
from mha_explorer.qt.shell.status_bar import StatusBarView

CPU = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu")


def show(qtbot, widget):
    qtbot.addWidget(widget)
    widget.show()
    qtbot.waitExposed(widget, timeout=UI_MS)
    return widget


# shapes ---------------------------------------------------------------------------------
def test_every_stage_and_tensor_has_a_row_with_its_dims_and_numbers(qtbot, controller):
    table = show(qtbot, ShapesTable(controller))
    model = table.model()
    assert [model.headerData(c, Qt.Orientation.Horizontal) for c in range(len(COLUMNS))] \
        == list(COLUMNS)
    assert model.rowCount() == sum(len(s.tensors) for s in controller.plan.stages)

    assert table.cell_text("transpose", "K", "Dims") == "B, Hkv, S, d_k"
    assert table.cell_text("transpose", "K", "Shape") == "2 × 4 × 6 × 16"
    assert table.cell_text("transpose", "K", "Strides") == "(384, 16, 64, 1)"
    assert table.cell_text("transpose", "K", "Contiguous") == "no (view)"
    assert table.cell_text("transpose", "K", "New memory") == "view, no copy"
    assert table.cell_text("merge", "merged", "Contiguous") == "yes"
    project_flops = controller.plan.stage("project").flops
    assert table.cell_text("project", "Q", "FLOPs") == format_count(project_flops)
    assert table.cell_text("input", "X", "New memory") == format_bytes(2 * 6 * 64 * 4)

    # each dim is drawn in its own colour, the same in the Dims and Shape columns
    row = table.shapes_model.row_of("view", "Q")
    dims = model.index(row, COLUMNS.index("Dims")).data(CHIPS_ROLE)
    sizes = model.index(row, COLUMNS.index("Shape")).data(CHIPS_ROLE)
    assert [label for label, _, _ in dims] == ["B", "T", "H", "d_k"]
    assert [label for label, _, _ in sizes] == ["2", "6", "4", "16"]
    assert [bg.name() for _, bg, _ in dims] == [bg.name() for _, bg, _ in sizes] \
        == [dim_color(d).lower() for d in ("B", "T", "H", "d_k")]


def test_latent_attention_s_own_dims_take_the_colours_the_diagram_gives_them(qtbot, make_controller):
    """One colour rule in every panel: d_v reads as d_k's kin, H·d_v as D's, in the table
    as in the stage diagram (it was grey here while the diagram drew it in d_k's colour)."""
    mla = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu", mla=True, kv_lora_rank=16,
                    q_lora_rank=24, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=12,
                    positions="rope")
    table = show(qtbot, ShapesTable(make_controller(mla)))
    model = table.shapes_model
    colours = {}
    for stage, tensor in (("weighted_sum", "context"), ("merge", "merged")):
        chips = model.index(model.row_of(stage, tensor), COLUMNS.index("Dims")).data(CHIPS_ROLE)
        colours.update({label: bg.name() for label, bg, _ in chips})
    assert colours["d_v"] == dim_color("d_k").lower()
    assert colours["H·d_v"] == dim_color("D").lower()
    assert colours["B"] == dim_color("B").lower()


def test_the_attention_matrices_are_marked_as_the_quadratic_term(qtbot, controller):
    table = show(qtbot, ShapesTable(controller))
    for stage, tensor in (("scores", "scores"), ("softmax", "weights")):
        text = table.cell_text(stage, tensor, "New memory")
        assert text == f"{format_bytes(2 * 4 * 6 * 6 * 4)}  ∝ T·S"
    assert "∝" not in table.cell_text("output", "Y", "New memory")


def test_a_config_edit_updates_the_table_at_once(qtbot, controller):
    """The table follows each edit in the same turn of the event loop, before any trace
    (how long that takes is benchmarks/bench_tables.py's figure: one frame)."""
    table = show(qtbot, ShapesTable(controller))
    for d_model in (128, 256, 512, 1024, 2048, 64) * 3:
        controller.update(d_model=d_model)
        table.viewport().repaint()
        assert table.cell_text("view", "Q", "Shape") == f"2 × 6 × 4 × {d_model // 4:,}"


def test_the_current_stage_is_scrolled_into_view(qtbot, make_controller):
    controller = make_controller(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, kv_seq=9))
    table = ShapesTable(controller)
    table.resize(700, 120)  # room for a few rows only
    show(qtbot, table)
    controller.last_stage()
    row = table.shapes_model.row_of("output", "Y")
    assert table.highlighted_rows() == [row]
    assert table.viewport().rect().intersects(table.visualRect(table.model().index(row, 0)))


# parameters -------------------------------------------------------------------------------
def test_params_show_formula_numbers_and_count_for_each_weight(qtbot, controller, settle):
    panel = show(qtbot, ParamsPanel(controller))
    name, formula, count = (label.text().replace("\u00a0", " ") for label in panel.term_labels[0])
    assert (name, formula, count) == ("W_Q", "D × D = 64 × 64", "4,096")
    assert panel.total_formula_label.text() == "4·D² + 4·D"
    assert panel.total_label.text() == "16,640"
    assert panel.one_head_label.text() == "16,640"
    assert panel.one_head_note.text().startswith("the same")
    assert panel.kv_token_label.text() == format_bytes(2 * 64 * 4)
    assert panel.kv_batch_label.text() == format_bytes(2 * 64 * 4 * 6 * 2)
    assert panel.attention_label.text() == format_bytes(2 * 4 * 6 * 6 * 4)

    controller.update(bias=False)
    settle(controller)
    assert panel.total_formula_label.text() == "4·D²"
    assert panel.total_label.text() == "16,384"
    assert not panel.term_labels[4][0].isVisible()  # no bias rows

    controller.update(n_heads=16)  # more heads, same weights: the point to show
    settle(controller)
    assert panel.total_label.text() == "16,384"


def test_mqa_params_compare_with_full_mha(qtbot, controller, settle):
    panel = show(qtbot, ParamsPanel(controller))
    controller.update(n_kv_heads=1, bias=False)
    settle(controller)
    assert panel.total_label.text() == f"{2 * 64 * 64 + 2 * 64 * 16:,}"
    assert panel.mha_label.text() == f"{4 * 64 * 64:,}"
    assert panel.saving_label.isVisible()
    assert panel.saving_label.text() == f"{2 * 64 * 48:,}"
    assert "KV cache is 4× smaller" in panel.saving_note.text()
    assert panel.kv_token_label.text() == format_bytes(2 * 16 * 4)


# status bar ---------------------------------------------------------------------------------
def test_the_status_bar_shows_device_time_and_memory_after_a_trace(qtbot, make_controller):
    controller = make_controller(CPU, wait=False)
    window = QMainWindow()
    view = StatusBarView(controller, window.statusBar())
    show(qtbot, window)
    with qtbot.waitSignal(controller.trace_ready, timeout=TRACE_MS):
        pass
    assert view.device_label.text() == "device: cpu"
    assert view.time_label.text().startswith("computed in ")
    assert view.time_label.text().endswith(("ms", "s"))
    # read a turn after the status bar's first paint, so a quick trace can come first
    qtbot.waitUntil(lambda: view.memory_label.text() != "", timeout=TRACE_MS)
    assert view.memory_label.text().startswith("est. ")
    assert "budget" in view.memory_label.text()
    assert not view.progress_bar.isVisible()
    assert view.isVisible() and window.statusBar().isAncestorOf(view)


def test_over_budget_says_so_and_the_shapes_stay(qtbot, make_controller):
    controller = make_controller(CPU, wait=False, budget_bytes=1000)
    view = show(qtbot, StatusBarView(controller))
    view.resize(1200, view.height())
    table = show(qtbot, ShapesTable(controller))
    with qtbot.waitSignal(controller.trace_failed, timeout=TRACE_MS):
        pass
    qtbot.waitUntil(lambda: view.memory_label.text() != "", timeout=TRACE_MS)  # as above
    assert view.memory_label.text().startswith("over budget: est. ")
    assert view.memory_label.text().endswith("of 1000 B — not computed")
    assert view.message_label.text().startswith("not computed: ")
    assert "budget" in view.message and "still shown" in view.message
    assert table.cell_text("scores", "scores", "Shape") == "2 × 4 × 6 × 6"
    assert controller.trace is None


def test_a_long_run_shows_progress_and_cancel_stops_it(qtbot, make_controller):
    controller = make_controller(CPU)
    view = show(qtbot, StatusBarView(controller))
    view.resize(1200, view.height())
    controller.compute_started.emit()  # as the controller announces a run
    controller.compute_progressed.emit(0.4)
    qtbot.waitUntil(view.cancel_button.isVisible, timeout=UI_MS)  # shown only once a run is not quick
    assert view.progress_bar.value() == 40

    qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    assert not view.progress_bar.isVisible() and not view.cancel_button.isVisible()
    assert view.message_label.text() == "computation cancelled"


def test_a_failure_is_a_message_not_a_crash(qtbot, make_controller):
    controller = make_controller(CPU)
    view = show(qtbot, StatusBarView(controller))
    view.resize(1200, view.height())  # wide enough to show the whole message
    controller.trace_failed.emit("RuntimeError: CUDA out of memory")
    assert view.message_label.text() == "not computed: RuntimeError: CUDA out of memory"
    assert view.device_label.text() == "device: cpu"  # the last good trace is still described
