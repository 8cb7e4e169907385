"""Whether any transcript changed since a warm process last found the store
fresh, without a ``stat`` of each: Linux inotify on the folders that hold them.

A warm process (``deja serve``'s, ``deja mcp``) checks freshness before every
answer, and an append changes a transcript, not its folder: so the check
stat'ed every file, ~75 ms a search on a store of 12,000 transcripts against a
budget of 40 (bench/README.md, "Many small files"). Here a check that found
nothing to read marks the store clean; until a watched folder reports any
event (a write, a new, moved or deleted file), the set of transcripts or
their folders changes, or the catalog does, the next check needs no ``stat``.

The order keeps it safe: the folders are watched and the queue drained
*before* a full check looks at the files, so a write during the check is
still in the queue for the next one. Only folders on filesystems whose
writes the kernel always reports are trusted (ext4, xfs, btrfs, tmpfs,
overlay, zfs, f2fs, bcachefs): a network, FUSE or 9p mount (NFS, SMB, WSL's
view of a Windows drive), where another machine's or the host's writes raise
no event, keeps the full check. A watch that cannot be added (the user's
watch limit), or anything else that fails, turns it off for the process.
A forked process never uses its parent's watch (they would share one queue).
"""

from __future__ import annotations

import os
import struct

# IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
# | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
_MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800
_IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
_ENDED = 0x400 | 0x800 | 0x8000  # IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED: the watch is gone
# statfs f_type of filesystems whose every write raises an inotify event here
TRUSTED = frozenset({
    0xEF53,  # ext2/3/4
    0x58465342,  # xfs
    0x9123683E,  # btrfs
    0x01021994,  # tmpfs
    0x794C7630,  # overlayfs
    0x2FC12FC1,  # zfs
    0xF2F52010,  # f2fs
    0xCA451A4E,  # bcachefs
})

_ON = False
_WATCH: "Watch | None" = None


def enable(on: bool = True) -> None:
    """This process answers request after request (fresh.keep_warm)."""
    global _ON, _WATCH
    _ON, _WATCH = on, None


def current() -> "Watch | None":
    """This process's watch, or None (not a warm process, not Linux, or turned off)."""
    global _WATCH
    if not _ON:
        return None
    if _WATCH is not None and _WATCH.pid != os.getpid():
        _WATCH = None  # inherited across a fork: the parent's queue, not ours (left open for it)
    if _WATCH is None:
        try:
            _WATCH = Watch()
        except (OSError, AttributeError, ImportError):
            enable(False)
            return None
    return _WATCH if _WATCH.fd >= 0 else None


class Watch:
    def __init__(self):
        import ctypes

        self.pid = os.getpid()
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.watched: set[str] = set()
        self.folder_of: dict[int, str] = {}  # watch descriptor → its folder
        self.untrusted: set[str] = set()
        self.clean = None  # what a check found fresh: (folders, transcripts, the catalog's manifest)

    def quiet(self, folders: frozenset, count: int, known) -> bool:
        """True when nothing changed since ``mark_clean`` with these same
        folders, this many transcripts and this manifest (the catalog's,
        as read.per_catalog keeps it). Otherwise the folders are watched
        from now on, and the caller checks the files (then marks clean)."""
        if self._drained():
            self.clean = None
        if self.clean is not None and self.clean[1] == count and self.clean[2] is known and self.clean[0] == folders:
            return True
        self.clean = None
        for folder in folders - self.watched - self.untrusted:
            self._add(folder)
        self._drained()  # (what happened before the watches were all there: the caller's check sees it)
        return False

    def mark_clean(self, folders: frozenset, count: int, known) -> None:
        """A check of every file found nothing to read."""
        if folders <= self.watched:
            self.clean = (folders, count, known)

    def _add(self, folder: str) -> None:
        import ctypes

        if not self._trusted(folder):
            self.untrusted.add(folder)
            return
        wd = self.libc.inotify_add_watch(self.fd, os.fsencode(folder), _MASK)
        if wd < 0:
            if ctypes.get_errno() in (28, 24):  # ENOSPC (the user's watch limit), EMFILE: off for the process
                self.close()
            self.untrusted.add(folder)  # (gone, unreadable: the full check says what)
            return
        self.watched.add(folder)
        self.folder_of[wd] = folder

    def _trusted(self, folder: str) -> bool:
        import ctypes

        buf = ctypes.create_string_buffer(256)  # struct statfs: f_type is its first word, a C long
        if self.libc.statfs(os.fsencode(folder), buf) != 0:
            return False
        return (struct.unpack_from("l", buf.raw)[0] & 0xFFFFFFFF) in TRUSTED

    def _drained(self) -> bool:
        """Whether any event (or an overflow) was queued; the queue is emptied.
        A folder whose watch ended (deleted or moved: a folder made again at
        its path is another, unwatched) is watched anew when next asked for."""
        if self.fd < 0:
            return True
        seen = False
        while True:
            try:
                got = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return seen
            except OSError:
                self.close()
                return True
            if not got:
                return seen
            seen = True
            at = 0
            while at + 16 <= len(got):  # struct inotify_event: wd, mask, cookie, len, then the name
                wd, mask, _, n = struct.unpack_from("iIII", got, at)
                at += 16 + n
                if mask & _ENDED:
                    folder = self.folder_of.pop(wd, None)
                    if folder is not None:
                        self.watched.discard(folder)

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.fd = -1
        self.clean = None
