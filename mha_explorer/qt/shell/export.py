"""Export for slides and notes: each stage's view and heatmaps as PNG and SVG, and
the shapes and parameter tables as CSV and Markdown.

The pictures are drawn by fresh, offscreen copies of the views, fed by a private
controller that is never started (no worker thread): they show the given config
and trace at the stated size whatever the window looks like, and exporting every
stage never moves the stage a teacher is on. No torch here: the trace comes in
computed (the window's, or the CLI's own run).
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QImage, QPainter, QPalette
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

from mha_explorer.core.system import safe_files
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.specs.export import DEFAULT_SIZE, FORMATS, check_folder, stage_stem
from mha_explorer.core.system.interrupts import checkpoint
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.text.tables import write_tables
from mha_explorer.core.text.xml_chars import well_formed
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.stage.stage_view import StageView


@dataclass(frozen=True)
class ExportOptions:
    """What to write. The pictures take the application's theme (theme.apply_theme)."""

    size: tuple[int, int] = DEFAULT_SIZE
    formats: tuple[str, ...] = FORMATS
    tables: bool = True


# rendering one widget ---------------------------------------------------------------------
def render_image(widget: QWidget) -> QImage:
    """The widget as an image of exactly its size in pixels (device pixel ratio 1, so
    the stated size holds on a high-DPI screen too)."""
    image = QImage(widget.size(), QImage.Format.Format_RGB32)
    image.setDevicePixelRatio(1.0)
    image.fill(widget.palette().color(QPalette.ColorRole.Window))
    painter = QPainter(image)
    painter.setRenderHints(QPainter.RenderHint.Antialiasing
                           | QPainter.RenderHint.TextAntialiasing)
    widget.render(painter, QPoint(0, 0))
    if not painter.end():
        raise OSError("the picture could not be drawn")
    return image


def _memory_device() -> tuple[QByteArray, QBuffer]:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    return data, buffer


def png_bytes(widget: QWidget) -> bytes:
    data, buffer = _memory_device()
    if not render_image(widget).save(buffer, "PNG"):
        raise OSError("the PNG could not be encoded")
    buffer.close()
    return bytes(data)


def svg_bytes(widget: QWidget, title: str) -> bytes:
    """Vector text and blocks; pictures inside (heatmaps) are embedded as images."""
    data, buffer = _memory_device()
    generator = QSvgGenerator()
    generator.setOutputDevice(buffer)
    generator.setSize(widget.size())
    generator.setViewBox(QRect(QPoint(0, 0), widget.size()))
    generator.setTitle(title)
    generator.setDescription("Exported from MHA Explorer")
    painter = QPainter()
    if not painter.begin(generator):
        raise OSError("the SVG could not be started")
    painter.fillRect(QRect(QPoint(0, 0), widget.size()),
                     widget.palette().color(QPalette.ColorRole.Window))
    widget.render(painter, QPoint(0, 0))
    if not painter.end():
        raise OSError("the SVG could not be finished")
    buffer.close()
    return well_formed(preserve_spaces(bytes(data)))  # a control character in a token is not XML


def preserve_spaces(svg: bytes) -> bytes:
    """Qt writes each line of text with its leading spaces and marks them
    xml:space="preserve", which SVG 2 deprecates: a renderer that drops it collapses
    the code's indentation. No-break spaces are the same width and never collapse."""
    nbsp = "\u00a0".encode()
    return _LEADING_SPACES.sub(lambda m: m.group(1) + nbsp * len(m.group(2)), svg)


_LEADING_SPACES = re.compile(rb"(<text\b[^>]*>)( +)")


def _named(path: Path, make) -> bytes:
    """``make()``, its failure named after the file it was for."""
    try:
        return make()
    except OSError as exc:
        raise OSError(exc.errno, f"could not write {path}: {exc.strerror or exc}", str(path)) from exc


# Pictures are drawn in memory, then written whole beside the target and renamed
# over it: a failed or interrupted export never leaves a truncated file.
def write_png(widget: QWidget, path: Path) -> Path:
    return safe_files.write_bytes(path, _named(path, lambda: png_bytes(widget)))


