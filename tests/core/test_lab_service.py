"""The lab's training service, in this process (the window runs it in one of its own):
every request ends with one closing answer, faults become messages, cancel ends a run,
and a saved run loads back with its analysis."""

from __future__ import annotations

import os
import threading

import pytest

from mha_explorer.core.lab.service import ENDS, LabRequest, LabService, ServiceProcess


class Outbox(list):
    def kinds(self) -> list[str]:
        return [m[0] for m in self]


@pytest.fixture
def service():
    out = Outbox()
    pause, cancel = threading.Event(), threading.Event()
    svc = LabService(out.append, pause.is_set, cancel.is_set)
    svc.out, svc.cancel_event = out, cancel
    return svc


def _tiny(heads=(1, 2), steps=12, analyse=True) -> LabRequest:
    return LabRequest(task="copy", head_counts=heads, d_model=8, steps=steps, analyse=analyse)


def test_a_sweep_answers_each_run_in_order_and_ends_once(service):
    service.handle(("train", _tiny()))
    kinds = service.out.kinds()
    assert kinds[-1] == "finished" and sum(k in ENDS for k in kinds) == 1
    assert [m[1] for m in service.out if m[0] == "started"] == [1, 2]
    finished = [m for m in service.out if m[0] == "run_finished"]
    assert [m[1] for m in finished] == [1, 2]
    summary = finished[1][2]
    assert summary["heads"] == 2 and len(summary["ablation"]["drops"]) == 2
    steps = [m[2]["step"] for m in service.out if m[0] == "progressed" and m[1] == 2]
    assert steps == sorted(steps) and steps[-1] == 12  # the last step is always reported


def test_cancel_ends_the_run_with_one_cancelled_answer(service):
    service.cancel_event.set()
    service.handle(("train", _tiny(heads=(2,), steps=10_000, analyse=False)))
    assert service.out.kinds()[-1] == "cancelled"
    assert "run_finished" not in service.out.kinds()


def test_a_saved_run_loads_back_with_its_ablation_and_opens_as_a_stage_config(service, tmp_path):
    service.handle(("train", _tiny(heads=(2,))))
    service.handle(("save", 2, str(tmp_path / "run")))
    kind, folder, changes = service.out[-1]
    assert kind == "saved" and folder == str(tmp_path / "run")
    assert (changes["weights"], changes["weights_path"], changes["layer"]) == ("lab", folder, 1)
    trained = next(m[2] for m in service.out if m[0] == "run_finished")
    out = Outbox()
    fresh = LabService(out.append, lambda: False, lambda: False)  # as after a restart
    fresh.handle(("load", folder))
    assert [m[0] for m in out] == ["run_finished", "finished"]
    loaded = out[0][2]
    assert loaded["ablation"]["drops"] == trained["ablation"]["drops"]
    assert loaded["final_accuracy"] == trained["final_accuracy"]


def test_faults_become_one_line_messages(service, tmp_path):
    service.handle(("save", 4, str(tmp_path / "x")))
    assert service.out[-1] == ("failed", "no trained run with 4 heads to save")
    service.handle(("load", str(tmp_path / "missing")))
    assert service.out[-1][0] == "failed" and "\n" not in service.out[-1][1]
    service.handle(("train", LabRequest(task="nope", head_counts=(1,), d_model=8)))
    assert service.out[-1][0] == "failed" and "nope" in service.out[-1][1]


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="POSIX scheduling priorities")
def test_the_training_process_gives_the_window_the_cpu_first():
    # on a busy machine the window's updates should not wait behind training
    process = ServiceProcess()
    try:
        process.ask("warm_up")
        while process.answer()[0] != "warmed_up":
            pass
        assert os.getpriority(os.PRIO_PROCESS, process.pid) >= os.getpriority(os.PRIO_PROCESS, 0) + 5
    finally:
        process.stop()
