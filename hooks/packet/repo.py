"""Repository fingerprints taken at capture and compared at recovery (seed 000/001).

A fingerprint is HEAD, branch and a digest of the working tree: the porcelain
status records (they carry the index object ids), the worktree-vs-index diff and
the content of untracked files. The packet never shows it; it states a verdict
(`verdict`): unchanged, changed (with the commit it was captured at), partial or
unavailable.

Hooks are latency-critical, so this module is stdlib only, every git subprocess
shares one deadline (750 ms by default) and is killed when it runs out, git output
is hashed as it streams, and untracked-file hashing is bounded. A fingerprint that
hit any bound says so (`partial`, `reason`) instead of pretending to be complete.
Nothing here raises.
"""

from __future__ import annotations

import hashlib
import os
import re
import select
import stat
import subprocess
import time

DEADLINE = 0.75  # seconds, shared by every git subprocess of one fingerprint
MAX_UNTRACKED_FILES = 4096
MAX_FILE_BYTES = 1 << 20  # hash only the first MiB of an untracked file
MAX_TOTAL_BYTES = 8 << 20  # across all untracked files
CHUNK = 1 << 16
SMALL_CAP = 1 << 16  # rev-parse output is one line; never keep more than this

# Why these reasons exist: the verdict line tells the agent what made the fingerprint partial.
REASONS = {
    "deadline": "git did not finish within its time limit",
    "files": "there were too many untracked files to hash",
    "file-size": "an untracked file was too large to hash whole",
    "total": "the untracked files were too large to hash whole",
    "git-error": "git reported an error",
    "unreadable": "an untracked file could not be read",
}


def _env() -> dict:
    env = dict(os.environ)
    # No index.lock for a read-only probe: the agent may be running git right now.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    return env


class _Deadline(Exception):
    pass


