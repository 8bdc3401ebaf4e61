"""A trained decoder's converted copy is the converter's own output or it is not used: a weight
or the tokenizer edited with the new hash written into the manifest is converted again; a
conversion killed half-way leaves nothing behind once the next one has run; a full disk ends
in one line with nothing half-made; part files that are not the app's own are left alone.

Every test converts into a temporary cache. SmolLM2 (5 s to convert) runs by default; with
MHA_LONG_CHECKS=1 Gemma 3 (about 15 s and 1 GB each) runs the same checks.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mha_explorer.core.models import cache_files
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.runtime import is_available

LONG = os.environ.get("MHA_LONG_CHECKS") == "1"
KEYS = ["smollm2-135m", *(["gemma3-270m"] if LONG else [])]
WORD = " France"  # a word each tokenizer has as one piece
REPO = Path(__file__).resolve().parents[2]


class Api:
    """The calls a caller makes, through the model's package where the older code had them."""

    def __init__(self, key: str):
        self.model = MODELS[key]
        if key == "gemma3-270m":  # its module functions, so the checks run against older code too
            from mha_explorer.core.models.gemma3 import convert, files, model, tokenizer

            self.prepare, self.folder = convert.prepare, files.model_cache_dir
            self.load, self.tokenizer = (lambda: model._load(None, None)), tokenizer.gemma_tokenizer
        else:
            from mha_explorer.core.models.decoder.kit import kit_for

            kit = kit_for(self.model)
            self.prepare, self.folder = kit.conversion.prepare, kit.conversion.record.folder
            self.load, self.tokenizer = kit.load_fresh, kit.tokenizer


@pytest.fixture(params=KEYS)
def api(request, monkeypatch, tmp_path):
    ok, why = is_available(MODELS[request.param])
    if not ok:
        pytest.skip(why)
    monkeypatch.setenv(cache_files.CACHE_ENV, str(tmp_path / "cache"))
    return Api(request.param)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record(folder: Path, name: str) -> None:
    """Write ``name``'s new size and hash into the manifest, as a forger would."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"][name] = {"bytes": (folder / name).stat().st_size, "sha256": _sha256(folder / name)}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != cache_files.LOCK_FILE)


def test_a_weight_altered_with_its_new_hash_in_the_manifest_is_converted_again(api):
    found = api.prepare()
    weights = found.folder / "model.safetensors"
    written = _sha256(weights)
    with open(weights, "r+b") as handle:  # one float in the middle: a weight of some layer
        handle.seek(weights.stat().st_size // 2 // 4 * 4)
        handle.write(b"\x00\x00\x80\x7f")  # +inf
    _record(found.folder, "model.safetensors")
    loaded = api.load()
    assert loaded.notice is not None and "altered" in loaded.notice
    assert _sha256(weights) == written  # the converter's own bytes again
    assert all(bool(t.isfinite().all()) for t in loaded.t.values())


def test_two_pieces_swapped_in_the_tokenizer_with_its_new_hash_are_converted_again(api):
    found = api.prepare()
    before = api.tokenizer().encode(WORD, bos=False)[0]
    assert len(before) == 1
    path = found.folder / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    word = next(piece for piece, i in vocab.items() if i == before[0])
    other = next(piece for piece in vocab if piece.isalpha() and piece != word)
    vocab[word], vocab[other] = vocab[other], vocab[word]  # "France" now reads as another piece
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    _record(found.folder, "tokenizer.json")
    texts: list[str] = []
    assert api.tokenizer(lambda fraction, text: texts.append(text)).encode(WORD, bos=False)[0] == before
    assert any("altered" in text for text in texts)


PROBE = """
import sys
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.decoder.kit import kit_for
kit_for(MODELS[sys.argv[1]]).conversion.prepare()
"""
GEMMA_PROBE = "from mha_explorer.core.models.gemma3 import convert; convert.prepare()"


def test_a_conversion_killed_half_way_leaves_nothing_once_the_next_has_run(api, tmp_path):
    folder = api.folder()
    probe = GEMMA_PROBE if api.model.key == "gemma3-270m" else PROBE
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    proc = subprocess.Popen([sys.executable, "-c", probe, api.model.key], env=env)
    try:
        deadline = time.monotonic() + 300
        while not list(folder.glob(".model.safetensors.*.part")):  # the weights half written
            assert proc.poll() is None, "the conversion ended before it could be killed"
            assert time.monotonic() < deadline, "no part file appeared"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
    assert list(folder.glob(".model.safetensors.*.part"))  # what a killed writer leaves
    api.prepare()
    assert _left(folder) == ["manifest.json", "model.safetensors", "tokenizer.json"]


def test_only_the_apps_own_part_files_are_swept_never_through_a_link(api, tmp_path):
    folder = api.folder()
    folder.mkdir(parents=True)
    dead = folder / ".tokenizer.json.k2x_9q1a.part"  # as a killed writer leaves it
    dead.write_bytes(b"half a tokenizer")
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"a person's file")
    (folder / ".model.safetensors.abcdefgh.part").symlink_to(victim)  # named like ours, a link
    (folder / ".manifest.json.zzzzzzzz.part").mkdir()  # named like ours, a folder
    (folder / ".notes.part").write_text("not the app's")  # a person's, named like no file of ours
    api.prepare()
    assert not dead.exists()
    assert victim.read_bytes() == b"a person's file"
    assert (folder / ".model.safetensors.abcdefgh.part").is_symlink()
    assert (folder / ".manifest.json.zzzzzzzz.part").is_dir()
    assert (folder / ".notes.part").read_text() == "not the app's"


def test_a_full_disk_at_the_tokenizer_is_one_line_and_leaves_nothing_half_made(api, monkeypatch):
    real_fdopen = os.fdopen

    class FullDisk:
        """A file on a disk that has no room left."""

        def __init__(self, fd: int):
            self.fd = fd

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            os.close(self.fd)

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd, *args, **kwargs):
        if ".tokenizer.json." in os.readlink(f"/proc/self/fd/{fd}"):
            return FullDisk(fd)
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", fdopen)
    from mha_explorer.core.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        api.prepare()
    message = err.value.message
    assert "\n" not in message and "No space left" in message and cache_files.CACHE_ENV in message
    assert _left(api.folder()) == []  # not the whole weights file without a manifest
    monkeypatch.setattr(os, "fdopen", real_fdopen)
    assert api.prepare().weights.exists()  # the next try has the room the first one freed


def test_a_conversion_that_would_write_other_bytes_is_refused(api):
    import dataclasses

    from mha_explorer.core.models.decoder.kit import kit_for

    conversion = kit_for(api.model).conversion
    pins = {**conversion.record.pinned, "tokenizer.json": "0" * 64}
    wrong = dataclasses.replace(conversion.record, pinned=pins)
    with pytest.raises(conversion.error, match="tokenizer.json other than the one this converter writes"):
        dataclasses.replace(conversion, record=wrong).prepare()
    assert _left(api.folder()) == []


def test_a_manifest_nested_thousands_deep_is_converted_again_not_a_traceback(api):
    found = api.prepare()
    weights = _sha256(found.folder / "model.safetensors")
    (found.folder / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    again = api.prepare()  # the copy is not trusted: made again, and its manifest is the converter's
    assert _sha256(again.folder / "model.safetensors") == weights
    assert json.loads((again.folder / "manifest.json").read_text())["files"]["model.safetensors"]
