"""Saving a file: whole or not at all, never through a link, never over a pipe, a
device or a folder, and never blocking on one. Every path is the test's own."""

from __future__ import annotations

import errno
import os
import stat
import threading

import pytest

from mha_explorer.core.system import safe_files


def leftovers(folder) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(safe_files.PART_SUFFIX)]


def test_a_save_replaces_the_whole_file(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("old and much longer than the new text\n")
    safe_files.write_text(path, "new\n")
    assert path.read_text() == "new\n"
    assert leftovers(tmp_path) == []


def test_a_new_file_gets_the_usual_permissions(tmp_path):
    mask = os.umask(0o022)
    os.umask(mask)
    path = safe_files.write_bytes(tmp_path / "a.bin", b"x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_a_full_disk_keeps_the_earlier_file_and_leaves_no_part(tmp_path, monkeypatch):
    path = tmp_path / "params.csv"
    path.write_text("the good version\n")

    def full_disk(fd, data):
        os.write(fd, bytes(data[: len(data) // 2]))  # half gets through, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(safe_files, "_write_all", full_disk)
    with pytest.raises(OSError) as caught:
        safe_files.write_text(path, "a newer version that never fits\n" * 100)
    assert caught.value.errno == errno.ENOSPC
    assert str(path) in caught.value.strerror and "No space left" in caught.value.strerror
    assert path.read_text() == "the good version\n"
    assert leftovers(tmp_path) == []


def test_a_planted_link_is_refused_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "out").mkdir()
    link = tmp_path / "out" / "01-input.png"
    link.symlink_to("../victim.txt")
    with pytest.raises(OSError, match="symbolic link") as caught:
        safe_files.write_bytes(link, b"picture")
    assert str(link) in str(caught.value)
    assert victim.read_text() == "precious\n" and link.is_symlink()


def test_a_folder_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OSError, match="folder"):
        safe_files.write_text(tmp_path / "d", "x")
    assert (tmp_path / "d").is_dir()


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(safe_files.target_problem(fifo)),
                              daemon=True)
    worker.start()
    worker.join(timeout=10)  # an open() of a FIFO with no reader would hang here for ever
    assert outcome and "pipe" in outcome[0]
    with pytest.raises(OSError, match="pipe"):
        safe_files.write_text(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def make_char_device(folder):
    """A character device node of our own, with a number no driver uses (the
    experimental range), so even a mistaken open could reach nothing."""
    node = folder / "device"
    try:
        os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(240, 0))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    return node


def test_a_character_device_is_refused_and_stays_one(tmp_path):
    node = make_char_device(tmp_path)
    with pytest.raises(OSError, match="character device"):
        safe_files.write_text(node, "x")
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_a_read_only_file_is_refused(tmp_path):
    path = tmp_path / "kept.ini"
    path.write_text("kept\n")
    path.chmod(0o444)
    with pytest.raises(PermissionError, match="read-only"):
        safe_files.write_text(path, "x")
    assert path.read_text() == "kept\n"


def test_a_file_marked_read_only_is_refused_for_the_superuser_too(tmp_path, monkeypatch):
    # the superuser passes every permission check, so the file's own answer is patched in
    path = tmp_path / "kept.ini"
    path.write_text("kept\n")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if os.fspath(p) == str(path)
                        else real_access(p, mode, **kw))
    with pytest.raises(PermissionError, match="read-only"):
        safe_files.write_text(path, "x")
    assert path.read_text() == "kept\n"


def test_interrupted_saves_are_discarded(tmp_path, monkeypatch):
    # a KeyboardInterrupt inside the write: the part file goes, the target stays as it was
    path = tmp_path / "shapes.md"
    path.write_text("before\n")
    original = safe_files._write_all

    def interrupted(fd, data):
        original(fd, data[:3])
        raise KeyboardInterrupt

    monkeypatch.setattr(safe_files, "_write_all", interrupted)
    with pytest.raises(KeyboardInterrupt):
        safe_files.write_text(path, "after\n")
    assert path.read_text() == "before\n" and leftovers(tmp_path) == []


def test_parts_a_killed_save_left_are_cleared_by_the_next_whole_save(tmp_path):
    path = tmp_path / "01-input.png"
    stale = tmp_path / ".01-input.png.k1ll3d00.part"  # as a process killed mid-write leaves it
    stale.write_bytes(b"half a pic")
    other = tmp_path / ".02-project.png.k1ll3d00.part"  # another file's: not ours to judge now
    other.write_bytes(b"half")
    safe_files.write_bytes(path, b"whole")
    assert path.read_bytes() == b"whole" and not stale.exists() and other.exists()
