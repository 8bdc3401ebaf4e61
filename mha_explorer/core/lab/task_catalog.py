"""The lab's tasks by name: what each asks of a model and its default sizes (plain data,
no numpy: the command line lists them in its help, and the window's start must not wait
for numpy). How a task's sequences are made: lab/tasks.py."""

from __future__ import annotations

from dataclasses import dataclass

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