def _stream(args: list[str], cwd: str, end: float, sink) -> int:
    """Run git, feeding stdout to ``sink`` chunk by chunk; returns the exit code.

    Raises _Deadline (after killing git) when ``end`` passes, FileNotFoundError
    when git is missing.
    """
    proc = subprocess.Popen(
        ["git", *args], cwd=cwd, env=_env(),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        fd = proc.stdout.fileno()
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise _Deadline()
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise _Deadline()
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            sink(chunk)
        left = end - time.monotonic()
        if left <= 0:
            raise _Deadline()
        return proc.wait(timeout=left)
    except subprocess.TimeoutExpired:
        raise _Deadline()
    finally:
        if proc.poll() is None:
            proc.kill()
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        proc.stdout.close()


class _Status:
    """Parses `git status --porcelain=v2 --branch -z` as it streams.

    Header records give HEAD and branch; every other record goes into the tree
    digest; untracked paths are collected (bounded) for content hashing.
    """

    def __init__(self, digest):
        self.digest = digest
        self.buf = b""
        self.head: str | None = None
        self.branch: str | None = None
        self.untracked: list[bytes] = []
        self.too_many = False
        self._orig_next = False  # a rename record is followed by its original path

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk
        *records, self.buf = self.buf.split(b"\0")
        for rec in records:
            self._record(rec)

    def _record(self, rec: bytes) -> None:
        if self._orig_next:
            self._orig_next = False
            self.digest.update(b"O" + rec + b"\0")
            return
        if rec.startswith(b"# "):
            # Headers are kept out of the digest: `branch.ab` moves when a remote is fetched.
            if rec.startswith(b"# branch.oid "):
                oid = rec[13:].decode("ascii", "replace")
                self.head = "" if oid == "(initial)" else oid
            elif rec.startswith(b"# branch.head "):
                name = rec[14:].decode("utf-8", "replace")
                self.branch = "" if name == "(detached)" else name
            return
        if not rec:
            return
        self.digest.update(rec + b"\0")
        if rec.startswith(b"2 "):
            self._orig_next = True
        elif rec.startswith(b"? "):
            if len(self.untracked) < MAX_UNTRACKED_FILES:
                self.untracked.append(rec[2:])
            else:
                self.too_many = True


def _hash_untracked(root: str, paths: list[bytes], digest, end: float, reasons: list[str]) -> None:
    """Content hashes of untracked files, within the byte bounds and the deadline."""
    total = 0
    broot = os.fsencode(root)
    for rel in paths:
        if time.monotonic() >= end:
            reasons.append("deadline")
            return
        full = os.path.join(broot, rel)
        digest.update(b"U" + rel + b"\0")
        try:
            st = os.lstat(full)
        except OSError:
            reasons.append("unreadable")
            continue
        if stat.S_ISLNK(st.st_mode):
            try:
                digest.update(b"L" + os.readlink(full) + b"\0")
            except OSError:
                reasons.append("unreadable")
            continue
        if not stat.S_ISREG(st.st_mode):  # never open a FIFO or a device: it could block
            continue
        digest.update(b"S%d\0" % st.st_size)
        if total >= MAX_TOTAL_BYTES:
            reasons.append("total")
            return
        want = min(st.st_size, MAX_FILE_BYTES, MAX_TOTAL_BYTES - total)
        if st.st_size > MAX_FILE_BYTES:
            reasons.append("file-size")
        elif want < st.st_size:
            reasons.append("total")
        try:
            with open(full, "rb") as fh:
                got = 0
                while got < want:
                    chunk = fh.read(min(CHUNK, want - got))
                    if not chunk:
                        break
                    digest.update(chunk)
                    got += len(chunk)
                    if time.monotonic() >= end:
                        reasons.append("deadline")
                        return
        except OSError:
            reasons.append("unreadable")
            continue
        total += got


def fingerprint(cwd: str, deadline: float = DEADLINE) -> dict:
    """HEAD, branch and a working-tree digest of the git repository holding ``cwd``.

    Returns {"available", "root", "head", "branch", "tree", "partial", "reason"}.
    available is False only when cwd is not in a git work tree or git is missing.
    head is "" for an unborn branch, branch "" for a detached HEAD; both are None
    when the deadline passed before git reported them. reason is a comma-joined
    list of REASONS keys ("" when complete).
    """
    out = {"available": False, "root": "", "head": None, "branch": None, "tree": "",
           "partial": False, "reason": ""}
    try:
        return _fingerprint(cwd, time.monotonic() + max(0.0, deadline), out)
    except Exception as exc:  # never raise into a hook
        out.update(available=False, partial=True, reason=f"error: {type(exc).__name__}")
        return out


def _fingerprint(cwd: str, end: float, out: dict) -> dict:
    if not cwd or not os.path.isdir(cwd):
        out["reason"] = "no such directory"
        return out
    reasons: list[str] = []

    def partial(why: str) -> dict:
        reasons.append(why)
        out.update(partial=True, reason=",".join(dict.fromkeys(reasons)))
        return out

    top = bytearray()

    def keep(chunk: bytes) -> None:
        if len(top) < SMALL_CAP:
            top.extend(chunk[: SMALL_CAP - len(top)])

    try:
        rc = _stream(["rev-parse", "--show-toplevel"], cwd, end, keep)
    except FileNotFoundError:
        out["reason"] = "git is not installed"
        return out
    except _Deadline:
        # We cannot tell whether this is a repository: say partial, not unavailable.
        out["available"] = True
        return partial("deadline")
    root = bytes(top).decode("utf-8", "surrogateescape").strip()
    if rc != 0 or not root:
        out["reason"] = "not a git repository"
        return out
    out.update(available=True, root=root)

    digest = hashlib.sha256()
    status = _Status(digest)
    try:
        rc = _stream(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"],
                     root, end, status.feed)
        out.update(head=status.head, branch=status.branch)
        if rc != 0:
            return partial("git-error")
        if status.too_many:
            reasons.append("files")
        digest.update(b"\0DIFF\0")
        # Index-vs-worktree content; the status records above already pin the index side.
        rc = _stream(["diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv"],
                     root, end, digest.update)
        if rc != 0:
            return partial("git-error")
    except _Deadline:
        out.update(head=status.head, branch=status.branch)
        return partial("deadline")
    digest.update(b"\0UNTRACKED\0")
    _hash_untracked(root, status.untracked, digest, end, reasons)
    out["tree"] = digest.hexdigest()
    if reasons:
        out.update(partial=True, reason=",".join(dict.fromkeys(reasons)))
    return out


# --------------------------------------------------------------------------- verdict

_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def _short(head) -> str:
    return head[:7] if head else ""


def _name(branch) -> str:
    return _UNSAFE.sub("", str(branch))[:80]


def _where(fp: dict) -> str:
    """"abc1234 on main", "abc1234 on a detached HEAD", "before the first commit on main"."""
    head, branch = fp.get("head"), fp.get("branch")
    if head is None:
        at = "an unknown commit"
    elif head == "":
        at = "no commit yet"
    else:
        at = _short(head)
    if branch is None:
        return at
    return f"{at} on {_name(branch)}" if branch else f"{at} on a detached HEAD"


def _reason_text(reason: str) -> str:
    parts = [REASONS.get(r, r) for r in (reason or "").split(",") if r]
    return "; ".join(parts) or "it was incomplete"


def verdict(then: dict | None, now: dict | None) -> dict:
    """{"state": "unchanged"|"changed"|"partial"|"unavailable", "line": one sentence}.

    unchanged needs both fingerprints complete and equal in head, branch and tree.
    A head or branch known on both sides and different is "changed" even when a
    tree digest was partial: that much is certain.
    """
    then = then if isinstance(then, dict) else {}
    now = now if isinstance(now, dict) else {}
    if not then.get("available") or not now.get("available"):
        side = "at capture" if not then.get("available") else "now"
        return {"state": "unavailable",
                "line": (f"No repository fingerprint was available {side}, so nothing shows whether the "
                         "code changed: validate the conclusions below before relying on them.")}
    changes = []
    h0, h1 = then.get("head"), now.get("head")
    b0, b1 = then.get("branch"), now.get("branch")
    if h0 is not None and h1 is not None and h0 != h1:
        changes.append(f"HEAD is now {_short(h1)}" if h1 else "HEAD is now unborn")
    if b0 is not None and b1 is not None and b0 != b1:
        changes.append(f"branch is now {_name(b1)}" if b1 else "HEAD is now detached")
    partial = bool(then.get("partial") or now.get("partial"))
    if not changes and not partial and then.get("tree") != now.get("tree"):
        changes.append("uncommitted changes differ")
    if changes:
        return {"state": "changed",
                "line": (f"The repository changed since capture (captured at {_where(then)}; "
                         f"{', '.join(changes)}): re-validate the conclusions below before relying on them.")}
    if partial:
        why = _reason_text(then.get("reason") if then.get("partial") else now.get("reason"))
        return {"state": "partial",
                "line": (f"The repository fingerprint was partial ({why}), so it is unknown whether the code "
                         f"changed since capture at {_where(then)}: validate the conclusions below before "
                         "relying on them.")}
    return {"state": "unchanged",
            "line": f"The repository is unchanged since capture ({_where(then)}, same working tree)."}
