"""The arithmetic behind "try 4 or 8 heads": divisors, the nearest valid values, and a list
of them in words (no imports of the project: every rule that suggests a fix uses these)."""

from __future__ import annotations

import math


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def nearest(candidates: list[int], target: int, count: int = 2) -> list[int]:
    """The ``count`` candidates closest to target, in ascending order, target itself excluded."""
    others = [c for c in candidates if c != target]
    return sorted(sorted(others, key=lambda c: (abs(c - target), -c))[:count])


def join_words(values: list[int]) -> str:
    """[2] -> "2"; [2, 4] -> "2 or 4"; [2, 4, 8] -> "2, 4 or 8"."""
    words = [str(v) for v in values]
    return " or ".join(words) if len(words) < 3 else ", ".join(words[:-1]) + " or " + words[-1]
