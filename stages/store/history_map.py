"""What the store has history for, readable without DuckDB: the commands
that ran and the names of the files sessions touched, as sorted CRC-32 keys in
a small file beside the index (``<index>.history``).

The tool hook is called before every shell command and every edit, and most
of the time it has nothing to say: a command or a file the store never saw.
With this map it says so from two stats and one small read, in-process as in
the warm server, without DuckDB or Parquet (issue 17: the silent path costs
nothing).

The map only ever errs towards "maybe": an index run adds this run's keys to
it *before* its commit (a crash between leaves keys the store lacks, never the
reverse); forgetting a session removes nothing (a key without history costs a
query, not an answer). It is trusted only while the catalog is as the last
index run left it (``seal``: the catalog files' identity, sizes and times); a
catalog written by anything else (a promote, another deja) makes it unknown
until the next run.
"""

from __future__ import annotations

import os
from array import array
from pathlib import Path

MAGIC = b"DEJA-HISTORY-1\n"
EXIT_MARK = "  → exit"  # a command record's text: "$ <command>" or "$ <command>  → exit N"


def path_of(root: Path) -> Path:
    return Path(str(root) + ".history")


def command_key(norm: str) -> int:
    """The key of a command as hooks/tool.normalise gives it (first line,
    lower case, spaces collapsed)."""
    import zlib

    return zlib.crc32(norm.encode("utf-8", "surrogatepass"))


def file_key(name: str) -> int:
    import zlib

    return zlib.crc32(name.encode("utf-8", "surrogatepass"))


def record_command(text: str) -> str:
    """A command record's text as the command a hook normalises: what
    tool_memory.past_runs matches (``$ <norm>`` and ``$ <norm>  → exit N``)."""
    low = text.lower()
    return low.split(EXIT_MARK, 1)[0][2:] if low.startswith("$ ") else ""


def catalog_key(root: Path) -> bytes:
    """The catalog's files as they are: inode, size and time of each."""
    parts = []
    for name in ("catalog.duckdb", "catalog.duckdb.wal"):
        try:
            st = os.stat(os.path.join(root, name))
            parts.append(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "/".join(parts).encode()


class HistoryMap:
    __slots__ = ("commands", "files", "notes")

    def __init__(self, commands: array, files: array, notes: bool):
        self.commands, self.files, self.notes = commands, files, notes

    def may_have_command(self, norm: str) -> bool:
        return _holds(self.commands, command_key(norm))

    def may_have_file(self, name: str) -> bool:
        return _holds(self.files, file_key(name))


def _holds(keys: array, key: int) -> bool:
    from bisect import bisect_left

    i = bisect_left(keys, key)
    return i < len(keys) and keys[i] == key


_cache: dict = {}  # a warm process: the map parsed once per (file, catalog) state


def load(root: Path) -> HistoryMap | None:
    """The map, when it describes the live catalog; None when it is missing,
    unreadable or the catalog changed since the last index run sealed it."""
    path = path_of(root)
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = catalog_key(root)
    state = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, key)
    if _cache.get("state") == state:
        return _cache["map"]
    got = _read(path, key)
    _cache.update(state=state, map=got)
    return got


def _read(path: Path, key: bytes) -> HistoryMap | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    try:
        head, sealed, counts, rest = data.split(b"\n", 3)
        if head + b"\n" != MAGIC or sealed != b"sealed " + key:
            return None
        nc, nf, notes = (int(x) for x in counts.split())
        commands, files = array("I"), array("I")
        commands.frombytes(rest[: 4 * nc])
        files.frombytes(rest[4 * nc: 4 * (nc + nf)])
        if len(files) != nf or len(commands) != nc:
            return None
        return HistoryMap(commands, files, bool(notes))
    except (ValueError, TypeError):
        return None


def _write(path: Path, sealed: bytes, commands, files, notes: bool) -> None:
    c, f = array("I", sorted(set(commands))), array("I", sorted(set(files)))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(MAGIC + b"sealed " + sealed + b"\n" + f"{len(c)} {len(f)} {int(notes)}\n".encode())
        fh.write(c.tobytes() + f.tobytes())
    os.replace(tmp, path)


def add(root: Path, con, records_parts: list[str], sessions_parts: list[str], base: HistoryMap | None,
        before: tuple[list[str], list[str]] = ([], [])) -> None:
    """Before a run commits: this run's commands (from its new records parts)
    and touched file names (from its sessions parts) joined to ``base``, the
    map sealed for the catalog the run started from, and left unsealed until
    ``seal``. Without a base (none yet, or the catalog was written by
    something else since: a promote, another deja, a killed run) the parts
    live ``before`` the run are read too. Whether the store holds notes
    (``deja remember``: a file's hook may name an accepted one) is kept."""
    commands = list(base.commands) if base else []
    files = list(base.files) if base else []
    notes = base.notes if base else False
    if base is None:
        records_parts, sessions_parts = [*before[0], *records_parts], [*before[1], *sessions_parts]
    if records_parts:
        rows = con.execute(f"SELECT DISTINCT text FROM read_parquet({_list(records_parts)}, hive_partitioning=true) "
                           "WHERE role = 'command'").fetchall()
        commands += [command_key(k) for (t,) in rows if t and (k := record_command(t))]
    if sessions_parts:
        rows = con.execute(f"SELECT DISTINCT t FROM (SELECT unnest(touched) AS t FROM read_parquet({_list(sessions_parts)}))"
                           ).fetchall()
        files += [file_key(os.path.basename(t)) for (t,) in rows if t]
        notes = notes or con.execute(f"SELECT count(*) FROM read_parquet({_list(sessions_parts)}) "
                                     "WHERE harness = 'deja'").fetchone()[0] > 0
    _write(path_of(root), b"-", commands, files, notes)


def seal(root: Path) -> None:
    """After a run (its commit and compaction done, the catalog detached):
    the map describes this catalog."""
    path = path_of(root)
    try:
        data = path.read_bytes()
        head, _, rest = data.split(b"\n", 2)
        if head + b"\n" != MAGIC:
            return
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(head + b"\nsealed " + catalog_key(root) + b"\n" + rest)
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass


def _list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"
