"""Shared fixtures: a temp HOME shaped like a real machine's agent stores, and
the real `deja` command run as a subprocess against it."""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Every deja the tests start answers in-process: a warm server started by one
# test would outlive it (tests/test_serve.py turns it on where it is the subject).
os.environ["DEJA_SERVE"] = "off"
SHARED = REPO.parent / "shared"
CORPUS = Path(os.environ.get("DEJA_REAL_CORPUS") or SHARED / "corpus" / "real")


def deja_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "deja"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "deja"]


class Home:
    """A fake HOME with Claude Code and Codex stores, and an index dir beside it."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.home.mkdir()
        self.index = root / "index.db"
        self.env = {
            "HOME": str(self.home),
            "DEJA_INDEX_DIR": str(self.index),
            "PATH": os.environ.get("PATH", ""), "DEJA_SERVE": "off",
            # `deja install` compiles the hook client when it finds a compiler: only the
            # tests about it (tests/test_serve.py) pay for that
            "DEJA_HOOK_CLIENT": "off",
            "LANG": "C.UTF-8",
            # a query refreshes the store first; tests that are not about that keep it still
            "DEJA_NO_REFRESH": "1",
        }

    # Claude Code: ~/.claude/projects/<encoded cwd>/<session>.jsonl
    def claude_file(self, session: str, cwd: str = "/home/dev/src/shop") -> Path:
        enc = "".join(c if c.isalnum() else "-" for c in cwd)
        p = self.home / ".claude" / "projects" / enc / f"{session}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def codex_file(self, session: str, day: str = "2026/03/02", stamp: str = "2026-03-02T09-00-00") -> Path:
        p = self.home / ".codex" / "sessions" / day / f"rollout-{stamp}-{session}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def run(self, *args: str, check: bool = True, extra_env: dict | None = None, timeout: float = 120):
        env = dict(self.env, **(extra_env or {}))
        proc = subprocess.run(
            deja_cmd() + list(args), env=env, capture_output=True, text=True, timeout=timeout
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"deja {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc

    def search(self, *words: str, **kw) -> dict:
        proc = self.run("search", "--json", *words, **kw)
        return json.loads(proc.stdout)


@pytest.fixture
def home(tmp_path) -> Home:
    return Home(tmp_path)


def claude_user(session: str, text: str, ts: str, uuid: str, cwd: str = "/home/dev/src/shop", parent=None) -> dict:
    return {
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
        "version": "2.1.20", "gitBranch": "main", "type": "user",
        "message": {"role": "user", "content": text}, "uuid": uuid, "timestamp": ts,
    }


def claude_assistant(session: str, blocks: list, ts: str, uuid: str, msg_id: str = "msg_1",
                     cwd: str = "/home/dev/src/shop", parent=None) -> dict:
    return {
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
        "version": "2.1.20", "gitBranch": "main", "type": "assistant", "requestId": "req_1",
        "message": {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": blocks, "stop_reason": None},
        "uuid": uuid, "timestamp": ts,
    }


def at_one_moment(monkeypatch) -> None:
    """Every search from here on asked at one moment: recency is part of a
    score (rank.freshness falls a little every second), so answers compared
    across a slow test (a cold process's against a warm one's) would differ
    in a score's fourth decimal when asked a minute or two apart."""
    import time

    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)


