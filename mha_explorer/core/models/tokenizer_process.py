"""Tokenizers built and run in a process of their own, for a process whose interpreter lock must
stay free: the window's, whose event loop stops while any of its threads holds it.

The ``tokenizers`` library builds a tokenizer from its JSON inside one call that never lets
go of the interpreter lock (``Tokenizer.from_str``, ``from_file``, ``from_buffer`` and
unpickling alike): 1-3 s for Gemma 3's 262,144 pieces and 514,906 merges on two busy cores,
0.15-0.25 s for SmolLM2's 49,152 pieces, 0.1-0.15 s for MiniLM's. Building it on the jobs
thread stops the window as surely as building it on the GUI thread.

So the window calls ``build_elsewhere()`` once. From then on ``tokenizer(target, args)`` asks a
helper process (started on first use, ended with this one) to build the tokenizer that the
function ``target`` ("package.module:function") returns for ``args``, and gives back a
``RemoteTokenizer``: the same calls the app makes of a ``tokenizers.Tokenizer`` (``encode``,
``decode``, ``id_to_token``, ``token_to_id``, ``get_vocab_size``, ``get_added_tokens_decoder``),
the text work done there, the vocabulary copied here once in slices (each a moment's
unpickling), so looking up pieces costs no trip. Anywhere else (the command line, the helper
itself) ``tokenizer`` calls ``target`` in this process. An error ``target`` raises there is
raised here as itself (a ConfigError with its field and fixes, TokenizerFileError, ...).

Protocol: pickled ``(request id, operation, arguments)`` in, ``(request id, "ok" | "error",
value)`` out, one at a time; both ends are this module.
"""

from __future__ import annotations

import atexit
import importlib
import itertools
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

VOCAB_SLICE = 16_384  # pieces per trip: unpickling a slice holds this process's lock ~2 ms


@dataclass(frozen=True)
class Encoded:
    """What ``encode`` gives: the ids and the pieces (as ``tokenizers.Encoding`` has them)."""

    ids: list[int]
    tokens: list[str]


def _built_here(target: str, args: tuple) -> Any:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)(*args)


class TokenizerProcessLost(RuntimeError):
    """The helper process ended or broke its pipe; the next request starts a new one."""


