"""Writing the lab's curves and tables: CSV from the numbers, PNG and SVG from the plots.

Each picture is drawn into memory first (a QBuffer), then every file is written
through ``mha_explorer.core.system.safe_files``: a temporary file of a unique name, flushed
to disk, renamed over the target. A link, a pipe or a folder in a target's place is
refused, and a full disk leaves the earlier file whole.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from mha_explorer.core.lab.files import refuse_links, write_atomic
from mha_explorer.core.system.safe_files import check_target
from mha_explorer.core.text.xml_chars import well_formed


def csv_bytes(header: list[str], rows: list[list]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


COMPARISON_HEADER = ["heads", "steps_to_95", "final_accuracy", "mean_entropy_bits", "entropy_bits_per_head",
                     "removable_heads"]


def comparison_rows(summaries: dict[int, dict]) -> list[list]:
    """One row per head count (the page's table reads these alone: the curves' rows of a
    long loaded run took seconds to build)."""
    rows = []
    for h, s in sorted(summaries.items()):
        bits, pr = s["final_entropy"], s.get("pruning")
        rows.append([h, s["steps_to_95"] if s["steps_to_95"] is not None else "",
                     s["final_accuracy"], sum(bits) / len(bits) if bits else "",
                     " ".join(f"{b:.3f}" for b in bits), pr["removable"] if pr else ""])
    return rows


def summary_tables(summaries: dict[int, dict]) -> dict[str, tuple[list[str], list[list]]]:
    """The lab's tables by file stem: header and rows, from the runs' summaries."""
    curves, entropy, ablation, pruning = [], [], [], []
    for h, s in sorted(summaries.items()):
        curves += [[h, int(st), lo, acc] for st, lo, acc in s["curve"].tolist()]
        for step, bits in zip(s["entropy_steps"].tolist(), s["entropy"].tolist(), strict=True):
            entropy += [[h, step, i, b] for i, b in enumerate(bits)]
        pr = s.get("pruning")
        if s.get("ablation"):
            drops = s["ablation"]["drops"]
            ablation += [[h, rank + 1, i, drops[i]] for rank, i in enumerate(s["ablation"]["ranking"])]
        if pr:
            order = [""] + pr["order"]
            pruning += [[h, k, order[k], a] for k, a in enumerate(pr["accuracy"])]
    return {
        "curves": (["heads", "step", "loss", "accuracy"], curves),
        "entropy": (["heads", "step", "head", "entropy_bits"], entropy),
        "comparison": (COMPARISON_HEADER, comparison_rows(summaries)),
        "ablation": (["heads", "rank", "head", "accuracy_drop"], ablation),
        "pruning": (["heads", "removed", "last_removed_head", "accuracy"], pruning),
    }


def export_all(folder: str | os.PathLike, summaries: dict[int, dict], plots: dict) -> list[Path]:
    """CSV tables and each plot of ``plots`` (name -> widget) as PNG and SVG."""

    folder = Path(folder)
    refuse_links(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, (header, rows) in summary_tables(summaries).items():
        path = folder / f"lab-{stem}.csv"
        write_atomic(path, csv_bytes(header, rows))
        written.append(path)
    for name, widget in plots.items():
        for ext in ("png", "svg"):
            path = folder / f"lab-{name}.{ext}"
            check_target(path)  # refused before anything is drawn
            write_atomic(path, draw(widget, path.stem, ext))
            written.append(path)
    return written


def draw(widget, title: str, ext: str) -> bytes:
    """The widget drawn as a PNG or SVG file's bytes (vector lines and text in the SVG)."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, QRect
    from PySide6.QtGui import QImage, QPainter, QPalette
    from PySide6.QtSvg import QSvgGenerator
    from PySide6.QtWidgets import QWidget

    size = widget.size()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if ext == "png":
        target = QImage(size, QImage.Format.Format_RGB32)
    else:
        target = QSvgGenerator()
        target.setOutputDevice(buffer)
        target.setSize(size)
        target.setViewBox(QRect(QPoint(0, 0), size))
        target.setTitle(f"MHA Explorer lab: {title}")
    painter = QPainter()
    if not painter.begin(target):
        raise OSError(f"could not draw {title}.{ext}")
    painter.fillRect(QRect(QPoint(0, 0), size), widget.palette().color(QPalette.ColorRole.Window))
    QWidget.render(widget, painter, QPoint(0, 0))  # a graphics view's own render takes other arguments
    painter.end()
    if ext == "png" and not target.save(buffer, "PNG"):
        raise OSError(f"could not draw {title}.{ext}")
    buffer.close()
    return bytes(data.data()) if ext == "png" else well_formed(bytes(data.data()))