def write_jsonl(path: Path, rows: list[dict], mode: str = "w") -> None:
    with open(path, mode, encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def store_digest(index: Path) -> dict:
    """What a store holds, whatever its parts: per dataset a row count and an
    order-free sum of row hashes over the live parts (postings without the
    deleted records, the vocabulary summed per word). Two stores with equal
    digests answer every query alike."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"ATTACH '{index / 'catalog.duckdb'}' AS cat (READ_ONLY)")
    live: dict[str, list[str]] = {}
    for dataset, rel in con.execute("SELECT dataset, file FROM cat.generation").fetchall():
        live.setdefault(dataset, []).append(str(index / rel))
    dead = live.get("deletes") or []
    queries = {
        "records": "SELECT count(*), sum(hash(record_id, session_key, session_id, project, seq, role, text, epoch_ms(ts), "
                   "tool, exit_code, is_error, source_path, byte_offset)::HUGEINT) FROM read_parquet(?, hive_partitioning=false)",
        "postings": "SELECT count(*), sum(hash(token, record_id, tf)::HUGEINT) "
                    "FROM read_parquet(?, hive_partitioning=false) WHERE record_id NOT IN (SELECT unnest(?::BIGINT[]))",
        "docs": "SELECT count(*), sum(hash(record_id, session, role, rec_len)::HUGEINT) "
                "FROM read_parquet(?, hive_partitioning=false) WHERE record_id NOT IN (SELECT unnest(?::BIGINT[]))",
        "vocab": "SELECT count(*), sum(hash(token, stem, n)::HUGEINT) FROM "
                 "(SELECT token, any_value(stem) AS stem, sum(n) AS n FROM read_parquet(?) GROUP BY token)",
        "sessions": "SELECT count(*), sum(hash(session_key, title, project, cwd, messages, words, epoch_ms(started), "
                    "epoch_ms(updated))::HUGEINT) FROM read_parquet(?)",
    }
    dead_ids = [r[0] for r in con.execute("SELECT record_id FROM read_parquet(?)", [dead]).fetchall()] if dead else []
    out = {}
    for dataset, sql in queries.items():
        files = live.get(dataset) or []
        params = [files, dead_ids] if dataset in ("postings", "docs") else [files]
        out[dataset] = tuple(con.execute(sql, params).fetchone()) if files else (0, None)
    con.close()
    return out


def unsorted_parts(index: Path) -> list[str]:
    """Live parts whose rows are not in their dataset's order (records by role
    then id, postings by token then id, the vocabulary by stem then word)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    con.execute(f"ATTACH '{index / 'catalog.duckdb'}' AS cat (READ_ONLY)")
    keys = {"records": "role, record_id", "postings": "token, record_id", "vocab": "stem, token"}
    bad = []
    for dataset, rel in con.execute("SELECT dataset, file FROM cat.generation").fetchall():
        if dataset in keys:
            k = keys[dataset]
            n = con.execute(f"SELECT count(*) FILTER (WHERE prev > cur) FROM (SELECT ({k}) AS cur, lag(({k})) OVER () AS prev "
                            "FROM read_parquet(?, hive_partitioning=false))", [str(index / rel)]).fetchone()[0]
            if n:
                bad.append(rel)
    con.close()
    return bad


# ---------------------------------------------------------------- a real Postgres


def _pg_bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def postgres():
    """A real Postgres server in a temp folder, on a unix socket; its DSN."""
    import tempfile

    bindir = _pg_bin()
    if not bindir:
        pytest.skip("no Postgres binaries (initdb) on this machine: .ci/run installs Debian's postgresql")
    tmp_path = Path(tempfile.mkdtemp(prefix="deja-pg-"))  # (pytest's tmp folders are closed to the postgres user)
    data, sock = tmp_path / "pgdata", tmp_path / "pgsock"
    sock.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root
        as_user = ["runuser", "-u", "postgres", "--"]
        os.chmod(tmp_path, 0o755)
        shutil.chown(sock, "postgres")
        data.mkdir()
        shutil.chown(data, "postgres")
    user = "postgres" if as_user else os.environ.get("USER") or "postgres"
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", str(data), "-A", "trust", "-U", user],
                   check=True, capture_output=True)
    port = _free_port()
    subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", str(data), "-w", "-l", str(data / "log"), "-o",
                              f"-p {port} -k {sock} -c listen_addresses=''", "start"], check=True, capture_output=True)
    try:
        yield f"host={sock} port={port} dbname=postgres user={user}"
    finally:
        subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(tmp_path, ignore_errors=True)


# A Claude Code session of (role, text) turns: user, assistant, bash (a command), output (what it printed, an error)
def sid(n: int) -> str:
    return f"5e5e0000-0000-4000-8000-{n:012d}"


def claude_session(home: Home, n: int, turns: list[tuple[str, str]], cwd: str = "/home/dev/src/shop",
                   day: str = "2026-03-02") -> str:
    s = sid(n)
    rows = []
    for i, (role, text) in enumerate(turns):
        ts = f"{day}T10:{i:02d}:00Z"
        if role == "user":
            rows.append(claude_user(s, text, ts, f"u{n}-{i}", cwd=cwd))
        elif role == "assistant":
            rows.append(claude_assistant(s, [{"type": "text", "text": text}], ts, f"a{n}-{i}", msg_id=f"m{n}-{i}", cwd=cwd))
        elif role == "bash":
            rows.append(claude_assistant(s, [{"type": "tool_use", "id": f"t{n}-{i}", "name": "Bash",
                                              "input": {"command": text}}], ts, f"a{n}-{i}", msg_id=f"m{n}-{i}", cwd=cwd))
        elif role == "output":
            rows.append({**claude_user(s, "", ts, f"o{n}-{i}", cwd=cwd),
                         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}-{i-1}",
                                                                  "content": text, "is_error": True}]}})
    write_jsonl(home.claude_file(s, cwd=cwd), rows)
    return s