class TokenizerProcess:
    """The helper process, one request at a time (a lock: any thread may ask); ``tokenizer``,
    ``pid``, ``close``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._ids = itertools.count(1)
        self._remotes: dict[tuple[int, int], RemoteTokenizer] = {}  # (pid, key there) -> ours

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def ask(self, operation: str, *arguments: Any) -> Any:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                # a session of its own: Ctrl+C in the terminal reaches the window, which ends it
                self._process = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                                 stdout=subprocess.PIPE, start_new_session=True)
            process = self._process
            asked = next(self._ids)
            try:
                pickle.dump((asked, operation, arguments), process.stdin, pickle.HIGHEST_PROTOCOL)
                process.stdin.flush()
                answered, kind, value = pickle.load(process.stdout)  # the pipe's wait lets go of the lock
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                self._end(process)
                raise TokenizerProcessLost(f"the tokenizer process ended ({type(exc).__name__}); "
                                           "try again") from None
            if answered != asked:  # never: one request at a time
                self._end(process)
                raise TokenizerProcessLost("the tokenizer process answered another request")
        if kind == "error":
            raise _rebuilt(value)
        return value

    def tokenizer(self, target: str, args: tuple = ()) -> RemoteTokenizer:
        """The tokenizer ``target(*args)`` builds there (``target`` may cache what it builds; so
        does the helper, and this side keeps one stand-in for each)."""
        key, size, added = self.ask("build", target, args)
        pid = self.pid
        remote = self._remotes.get((pid, key))
        if remote is None:
            remote = self._remotes[(pid, key)] = RemoteTokenizer(self, key, size, added)
        return remote

    def _end(self, process: subprocess.Popen) -> None:
        process.kill()
        process.wait()
        self._process = None

    def close(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.stdin.close()  # end of input: the helper returns
            try:
                process.wait(2.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class RemoteTokenizer:
    """A tokenizer that lives in the helper process (see the module's doc)."""

    def __init__(self, helper: TokenizerProcess, key: int, size: int, added: dict[int, str]) -> None:
        self._helper = helper
        self._key = key
        self._size = size
        self._added = added
        self._vocab: list[str] = []
        for start in range(0, size, VOCAB_SLICE):
            self._vocab += helper.ask("vocab", key, start, min(size, start + VOCAB_SLICE))
        self._ids = {piece: i for i, piece in enumerate(self._vocab)}

    def encode(self, text: str, add_special_tokens: bool = True) -> Encoded:
        return Encoded(*self._helper.ask("encode", self._key, text, add_special_tokens))

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._helper.ask("decode", self._key, [int(i) for i in ids], skip_special_tokens)

    def id_to_token(self, token_id: int) -> str | None:
        return self._vocab[token_id] if 0 <= token_id < self._size else None

    def token_to_id(self, piece: str) -> int | None:
        return self._ids.get(piece)

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        return self._size if with_added_tokens else self._size - len(self._added)

    def get_added_tokens_decoder(self) -> dict[int, str]:
        return dict(self._added)


_helper: TokenizerProcess | None = None
_helper_lock = threading.Lock()


def build_elsewhere() -> None:
    """From now on this process's tokenizers are built and run in the helper process."""
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = TokenizerProcess()
            atexit.register(_helper.close)


def helper_pid() -> int | None:
    """The helper process's id while it runs (None: none, or tokenizers are built here)."""
    return _helper.pid if _helper is not None else None


def tokenizer(target: str, args: tuple = ()) -> Any:
    """The tokenizer ``target(*args)`` builds: built here, or a RemoteTokenizer once
    ``build_elsewhere`` was called."""
    helper = _helper
    return _built_here(target, args) if helper is None else helper.tokenizer(target, args)


# the helper's side -----------------------------------------------------------------------
def _rebuilt(sent: tuple) -> BaseException:
    """An exception as the helper sent it: its class made without calling __init__ (a
    ConfigError's takes other arguments than it keeps), its arguments and attributes."""
    cls, args, state = sent
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


def _as_sent(exc: BaseException) -> tuple:
    args = exc.args
    if isinstance(exc, OSError) and exc.filename is not None:  # kept outside args and __dict__
        args = (exc.errno, exc.strerror, exc.filename)
    sent = (type(exc), args, dict(getattr(exc, "__dict__", {})))
    try:
        _rebuilt(pickle.loads(pickle.dumps(sent)))
    except Exception:  # noqa: BLE001 - an error that cannot cross goes as words
        sent = (RuntimeError, (f"{type(exc).__name__}: {exc}",), {})
    return sent


def _serve(incoming, outgoing) -> None:
    built: dict[int, Any] = {}

    def answer(operation: str, arguments: tuple) -> Any:
        if operation == "build":
            tok = _built_here(*arguments)
            built[id(tok)] = tok
            added = {i: token.content for i, token in tok.get_added_tokens_decoder().items()}
            return id(tok), tok.get_vocab_size(with_added_tokens=True), added
        tok = built[arguments[0]]
        if operation == "vocab":
            return [tok.id_to_token(i) for i in range(arguments[1], arguments[2])]
        if operation == "encode":
            found = tok.encode(arguments[1], add_special_tokens=arguments[2])
            return list(found.ids), list(found.tokens)
        if operation == "decode":
            return tok.decode(arguments[1], skip_special_tokens=arguments[2])
        raise ValueError(f"no operation {operation!r}")

    while True:
        try:
            asked, operation, arguments = pickle.load(incoming)
        except EOFError:  # the window's process closed its end (or ended)
            return
        try:
            reply = (asked, "ok", answer(operation, arguments))
        except Exception as exc:  # noqa: BLE001 - every fault goes back, as itself
            reply = (asked, "error", _as_sent(exc))
        pickle.dump(reply, outgoing, pickle.HIGHEST_PROTOCOL)
        outgoing.flush()


def _main() -> None:
    """The helper: answers on what was standard output, which now goes to standard error, so
    a stray print can never break the protocol."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    _main()
