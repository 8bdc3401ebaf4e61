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

from dataclasses import dataclass

import numpy as np

BLANK = "_"  # the answer slots of copy, reverse, sort, add and subtract
MIN_REPEAT = 3  # the shortest repeated run of the induction task
LAYOUT_DRAWS = 3  # random whole numbers per sequence for the tasks that place a repeat


@dataclass(frozen=True)
class Task:
    name: str
    explanation: str  # one line for a person
    vocab: int = 16  # symbols a model for it reads by default
    n: int = 8  # half the sequence length by default
    d_model: int = 256  # model width by default
    steps: int = 200  # training steps that suffice at the default sizes
    layout: bool = False  # draws LAYOUT_DRAWS numbers per sequence besides the symbols
    mlp: bool = False  # trained with an MLP after attention: the answer is no sum of per-symbol scores


TASKS: dict[str, Task] = {t.name: t for t in (
    Task("copy", "Read n symbols, then write them again in the same order into the blank slots."),
    Task("reverse", "Read n symbols, then write them back to front into the blank slots."),
    Task("previous-token", "At every position, name the symbol one position earlier."),
    Task("induction", "Random symbols in which a run of them repeats at a random place; inside the "
         "repeat, predict the next symbol by finding where the current one appeared before.",
         vocab=24, n=12, d_model=64, steps=1500, layout=True),
    Task("sort", "Read n symbols, then write them in ascending order into the blank slots."),
    Task("add", "Read n symbols as numbers (a = 0, b = 1, ...); blank slot i gets symbol i plus "
         "symbol i + n/2 (wrapping round), modulo the vocabulary: two places at once.",
         vocab=10, n=8, d_model=64, steps=800, mlp=True),
    Task("subtract", "Read n symbols as numbers (a = 0, b = 1, ...); blank slot i gets symbol i minus "
         "symbol i + n/2 (wrapping round), modulo the vocabulary: two places, and their order matters.",
         vocab=10, n=8, d_model=64, steps=800, mlp=True),
)}


def symbols(vocab: int) -> tuple[str, ...]:
    """Labels for symbol ids 0..vocab-1 (letters, in order, so sorting reads naturally),
    followed by the blank at id ``vocab``."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    names = [letters[i] if i < len(letters) else f"s{i}" for i in range(vocab)]
    return (*names, BLANK)


def check_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    return TASKS[name]


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
