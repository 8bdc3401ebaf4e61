"""A comma in a number field is refused in a line under the field, never read as digits.

Qt's spin box dropped a group separator wherever it stood once its range reached
1,000: "64,64" in the length field became 6464 (and "1,0" became 10) while the field
still showed what was typed. A separator where the box puts one ("6,464") still reads.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from mha_explorer.qt.lab.controls import LabControls
from mha_explorer.qt.panels.configuration import ControlsPanel
from mha_explorer.qt.panels.variant_fields import VariantFields


def _type(qtbot, spin, text: str, enter: bool = True) -> None:
    qtbot.keyClick(spin, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(spin, text)
    if enter:
        qtbot.keyClick(spin, Qt.Key.Key_Return)


def test_a_comma_in_the_length_is_refused_under_it_and_never_read_as_digits(qtbot, controller):
    controls = ControlsPanel(controller)
    qtbot.addWidget(controls)
    controls.show()
    _type(qtbot, controls.seq_spin, "64,64", enter=False)
    assert controls.seq_spin.text() == "64,64"
    assert controls.seq_spin.value() == 64  # what it read as it was typed ("64"), never 6464
    qtbot.keyClick(controls.seq_spin, Qt.Key.Key_Return)
    message = controls.error_label("seq")
    assert message.isVisibleTo(controls) and "'64,64' is not a number" in message.text()
    assert "still 64" in message.text()
    qtbot.waitUntil(lambda: controller.config.seq == 64, timeout=5_000)
    _type(qtbot, controls.seq_spin, "12")
    qtbot.waitUntil(lambda: controller.config.seq == 12, timeout=5_000)
    assert not controls.error_label("seq").isVisibleTo(controls)


def test_a_separator_where_the_box_puts_one_still_reads(qtbot, controller):
    controls = ControlsPanel(controller)
    qtbot.addWidget(controls)
    _type(qtbot, controls.d_model_spin, "1,024")
    assert controls.d_model_spin.value() == 1024
    assert not controls.error_label("d_model").isVisibleTo(controls)


def test_a_comma_in_a_variant_size_is_refused(qtbot, controller):
    fields = VariantFields(controller)
    qtbot.addWidget(fields)
    fields.show()
    window = fields.spins["window"]
    _type(qtbot, window, "1,0")
    assert window.value() != 10 and "1,0" in fields.error_label.text()


def test_a_comma_in_the_lab_s_steps_is_refused(qtbot):
    controls = LabControls()
    qtbot.addWidget(controls)
    before = controls.steps.value()
    _type(qtbot, controls.steps, "1,0")
    assert controls.steps.value() == before and "1,0" in controls.error.text()
