"""A saved lab run's two files, as someone else may hand them over: edited by hand,
truncated, padded, crafted to allocate gigabytes, replaced by a pipe, a folder or a
link, mixed with another run's, or changed while they are read. Each is refused
with one sentence naming the file and what is wrong, before any tensor is built,
and nothing on disk is changed by the attempt."""

from __future__ import annotations

import json
import os
import struct
import threading

import psutil
import pytest
from safetensors.torch import save as save_tensors

from mha_explorer.core.lab.files import RunFileError
from mha_explorer.core.lab.model import LabModelSpec
from mha_explorer.core.lab.store import load_run, save_run
from mha_explorer.core.lab.train import TrainSettings, train

INTERNAL = ("Traceback", "unpack", "object is not", "Errno", "KeyError", "TypeError", "NoneType", "codec")


@pytest.fixture(scope="module")
def trained():
    spec = LabModelSpec(task="copy", vocab=5, n=3, d_model=8, heads=2)
    return train(spec, TrainSettings(steps=6, batch=4, eval_every=3, eval_size=8, seed=2))


@pytest.fixture
def saved(trained, tmp_path):
    folder = tmp_path / "run"
    save_run(trained, folder)
    return folder


def _meta(folder) -> dict:
    return json.loads((folder / "run.json").read_text())


def _write_meta(folder, meta: dict | str | bytes) -> None:
    data = meta if isinstance(meta, bytes) else (meta if isinstance(meta, str) else json.dumps(meta)).encode()
    (folder / "run.json").write_bytes(data)


def _snapshot(folder) -> dict:
    """Each regular file's size, time and (small ones) bytes: enough to see any change."""
    if not folder.is_dir() or folder.is_symlink():
        return {}
    out = {}
    for p in folder.iterdir():
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            out[p.name] = (st.st_size, st.st_mtime_ns, p.read_bytes() if st.st_size < 1 << 24 else None)
    return out


def _refused(folder, *words: str, **kw) -> str:
    before = _snapshot(folder)
    with pytest.raises(RunFileError) as err:
        load_run(folder, **kw)
    message = str(err.value)
    assert "\n" not in message and len(message) < 400, message
    assert not any(w in message for w in INTERNAL), message
    for word in words:
        assert word in message, message
    assert _snapshot(folder) == before  # nothing the person had was changed
    return message


# run.json, edited by hand -------------------------------------------------------
def _edit(path: str, value):
    def apply(meta: dict) -> dict:
        keys = path.split(".")
        target = meta
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
        return meta
    return apply


META_CASES = {
    "curve rows of two": (_edit("curve", [[3, 1.0], [6, 0.5]]),
                          "'curve' must be a list of [step, loss, accuracy]"),
    "curve is a number": (_edit("curve", 7), "'curve' must be a list"),
    "curve of text": (_edit("curve", "abc"), "'curve' must be a list"),
    "accuracy above one": (_edit("curve", [[3, 1.0, 1.5]]), "'curve' accuracy"),
    "negative loss": (_edit("curve", [[3, -1.0, 0.5]]), "'curve' loss"),
    "huge numbers": (_edit("curve", [[3, 1.7e308, 2.0]]), "'curve' accuracy"),
    "steps not rising": (_edit("curve", [[6, 1.0, 0.5], [3, 1.0, 0.5]]), "rising steps"),
    "step past the end": (_edit("curve", [[600, 1.0, 0.5]]), "rising steps"),
    "crafted huge model": (lambda m: _edit("spec.d_model", 65_536)(_edit("spec.vocab", 32_768)(m)),
                           "'spec.vocab' must be a whole number"),
    "zero d_model": (_edit("spec.d_model", 0), "'spec.d_model'"),
    "negative heads": (_edit("spec.heads", -2), "'spec.heads'"),
    "heads not dividing": (_edit("spec.heads", 3), "'spec.heads' must divide"),
    "layers as true": (_edit("spec.layers", True), "'spec.layers'"),
    "layers as text": (_edit("spec.layers", "2"), "'spec.layers'"),
    "n as a float": (_edit("spec.n", 3.5), "'spec.n'"),
    "task with control characters": (_edit("spec.task", "copy\x1b[2J\x07"), "'spec.task' must be one of"),
    "task as emoji": (_edit("spec.task", "🙂"), "'spec.task' must be one of"),
    "unknown spec key": (_edit("spec.colour", "red"), "'spec' must be an object with exactly"),
    "spec is a list": (_edit("spec", [1, 2]), "'spec' must be an object"),
    "zero steps": (_edit("settings.steps", 0), "'settings.steps'"),
    "negative learning rate": (_edit("settings.lr", -0.1), "'settings.lr'"),
    "eval size huge": (_edit("settings.eval_size", 10**12), "'settings.eval_size'"),
    "entropy per head wrong": (_edit("entropy", [[3, [0.1]]]), "'entropy' bits"),
    "prefix scores above one": (_edit("scores", [[3, [2.0, 0.1], [0.1, 0.1]]]), "'scores' prefix matching"),
    "checksum missing": (_edit("weights_sha256", None), "'weights_sha256'"),
    "checksum of emoji": (_edit("weights_sha256", "🙂" * 64), "'weights_sha256'"),
    "pruning order wrong": (_edit("extra", {"pruning": {"order": [0, 0], "accuracy": [1, 1, 1]}}),
                            "'extra.pruning.order'"),
    "ablation drops of text": (_edit("extra", {"ablation": {"base_accuracy": 1, "drops": ["a", "b"]}}),
                               "'extra.ablation.drops'"),
    "format unknown": (_edit("format", "something else"), "not a saved lab run"),
    "not an object": (lambda m: [m], "not a JSON object"),
}


