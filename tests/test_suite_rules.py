"""The suite keeps its own rules, read from its source: a broken import of the project
fails rather than skips, every wait for the window names its timeout and none holds the
interpreter lock, no functional test times itself (speed is measured in benchmarks/), no
test touches the person's own cache of converted models, and the worker groups hold."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from mha_explorer.core.models import cache_files

TESTS = Path(__file__).resolve().parent
WAITS = ("waitUntil", "waitSignal", "waitSignals", "waitCallback", "waitExposed", "waitActive")
CLOCKS = ("perf_counter", "perf_counter_ns", "process_time", "process_time_ns", "thread_time")


def _sources() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
            for path in sorted(TESTS.rglob("*.py"))]


SOURCES = _sources()


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(TESTS.parent)}:{node.lineno}"


def _imports_the_project(nodes: list[ast.stmt]) -> bool:
    for node in nodes:
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("mha_explorer"):
                return True
            if isinstance(inner, ast.Import) and any(a.name.startswith("mha_explorer") for a in inner.names):
                return True
    return False


def _calls(nodes, names: tuple[str, ...]):
    for node in nodes:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr in names:
                yield inner


def test_a_broken_import_of_the_project_fails_rather_than_skips():
    """A module of the app that no longer imports is a failure to be told, not a skip
    among the others in the summary."""
    hidden = []
    for path, tree in SOURCES:
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and _imports_the_project(node.body) \
                    and any(True for _ in _calls(node.handlers, ("skip", "xfail", "importorskip"))):
                hidden.append(_where(path, node))
        for call in _calls([tree], ("importorskip",)):
            if call.args and isinstance(call.args[0], ast.Constant) \
                    and str(call.args[0].value).startswith("mha_explorer"):
                hidden.append(_where(path, call))
    assert hidden == []


def test_every_wait_for_the_window_names_its_timeout():
    """pytest-qt's 5 s default is too short for a loaded two-core machine and says nothing
    about what is waited for: tests/qt/waits.py has the two sizes."""
    unnamed = [_where(path, call) for path, tree in SOURCES for call in _calls([tree], WAITS)
               if not any(k.arg == "timeout" for k in call.keywords)]
    assert unnamed == []


def test_no_wait_holds_the_interpreter_lock():
    """QTest.qWait holds Python's interpreter lock for as long as it waits, so the thread a
    test waits for (torch's import, a trace) barely moves: a probe's first trace took a
    minute. qtbot's waits and tests/qt/waits.py run the event loop instead."""
    holding = [_where(path, call) for path, tree in SOURCES for call in _calls([tree], ("qWait",))]
    assert holding == []


def test_no_functional_test_times_itself():
    """A speed claim depends on the machine and its load: it is a figure printed by a
    script in benchmarks/, not an assertion here (a deadline for a wait reads
    time.monotonic, which these do not forbid)."""
    timed = []
    for path, tree in SOURCES:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in CLOCKS \
                    and isinstance(node.value, ast.Name) and node.value.id == "time":
                timed.append(_where(path, node))
            if isinstance(node, ast.ImportFrom) and node.module == "time" \
                    and any(a.name in CLOCKS for a in node.names):
                timed.append(_where(path, node))
    assert timed == []


def test_the_tests_convert_models_into_a_cache_of_their_own():
    """Tests that convert, corrupt or replace a cached model do it in the suite's own
    folder (tests/conftest.py makes one per run, which child processes inherit), never in
    the person's cache."""
    environ = dict(os.environ)
    assert environ.pop(cache_files.CACHE_ENV, ""), f"{cache_files.CACHE_ENV} is not set for the tests"
    persons = cache_files.cache_root(environ)
    used = cache_files.cache_root()
    assert used != persons and persons not in used.parents and used not in persons.parents


GROUPED = '''
import os, pathlib, pytest

@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("n", range(4))
def test_{name}(n):
    pathlib.Path(os.environ["WORKERS_SEEN"], f"{name}-{{n}}").write_text(os.environ["PYTEST_XDIST_WORKER"])
'''
MODULE_FIXTURE = '''
import os, pathlib, pytest

@pytest.fixture(scope="module")
def built_once():
    return os.environ["PYTEST_XDIST_WORKER"]

@pytest.mark.parametrize("n", range(4))
def test_reads_it(built_once, n):
    pathlib.Path(os.environ["WORKERS_SEEN"], f"module-{{n}}").write_text(built_once)

@pytest.mark.parametrize("n", range(4))
def test_alone(n):
    pathlib.Path(os.environ["WORKERS_SEEN"], f"alone-{{n}}").write_text(os.environ["PYTEST_XDIST_WORKER"])
'''


def test_tests_of_one_group_run_on_one_worker(tmp_path):
    """What ``xdist_group`` promises under ``--dist loadgroup``, with this suite's conftest:
    the tests that share something costly (a model, a trained pair) run where it was built,
    and so do a module's tests that read a fixture built once per module; the others go to
    whichever worker is free."""
    import shutil
    import subprocess
    import sys

    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(TESTS / "conftest.py", suite / "conftest.py")
    for name in ("first", "second"):
        (suite / f"test_{name}.py").write_text(GROUPED.format(name=name))
    (suite / "test_third.py").write_text(MODULE_FIXTURE.format())
    seen = tmp_path / "seen"
    seen.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           "--dist", "loadgroup", str(suite)], cwd=suite, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "WORKERS_SEEN": str(seen)})
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {path.name: path.read_text() for path in seen.iterdir()}
    assert len(workers) == 16, workers
    grouped = {w for name, w in workers.items() if name.startswith(("first", "second"))}
    module = {w for name, w in workers.items() if name.startswith("module")}
    assert len(grouped) == 1 and len(module) == 1, workers
    assert len(set(workers.values())) == 2, workers  # the rest were not all held to one worker
