"""Exported pictures show the figure only (no controls, no scroll bars), and an SVG
draws the same in Qt and in librsvg (the code's indentation included)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from PySide6.QtCore import QByteArray, QSize
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QAbstractButton, QAbstractScrollArea, QAbstractSpinBox, QComboBox

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.shell.export import ExportOptions, StageExporter, svg_bytes

CONFIG = MHAConfig(d_model=64, n_heads=4, batch=3, seq=6, device="cpu")
CONTROLS = (QAbstractSpinBox, QComboBox, QAbstractButton)


def visible_controls(sheet) -> list:
    return [w for kind in CONTROLS for w in sheet.findChildren(kind) if w.isVisibleTo(sheet)]


def visible_scroll_bars(sheet) -> list:
    return [bar for area in sheet.findChildren(QAbstractScrollArea)
            for bar in (area.verticalScrollBar(), area.horizontalScrollBar())
            if area.isVisibleTo(sheet) and bar.isVisibleTo(sheet)]


@pytest.fixture
def exporter(qtbot, make_controller):
    trace = make_controller(CONFIG).current_trace
    with StageExporter(CONFIG, trace, options=ExportOptions(size=(900, 420))) as made:
        yield made


@pytest.mark.parametrize("stage", ["project", "softmax", "output"])
def test_exports_show_no_controls_and_no_scroll_bars(exporter, stage, tmp_path):
    exporter.export_stage(stage, tmp_path)
    for sheet in (exporter._stage, exporter._heads):
        assert visible_controls(sheet) == [], stage
        assert visible_scroll_bars(sheet) == [], stage


def qt_picture(svg: bytes, size: QSize) -> np.ndarray:
    image = QImage(size, QImage.Format.Format_ARGB32)
    image.fill(0xFFFFFFFF)
    painter = QPainter(image)
    QSvgRenderer(QByteArray(svg)).render(painter)
    painter.end()
    return ink(image)


def ink(image: QImage) -> np.ndarray:
    """Columns that hold dark ink, per row band: where text starts is what matters."""
    gray = image.convertToFormat(QImage.Format.Format_Grayscale8)
    a = np.frombuffer(gray.constBits(), np.uint8).reshape(gray.height(), gray.bytesPerLine())
    return a[:, :gray.width()] < 128


@pytest.mark.skipif(shutil.which("rsvg-convert") is None, reason="needs rsvg-convert (librsvg2-bin)")
def test_an_exported_svg_draws_the_same_in_qt_and_librsvg(exporter, tmp_path):
    exporter.controller.set_stage("transpose")  # the code panel is indented Python
    sheet = exporter._stage
    svg = svg_bytes(sheet, "transpose")
    # indentation as no-break spaces: no renderer may collapse it
    assert not re.search(rb"<text\b[^>]*> ", svg) and "\u00a0".encode() in svg
    (tmp_path / "stage.svg").write_bytes(svg)
    subprocess.run(["rsvg-convert", "-b", "white", "-o", str(tmp_path / "stage.png"),
                    str(tmp_path / "stage.svg")], check=True, timeout=60)
    theirs = QImage(str(tmp_path / "stage.png"))
    ours = qt_picture(svg, theirs.size())
    code = exporter._stage.view.code_panel
    top_left = code.mapTo(sheet, code.rect().topLeft())
    box = (slice(top_left.y(), top_left.y() + code.height()),
           slice(top_left.x(), top_left.x() + code.width()))
    ours_code, theirs_code = ours[box], ink(theirs)[box]
    # the first inked column of each line of code: its indentation
    rows = np.flatnonzero(ours_code.any(axis=1) & theirs_code.any(axis=1))
    assert rows.size > 20
    first_ours = ours_code[rows].argmax(axis=1)
    first_theirs = theirs_code[rows].argmax(axis=1)
    assert np.median(np.abs(first_ours - first_theirs)) <= 3
    assert np.mean(np.abs(first_ours - first_theirs) <= 6) > 0.9
