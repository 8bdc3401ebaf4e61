"""The Lab page's tables and its one-line answers, filled from the runs' summaries."""

from __future__ import annotations

from PySide6.QtWidgets import QSpinBox, QTableWidget, QTableWidgetItem

from mha_explorer.core.system.typed_input import whole_number
from mha_explorer.qt.lab.export import comparison_rows
from mha_explorer.qt.whole_spin import WholeSpinBox

COMPARISON_COLUMNS = ("heads", "steps to 95 %", "final accuracy", "mean entropy (bits)",
                      "entropy per head (bits)", "removable heads")


def parse_head_counts(text: str, d_model: int) -> tuple[int, ...]:
    """Head counts from '1,2,4'; ValueError with a one-line reason."""
    try:
        counts = tuple(dict.fromkeys(whole_number(p) for p in text.split(",")))
    except ValueError:
        raise ValueError(f"head counts must be whole numbers separated by commas, got '{text}'") from None
    bad = [h for h in counts if h < 1 or d_model % h]
    if bad:
        raise ValueError(f"{bad[0]} heads do not divide d_model {d_model}")
    return counts


def fill_comparison(table: QTableWidget, summaries: dict[int, dict]) -> None:
    """One row per head count: the same numbers lab-comparison.csv holds."""
    rows = comparison_rows(summaries)
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        shown = [row[0], row[1] if row[1] != "" else "not reached", f"{row[2]:.1%}",
                 f"{row[3]:.2f}" if row[3] != "" else "", row[4], row[5]]
        for c, value in enumerate(shown):
            table.setItem(r, c, QTableWidgetItem(str(value)))
    table.resizeColumnsToContents()


def fill_ranking(table: QTableWidget, ablation: dict | None) -> None:
    """Heads by importance: the accuracy lost when each is zeroed, largest first."""
    ranking = ablation["ranking"] if ablation else []
    table.setRowCount(len(ranking))
    for rank, head in enumerate(ranking):
        for c, value in enumerate((rank + 1, head, f"{ablation['drops'][head]:+.1%}")):
            table.setItem(rank, c, QTableWidgetItem(str(value)))


def spin_box(low: int, high: int, value: int) -> QSpinBox:
    spin = WholeSpinBox()  # "1,0" is refused, not read as 10
    spin.setRange(low, high)
    spin.setValue(value)
    return spin
