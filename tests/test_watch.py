"""A warm process's freshness check stats every transcript only when a
watched folder saw a change since a check found the store fresh
(stages/sources/watch.py): nothing may be missed, whatever changes."""

from __future__ import annotations

import os
import sys

import pytest

from deja.stages.sources import watch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


@pytest.fixture
def w(tmp_path):
    watch.enable()
    got = watch.current()
    if got is None or not got._trusted(str(tmp_path)):
        pytest.skip("no inotify, or the temp folder is on a filesystem whose writes it may not see")
    yield got
    got.close()
    watch.enable(False)


def test_quiet_only_until_a_watched_folder_changes(tmp_path, w):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    f = a / "s.jsonl"
    f.write_text("{}\n")
    folders, known = frozenset({str(a), str(b)}), object()
    assert not w.quiet(folders, 1, known)  # first: the caller checks every file
    w.mark_clean(folders, 1, known)
    assert w.quiet(folders, 1, known)
    with open(f, "a") as fh:  # an append to a transcript: the next check looks at the files
        fh.write("{}\n")
    assert not w.quiet(folders, 1, known)
    w.mark_clean(folders, 1, known)
    assert w.quiet(folders, 1, known)
    (b / "new.jsonl").write_text("{}\n")  # a new file in a watched folder
    assert not w.quiet(folders, 1, known)
    w.mark_clean(folders, 2, known)
    assert not w.quiet(folders, 1, known)  # another count of transcripts
    w.mark_clean(folders, 1, known)
    assert not w.quiet(folders, 1, object())  # another catalog
    w.mark_clean(folders, 1, known)
    assert not w.quiet(frozenset({str(a)}), 1, known)  # other folders
    os.utime(f, (0, 0))  # a time set back
    w.mark_clean(folders, 1, known)
    assert w.quiet(folders, 1, known) is False


def test_a_write_during_the_check_is_seen_by_the_next(tmp_path, w):
    """The folders are watched before the caller looks at the files: a write
    between the look and the mark is still queued."""
    f = tmp_path / "s.jsonl"
    f.write_text("{}\n")
    folders, known = frozenset({str(tmp_path)}), object()
    assert not w.quiet(folders, 1, known)
    with open(f, "a") as fh:  # (the caller's stat of every file happened before this)
        fh.write("{}\n")
    w.mark_clean(folders, 1, known)
    assert not w.quiet(folders, 1, known)


def test_a_folder_on_a_filesystem_it_may_not_see_is_never_quiet(tmp_path, w, monkeypatch):
    monkeypatch.setattr(watch, "TRUSTED", frozenset())
    other = tmp_path / "mnt"
    other.mkdir()
    folders, known = frozenset({str(other)}), object()
    assert not w.quiet(folders, 1, known)
    w.mark_clean(folders, 1, known)
    assert not w.quiet(folders, 1, known)


def test_a_forked_process_never_drains_its_parents_watch(tmp_path, w):
    pid = os.fork()
    if pid == 0:  # the child: its own watch, or none; never the parent's queue
        mine = watch.current()
        os._exit(0 if mine is not w else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert watch.current() is w


def test_a_folder_deleted_and_made_again_is_watched_again(tmp_path, w):
    """A watch ends with its folder: one made again at the same path is
    another folder, whose writes must still be seen."""
    import shutil

    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "s.jsonl").write_text("{}\n")
    folders, known = frozenset({str(folder)}), object()
    assert not w.quiet(folders, 1, known)
    w.mark_clean(folders, 1, known)
    shutil.rmtree(folder)
    folder.mkdir()
    (folder / "s.jsonl").write_text("{}\n")
    assert not w.quiet(folders, 1, known)  # (the deletion's events)
    w.mark_clean(folders, 1, known)
    assert w.quiet(folders, 1, known)
    with open(folder / "s.jsonl", "a") as fh:  # a write in the folder made again
        fh.write("{}\n")
    assert not w.quiet(folders, 1, known)