@pytest.mark.parametrize("case", list(META_CASES))
def test_a_hand_edited_run_json_is_refused_in_one_sentence(saved, case):
    edit, words = META_CASES[case]
    _write_meta(saved, edit(_meta(saved)))
    message = _refused(saved, words)
    assert message.startswith("run.json")


RAW_CASES = {
    "empty": (b"", "not valid JSON"),
    "text": (b"hello, world", "not valid JSON"),
    "NaN": (None, "NaN"),
    "Infinity": (None, "Infinity"),
    "not UTF-8": (b"\xff\xfe{\x00", "not UTF-8"),
    "nested too deeply": (b"[" * 100_000 + b"]" * 100_000, "run.json"),
}


@pytest.mark.parametrize("case", list(RAW_CASES))
def test_run_json_that_is_not_plain_json_is_refused(saved, case):
    data, words = RAW_CASES[case]
    if data is None:  # numbers JSON does not have, as Python would write them
        text = (saved / "run.json").read_text()
        meta = _meta(saved)
        loss = meta["curve"][0][1]
        data = text.replace(json.dumps(loss), case, 1).encode()
    _write_meta(saved, data)
    _refused(saved, words)


def test_truncated_run_json_is_refused(saved):
    data = (saved / "run.json").read_bytes()
    _write_meta(saved, data[: len(data) // 2])
    _refused(saved, "run.json", "not valid JSON")


def test_oversized_run_json_is_refused_unread(saved):
    with open(saved / "run.json", "ab") as f:
        f.truncate(65 << 20)  # sparse: costs no disk
    _refused(saved, "run.json", "bytes, more than")


def test_a_crafted_huge_model_allocates_nothing(saved):
    """A run.json declaring a model of many gigabytes (within the schema's ranges) is
    refused against the memory budget before anything is built."""
    meta = _meta(saved)
    meta["spec"].update(vocab=4096, d_model=4096, heads=4, layers=8, n=1024, mlp=True)
    meta["settings"]["eval_size"] = 65_536
    meta["curve"], meta["entropy"], meta["scores"] = [], [], []
    _write_meta(saved, meta)
    rss = psutil.Process().memory_info().rss
    _refused(saved, "run.json", "memory budget")
    assert psutil.Process().memory_info().rss - rss < 50 << 20


def test_a_run_over_a_small_budget_is_refused(saved):
    _refused(saved, "memory budget", budget=1000)


# the run's files replaced by something else ---------------------------------------
@pytest.mark.parametrize("name", ["run.json", "model.safetensors"])
@pytest.mark.parametrize("kind", ["fifo", "folder", "link", "missing"])
def test_a_file_that_is_not_a_regular_file_is_refused_without_blocking(saved, tmp_path, name, kind):
    path = saved / name
    os.unlink(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link":
        other = tmp_path / "elsewhere"
        other.write_bytes(b"{}")
        path.symlink_to(other)
    done = threading.Event()
    result: list = []

    def attempt() -> None:
        try:
            load_run(saved)
        except RunFileError as exc:
            result.append(str(exc))
        finally:
            done.set()

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    if not done.wait(30):  # an open that blocks: release it, then fail
        if kind == "fifo":
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("opening the run blocked")
    assert result and name in result[0] and "\n" not in result[0]
    words = {"fifo": "pipe", "folder": "folder", "link": "link", "missing": "missing"}[kind]
    assert words in result[0]


@pytest.mark.parametrize("kind", ["fifo", "file", "link"])
def test_a_run_folder_that_is_not_a_folder_is_refused(tmp_path, saved, kind):
    target = tmp_path / "odd"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "file":
        target.write_text("x")
    else:
        target.symlink_to(saved)
    with pytest.raises(RunFileError) as err:
        load_run(target)
    assert "\n" not in str(err.value)


# model.safetensors, damaged or crafted ---------------------------------------------
def _header(folder) -> tuple[dict, bytes]:
    data = (folder / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def _write_weights(folder, header: dict, body: bytes) -> None:
    raw = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + body)


def _resign(folder) -> None:
    """Record the edited weights' checksum, so the header check itself is what refuses."""
    import hashlib

    meta = _meta(folder)
    meta["weights_sha256"] = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    _write_meta(folder, meta)


def test_empty_truncated_and_padded_weights_are_refused(saved):
    good = (saved / "model.safetensors").read_bytes()
    for data, words in ((b"", "too short"), (good[:-7], "bytes, but its tensors make"),
                        (good + b"\0" * 4096, "bytes, but its tensors make")):
        (saved / "model.safetensors").write_bytes(data)
        _resign(saved)
        _refused(saved, "model.safetensors", words)


def test_a_sparse_giant_weights_file_is_refused_unread(saved):
    with open(saved / "model.safetensors", "ab") as f:
        f.truncate(6 << 30)  # 6 GB that take no disk; reading it whole would take the memory
    rss = psutil.Process().memory_info().rss
    _refused(saved, "model.safetensors")
    assert psutil.Process().memory_info().rss - rss < 50 << 20


def test_a_header_declaring_a_huge_length_is_refused(saved):
    data = (saved / "model.safetensors").read_bytes()
    (saved / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 60) + data[8:])
    _resign(saved)
    _refused(saved, "model.safetensors", "header")


def test_a_header_that_is_not_json_is_refused(saved):
    data = (saved / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    (saved / "model.safetensors").write_bytes(data[:8] + b"\xff" * n + data[8 + n:])
    _resign(saved)
    _refused(saved, "model.safetensors", "header")


@pytest.mark.parametrize("change, words", [
    (lambda h: h["attn.0.q.weight"].update(shape=[8, 4]), "has shape"),
    (lambda h: h["attn.0.q.weight"].update(dtype="F16"), "float32"),
    (lambda h: h.update({"extra.weight": dict(h["readout.bias"])}), "does not have"),
    (lambda h: h.pop("readout.bias"), "lacks"),
    (lambda h: h["readout.bias"].update(data_offsets=[0, 16]), "data offsets"),
    (lambda h: h["readout.bias"].update(
        data_offsets=[h["embed.weight"]["data_offsets"][0], h["embed.weight"]["data_offsets"][0] + 20]),
     "overlap"),
])
def test_a_header_that_does_not_fit_run_json_is_refused(saved, change, words):
    header, body = _header(saved)
    change(header)
    _write_weights(saved, header, body)
    _resign(saved)
    _refused(saved, "model.safetensors", words)


def test_weights_of_another_run_are_refused_by_their_checksum(saved, trained):
    import torch

    other = {k: v.detach().clone() + 1.0 for k, v in trained.model.state_dict().items()}
    (saved / "model.safetensors").write_bytes(save_tensors({k: v.contiguous() for k, v in other.items()}))
    assert torch.is_tensor(other["readout.bias"])
    _refused(saved, "model.safetensors", "checksum")


def test_a_file_that_changes_while_it_is_read_is_refused(saved):
    path = saved / "model.safetensors"
    calls = [0]

    def meddle() -> None:  # called between the reads: another program writes meanwhile
        calls[0] += 1
        if calls[0] == 3:
            with open(path, "r+b") as f:
                f.seek(-4, os.SEEK_END)
                f.write(b"\x01\x02\x03\x04")
                f.flush()
                os.fsync(f.fileno())
            os.utime(path, ns=(1, 1))  # a same-size write within the clock's tick still shows

    with pytest.raises(RunFileError) as err:
        load_run(saved, check=meddle)
    assert "model.safetensors" in str(err.value)
    assert "changed" in str(err.value) or "checksum" in str(err.value)


def test_a_good_run_still_loads_after_all_this(saved, trained):
    run, _extra = load_run(saved)
    assert run.curve == trained.curve and run.scores == trained.scores


def test_the_window_s_weight_source_refuses_a_crafted_run_in_one_line(saved):
    """Saved settings that name a crafted run (the window opens it at start-up, in its own
    process): a ConfigError on the weights path, before anything is allocated."""
    from mha_explorer.core.config import ConfigError, MHAConfig
    from mha_explorer.core.lab.source import LabWeights

    meta = _meta(saved)
    meta["spec"].update(vocab=32_768, d_model=65_536)
    _write_meta(saved, meta)
    rss = psutil.Process().memory_info().rss
    with pytest.raises(ConfigError) as err:
        LabWeights(MHAConfig(weights="lab", weights_path=str(saved)))
    assert err.value.field == "weights_path" and "run.json" in str(err.value) and "\n" not in str(err.value)
    assert psutil.Process().memory_info().rss - rss < 50 << 20
