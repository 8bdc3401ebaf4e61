"""Generated tasks whose answers are known and that need attention (no torch).

Every task turns random symbols into one sequence of length ``T = 2 * n``: an
input token at each position, the token the model should predict there, and
which positions are scored. The model reads the whole sequence under a causal
mask, so an answer is never visible at its own position or later: it must be
fetched from earlier positions by attention. This module is numpy-only, without
torch; training draws the random symbols with a seeded torch.Generator and
hands them to :func:`build`.
"""

from __future__ import annotations

import numpy as np

from mha_explorer.core.lab.task_catalog import (  # noqa: F401 - re-exported with the generators
    BLANK,
    LAYOUT_DRAWS,
    MIN_REPEAT,
    TASKS,
    Task,
    check_task,
    symbols,
)


def earlier_counts(inputs: np.ndarray) -> np.ndarray:
    """int [B, T]: how often each position's token occurred before it."""
    T = inputs.shape[1]
    same = inputs[:, :, None] == inputs[:, None, :]  # [B, T (query), T (key)]
    return (same & np.tri(T, T, -1, dtype=bool)).sum(-1)


def _induction(draws: np.ndarray, layout: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A run of L symbols (L from MIN_REPEAT to n) starting at a repeats at b >= a + L;
    both places and L are drawn per sequence, so no position gives the answer away.
    Scored: positions b .. b+L-2 of the repeat whose symbol occurred exactly once
    before (in the first run), so the next symbol is known only by finding that
    occurrence and reading what followed it."""
    B, T = draws.shape
    layout = np.asarray(layout, dtype=np.int64)
    L = MIN_REPEAT + layout[:, 0] % (T // 2 - MIN_REPEAT + 1)  # [B]
    a = layout[:, 1] % (T - 2 * L + 1)  # [B]
    b = a + L + layout[:, 2] % (T - L - (a + L) + 1)  # [B]
    pos = np.arange(T)[None, :]  # [1, T]
    in_repeat = (pos >= b[:, None]) & (pos < (b + L)[:, None])  # [B, T]
    source = np.where(in_repeat, pos - (b - a)[:, None], pos)  # [B, T]
    inputs = np.take_along_axis(draws, source, axis=1)
    targets = np.zeros((B, T), np.int64)
    targets[:, :-1] = inputs[:, 1:]
    inner = in_repeat & (pos < (b + L - 1)[:, None])  # the repeat's last symbol has no known next
    scored = inner & (earlier_counts(inputs) == 1)
    return inputs, targets, scored


def build(name: str, draws: np.ndarray, vocab: int, layout: np.ndarray | None = None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs, targets (int64 [B, 2n]) and the scored positions (bool [B, 2n]).

    ``draws`` is int [B, 2n] of random symbols in [0, vocab); each task uses what
    it needs of them, so every task consumes the random stream alike. ``layout``
    (int [B, LAYOUT_DRAWS], non-negative) places the repeat of the tasks that have one.
    """
    task = check_task(name)
    B, T = draws.shape
    if T % 2 or T < 4:
        raise ValueError(f"sequence length must be even and at least 4, got {T}")
    n = T // 2
    blank = vocab
    inputs = draws.astype(np.int64).copy()
    targets = np.zeros((B, T), np.int64)
    scored = np.zeros((B, T), bool)
    source = inputs[:, :n]  # [B, n]
    if name in ("copy", "reverse", "sort", "add", "subtract"):
        inputs[:, n:] = blank
        partner = np.roll(source, -(n // 2), axis=1)  # [B, n]: symbol i + n/2, wrapping round
        answer = {"copy": source, "reverse": source[:, ::-1], "sort": np.sort(source, axis=1),
                  "add": (source + partner) % vocab, "subtract": (source - partner) % vocab}[name]
        targets[:, n:] = answer
        scored[:, n:] = True
    elif name == "previous-token":
        targets[:, 1:] = inputs[:, :-1]
        scored[:, 1:] = True
    else:
        if task.layout and (layout is None or layout.shape != (B, LAYOUT_DRAWS)):
            raise ValueError(f"the {name} task needs {LAYOUT_DRAWS} layout numbers per sequence")
        if n < MIN_REPEAT:
            raise ValueError(f"the {name} task needs sequences of at least {2 * MIN_REPEAT} symbols")
        return _induction(inputs, layout)
    return inputs, targets, scored


def sample(name: str, n: int = 6, vocab: int = 8, seed: int = 1) -> tuple[list[str], list[str | None]]:
    """One example for a person: input labels and the answer at each scored position
    (None where nothing is asked). Seed 1 draws distinct symbols in no order, so
    copy, reverse and sort all read differently."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, vocab, size=(1, 2 * n))
    layout = rng.integers(0, 1 << 30, size=(1, LAYOUT_DRAWS)) if check_task(name).layout else None
    inputs, targets, scored = build(name, draws, vocab, layout)
    names = symbols(vocab)
    shown_in = [names[i] for i in inputs[0]]
    shown_out = [names[t] if s else None for t, s in zip(targets[0], scored[0], strict=True)]
    return shown_in, shown_out


def sample_text(name: str, n: int = 6, vocab: int = 8, seed: int = 1) -> str:
    """The sample on one line, e.g. ``c a f _ _ _  ->  f a c`` (answers in slot order)."""
    shown_in, shown_out = sample(name, n, vocab, seed)
    answers = [a for a in shown_out if a is not None]
    return f"{' '.join(shown_in)}  ->  {' '.join(answers)}"
