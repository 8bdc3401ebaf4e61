"""Numbers a person reads at a glance: counts with SI prefixes, sizes in binary units.

One place, so the CLI, the tables, the stage view and the diagram say the same
thing about the same number.
"""

from __future__ import annotations


def format_count(n: int) -> str:
    """1234567 -> '1.23 M': FLOPs and parameters at a glance."""
    if n < 1000:
        return str(n)
    value = float(n)
    for unit in ("k", "M", "G", "T", "P", "E"):
        value /= 1000
        if value < 1000 or unit == "E":
            return f"{value:.3g} {unit}"
    return str(n)


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_duration(seconds: float) -> str:
    """95 -> '1.6 min': an estimated time, to the precision an estimate has."""
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 1 else "under a second"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def likely_duration(seconds: float) -> str:
    """'about 14 s', or 'under a second': an estimate said as one."""
    return format_duration(seconds) if seconds < 1 else f"about {format_duration(seconds)}"
