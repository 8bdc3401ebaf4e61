"""Shared test setup for every test folder, and the conventions a new test follows.

Running the suite
    ``python -m pytest`` runs every test in one process (the README's line). CI
    (``.ci/run``) runs the same tests on a worker per core:
    ``python -m pytest -n auto --dist loadgroup --durations=30``. ``-m "not slow"`` leaves
    out the long checks for a quick look before a commit.

What this file sets up for every run
    - Qt's offscreen platform, so no test opens a real display.
    - A cache of converted models of the run's own (``MHA_EXPLORER_CACHE_DIR``: a fresh
      temporary folder, removed at the end, inherited by the workers and by every process a
      test starts). Gemma 3 is converted into it once per run (about 15 s of CPU), never
      into the person's ``~/.cache/mha-explorer``. ``MHA_EXPLORER_TEST_CACHE=<folder>``
      names a folder of the tests' own to keep between runs instead. A test that corrupts
      or replaces a converted file still copies it into its ``tmp_path`` first.
    - One torch thread per worker under pytest-xdist (``OMP_NUM_THREADS=1``, inherited by
      the processes a test starts): two workers on two cores, not four threads fighting.
    - The ``slow`` tests first, so that none of them starts last while the other workers
      have nothing left to do.

Markers (``slow`` and ``gpu`` are declared in pyproject.toml)
    ``slow``: over about 5 s of CPU with what it builds. CI runs it; mark a new test slow
    when it costs that much (a whole module when the cost is a module-scoped fixture, so
    the module stays together), and give it a small default size where the claim allows
    one (the full size behind an environment variable, as tests/qt/test_soak.py does).
    ``gpu``: needs a CUDA device.
    ``xdist_group(name)``: the tests of a group run on one worker, where what they share is
    built once. The groups in use: ``"trained-models"``, every test that loads Gemma 3
    270M's weights or vocabulary (1-3 GB a process, and the conversion); ``"induction"``,
    the tests that read ``induction_pair``. A test in no group that uses a module-scoped
    fixture joins its module's group by itself. Without ``--dist loadgroup`` the groups
    change nothing; a test must pass alone and in any order.

Fixtures shared by every folder (defined here)
    ``induction_pair``: {1: run, 2: run}, the Lab's induction task trained with one and two
    attention layers (500 steps, seed 0; about 10 s of CPU), once per worker; read-only.
    Mark the test ``xdist_group("induction")``.

Fixtures of tests/qt (tests/qt/conftest.py) and its waits (tests/qt/waits.py)
    ``make_window`` and ``make_controller`` (a window or controller per call, closed after
    the test), ``controller``, ``settle``; ``shared_window``: one main window per module for
    tests that only look at it (a test that edits, resizes, presents or closes it builds
    its own). Every ``waitUntil``/``waitSignal``/``waitExposed`` names its timeout:
    ``UI_MS`` for a widget's reaction, ``TRACE_MS`` for work on the jobs thread;
    ``wait_until`` is the same wait for a fixture wider than one test or a probe process.
    Never QTest.qWait: it holds Python's interpreter lock while it waits, and the jobs
    thread (torch's import, a trace) barely moves meanwhile.
    tests/test_suite_rules.py checks these rules.
"""

import os
import shutil
import tempfile

import pytest

os.environ["QT_QPA_PLATFORM"] = "offscreen"

# Hypothesis profiles: "ci" (the default) keeps the property suites to a few
# seconds on a two-core runner; "stress" is the long run done by hand:
#   HYPOTHESIS_PROFILE=stress python -m pytest tests/core/test_reliability.py -q
# deadline=None in both: the first example of a run pays for torch's warm-up,
# and a deadline would turn that into a flaky failure.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "stress", max_examples=10_000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CACHE_ENV = "MHA_EXPLORER_CACHE_DIR"  # read by the app (core/models/cache_files.py)
KEPT_CACHE_ENV = "MHA_EXPLORER_TEST_CACHE"  # a folder of the tests' own, kept between runs


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # before torch is imported here or in any process a test starts
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        return
    # the controlling process (or a run without workers): the workers it starts, and the
    # processes they start, inherit the folder through the environment
    kept = os.environ.get(KEPT_CACHE_ENV, "").strip()
    folder = kept or tempfile.mkdtemp(prefix="mha-explorer-test-cache-")
    config.stash[_own_cache] = None if kept else folder
    os.environ[CACHE_ENV] = folder


_own_cache = pytest.StashKey[str | None]()


def pytest_unconfigure(config):
    folder = config.stash.get(_own_cache, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def _shares_a_module_fixture(item) -> bool:
    """Whether the test uses a fixture built once per module (a probe's report, a loaded
    model, a window): split across workers, each would build it again."""
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs and defs[-1].scope == "module"
                                    for defs in info.name2fixturedefs.values())


def _group_suffix(item) -> str:
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    if not names and _shares_a_module_fixture(item):
        names = [item.nodeid.split("::")[0]]  # the module's tests together
    return f"@{'_'.join(names)}" if names else ""


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own
def pytest_collection_modifyitems(config, items):
    """The slow tests first: with several workers, a long test that starts last keeps one
    worker busy while the others have nothing left (the order is otherwise kept).

    And each test's ``xdist_group``: ``--dist loadgroup`` tells the controlling process a
    test's group by the suffix "@group" on its id, which pytest-xdist 3.8 writes where
    pytest 9.2 no longer reads it (the structured id), so the groups were silently lost
    and each test went to any worker. Written again where pytest reads it, unless
    pytest-xdist has done it already (tests/test_suite_rules.py checks the groups hold).
    A test in no group that uses a module-scoped fixture joins its module's group."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        suffix = _group_suffix(item)
        if suffix and "@" not in item.nodeid.rpartition("]")[2] and hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(item.nodeid + suffix)


@pytest.fixture(scope="session")
def induction_pair():
    """{1: run, 2: run}: the Lab's induction task trained with one and with two attention
    layers, as tests/core/test_lab_induction.py's claims need them (500 steps, seed 0)."""
    from mha_explorer.core.lab.model import LabModelSpec
    from mha_explorer.core.lab.train import TrainSettings, train

    settings_ = TrainSettings(steps=500, lr=3e-3, batch=32, eval_every=25, eval_size=128, seed=0)
    return {layers: train(LabModelSpec(task="induction", vocab=24, n=10, d_model=32, heads=2,
                                       layers=layers), settings_)
            for layers in (1, 2)}
