"""Generated tasks whose answers are known and that need attention (no torch).

Every task turns random symbols into one sequence of length ``T = 2 * n``: an
input token at each position, the token the model should predict there, and
which positions are scored. The model reads the whole sequence under a causal
mask, so an answer is never visible at its own position or later: it must be
fetched from earlier positions by attention.

The rules are written in numpy so the window can show a task's sample without
torch; training draws the random symbols with a seeded torch.Generator and
hands them to :func:`build`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLANK = "_"  # the answer slots of copy, reverse and sort


@dataclass(frozen=True)
class Task:
    name: str
    explanation: str  # one line for a person


TASKS: dict[str, Task] = {t.name: t for t in (
    Task("copy", "Read n symbols, then write them again in the same order into the blank slots."),
    Task("reverse", "Read n symbols, then write them back to front into the blank slots."),
    Task("previous-token", "At every position, name the symbol one position earlier."),
    Task("induction", "A random run of n symbols is repeated; in the repeat, predict the next symbol "
         "from where it appeared the first time."),
    Task("sort", "Read n symbols, then write them in ascending order into the blank slots."),
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


def build(name: str, draws: np.ndarray, vocab: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs, targets (int64 [B, 2n]) and the scored positions (bool [B, 2n]).

    ``draws`` is int [B, 2n] of random symbols in [0, vocab); each task uses what
    it needs of them, so every task consumes the random stream alike.
    """
    check_task(name)
    B, T = draws.shape
    if T % 2 or T < 4:
        raise ValueError(f"sequence length must be even and at least 4, got {T}")
    n = T // 2
    blank = vocab
    inputs = draws.astype(np.int64).copy()
    targets = np.zeros((B, T), np.int64)
    scored = np.zeros((B, T), bool)
    source = inputs[:, :n]  # [B, n]
    if name in ("copy", "reverse", "sort"):
        inputs[:, n:] = blank
        answer = {"copy": source, "reverse": source[:, ::-1], "sort": np.sort(source, axis=1)}[name]
        targets[:, n:] = answer
        scored[:, n:] = True
    elif name == "previous-token":
        targets[:, 1:] = inputs[:, :-1]
        scored[:, 1:] = True
    else:  # induction: the second half repeats the first; position i predicts token i + 1
        inputs[:, n:] = source
        targets[:, n:T - 1] = inputs[:, n + 1:]
        scored[:, n:T - 1] = True
    return inputs, targets, scored


def sample(name: str, n: int = 6, vocab: int = 8, seed: int = 1) -> tuple[list[str], list[str | None]]:
    """One example for a person: input labels and the answer at each scored position
    (None where nothing is asked). Seed 1 draws distinct symbols in no order, so
    copy, reverse and sort all read differently."""
    draws = np.random.default_rng(seed).integers(0, vocab, size=(1, 2 * n))
    inputs, targets, scored = build(name, draws, vocab)
    names = symbols(vocab)
    shown_in = [names[i] for i in inputs[0]]
    shown_out = [names[t] if s else None for t, s in zip(targets[0], scored[0], strict=True)]
    return shown_in, shown_out


def sample_text(name: str, n: int = 6, vocab: int = 8, seed: int = 1) -> str:
    """The sample on one line, e.g. ``c a f _ _ _  ->  f a c`` (answers in slot order)."""
    shown_in, shown_out = sample(name, n, vocab, seed)
    answers = [a for a in shown_out if a is not None]
    return f"{' '.join(shown_in)}  ->  {' '.join(answers)}"