def write_svg(widget: QWidget, path: Path, title: str) -> Path:
    return safe_files.write_bytes(path, _named(path, lambda: svg_bytes(widget, title)))


# an offscreen copy of the views ------------------------------------------------------------
class _Sheet(QWidget):
    """One view, alone on an offscreen page of the export size."""

    def __init__(self, view: QWidget, size: tuple[int, int]) -> None:
        super().__init__()
        self.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(view)
        self.view = view
        self.setFixedSize(QSize(*size))
        self.show()  # laid out and polished, though never on a screen


class StageExporter:
    """Draws stages of one config and trace with views of its own.

    Use as a context manager, or call ``close()``: the views and the private
    controller are released there.
    """

    def __init__(self, config: MHAConfig, trace=None, *, batch_index: int = 0, head: int = 0,
                 options: ExportOptions = ExportOptions()) -> None:
        self.options = options
        self.controller = Controller(config)
        if trace is not None:
            self.controller.show_trace(trace)
        self.controller.set_batch_index(batch_index)
        self.controller.set_head(head)  # the head the screen shows, not always the first
        stage_view = StageView(self.controller)
        stage_view.set_reduced_motion(True)  # a still picture of the stage, never mid-slide
        stage_view.set_figure_only(True)  # the picture, not the controls beside it
        self._stage = _Sheet(stage_view, options.size)
        # pyqtgraph loads only when heads are drawn
        from mha_explorer.qt.heads.heads_panel import HeatmapPanel

        heads = HeatmapPanel(self.controller)
        heads.set_figure_only(True)
        self._heads = _Sheet(heads, options.size)
        QApplication.processEvents()

    def __enter__(self) -> StageExporter:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def close(self) -> None:
        for sheet in (self._stage, self._heads):
            sheet.close()
            sheet.deleteLater()
        self.controller.shutdown()
        self.controller.deleteLater()

    def export_stage(self, stage: str, folder: Path) -> list[Path]:
        """``NN-stage.png|svg`` (the stage view) and ``NN-stage-heads.png|svg`` (the maps)."""
        self.controller.set_stage(stage)
        QApplication.processEvents()  # let the views redraw for the stage
        stem = stage_stem(stage, self.controller.plan.stage_ids)
        title = self.controller.plan.stage(stage).title
        written = []
        for sheet, name, what in ((self._stage, stem, title),
                                  (self._heads, f"{stem}-heads", f"{title}: every head")):
            for fmt in self.options.formats:
                path = folder / f"{name}.{fmt}"
                checkpoint()  # Ctrl+C acts here, between whole files
                if fmt == "png":
                    written.append(write_png(sheet, path))
                else:
                    written.append(write_svg(sheet, path, what))
        return written


def export_stages(config: MHAConfig, trace, stages, folder, *, batch_index: int = 0, head: int = 0,
                  options: ExportOptions = ExportOptions()) -> list[Path]:
    """Draw ``stages`` (ids, or 'all') into ``folder``, plus the tables when asked, for the
    batch element ``batch_index`` and the query head ``head`` (what the window shows);
    returns every file written. OSError (naming the file and the system's reason)
    when a file cannot be written; the files written before it stay whole."""
    folder = check_folder(folder)
    stage_ids = build_plan(config).stage_ids
    if stages == "all":
        stages = stage_ids
    unknown = [s for s in stages if s not in stage_ids]
    if unknown:
        raise ValueError(f"no stage {unknown[0]!r} in this configuration; choose from "
                         f"{', '.join(stage_ids)}")
    folder.mkdir(parents=True, exist_ok=True)
    if trace is not None and trace.config != config:
        trace = None  # a trace of another config would draw the wrong numbers
    written: list[Path] = []
    with StageExporter(config, trace, batch_index=batch_index, head=head,
                       options=options) as exporter:
        for stage in stages:
            written += exporter.export_stage(stage, folder)
    if options.tables:
        checkpoint()
        written += [folder / name for name in write_tables(build_plan(config), folder)]
    return written


def export_problem(exc: Exception) -> str:
    """One line for the status bar: the file and the system's reason, no errno."""
    return safe_files.describe(exc) if isinstance(exc, OSError) else str(exc)
