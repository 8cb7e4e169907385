"""`deja sync ssh <host>` and bare `deja sync`: the same export and import on
both ends, carried by the system ``ssh`` and ``scp``.

A push exports what the peer has not had (its watermark), copies the batch
to a temporary folder there and runs the peer's own ``deja sync import``; the
watermark moves only once that import succeeded. A pull asks the peer to
export what this machine has not had (the peer keeps that watermark, under
this machine's name) and imports it here; the name the peer gives itself in
its batches is recorded on its row of ``peers.json`` (the alias typed is not
the name an imported session is stamped with).

The peer's deja is ``deja`` on its PATH, else ``~/.local/bin/deja``
(``DEJA_SYNC_REMOTE``: another command line). ``DEJA_SSH_OPTIONS`` adds
options to both ssh and scp (``-F config``, ``-p``/``-P`` are not shared, so
give a port in the config). ssh runs with ``BatchMode``: it never prompts.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping

from deja.pipeline.access import environ, tell
from deja.pipeline.errors import Fail
from deja.pipeline import sync

REMOTE_DEJA = 'd=$(command -v deja || echo "$HOME/.local/bin/deja"); "$d"'
TIMEOUT = 600  # seconds for one ssh or scp step: a hung link fails instead of hanging


def _options(env) -> list[str]:
    return ["-o", "BatchMode=yes", *shlex.split(env.get("DEJA_SSH_OPTIONS", ""))]


def _remote_deja(env) -> str:
    return env.get("DEJA_SYNC_REMOTE") or REMOTE_DEJA


def _run(argv: list[str], what: str) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise Fail(f"{argv[0]} is not on PATH; sync over ssh needs the system ssh and scp")
    except subprocess.TimeoutExpired:
        raise Fail(f"{what}: no answer in {TIMEOUT} s")
    if done.returncode:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise Fail(f"{what}: {why}")
    return done.stdout


def _ssh(env, host: str, command: str, what: str) -> str:
    return _run(["ssh", *_options(env), host, command], what)


def _peer_row(host: str, env) -> tuple[list[dict], dict]:
    """The peers' rows and the one for ``host``: the spelling already stored wins."""
    rows = sync.load_peers(env)
    row = sync.find_peer(rows, host)
    if row is None:
        row = {"host": host.strip()}
        rows.append(row)
    return rows, row


def push(host: str, *, full: bool = False, env: Mapping[str, str] | None = None, notice=None) -> dict:
    env = environ(env)
    rows, row = _peer_row(host, env)
    host = row["host"]
    with tempfile.TemporaryDirectory(prefix="deja-sync-") as tmp:
        out = sync.export(tmp, peer=host, full=full, env=env, notice=notice, commit=False)
        if out["path"]:
            remote = _ssh(env, host, "mktemp -d", f"ssh {host}").strip()
            if not remote.startswith("/"):
                raise Fail(f"ssh {host}: mktemp gave no folder")
            try:
                _run(["scp", "-q", *_options(env), out["path"], f"{host}:{remote}/"], f"scp to {host}")
                _ssh(env, host, f"{_remote_deja(env)} sync import {shlex.quote(remote)} --json",
                     f"deja sync import on {host}")
            finally:
                try:
                    _ssh(env, host, f"rm -rf {shlex.quote(remote)}", f"ssh {host}")
                except Fail:
                    pass
            sync.commit_watermarks(env, host, out["watermarks"])
    row["last_push"] = sync.now_iso()
    sync.save_peers(rows, env)
    return {"host": host, "sent": out["records"], "sessions": out["sessions"]}


def pull(host: str, *, full: bool = False, env: Mapping[str, str] | None = None, notice=None) -> dict:
    env = environ(env)
    rows, row = _peer_row(host, env)
    host = row["host"]
    me = sync.machine_name(env)
    remote = _ssh(env, host, "mktemp -d", f"ssh {host}").strip()
    if not remote.startswith("/"):
        raise Fail(f"ssh {host}: mktemp gave no folder")
    with tempfile.TemporaryDirectory(prefix="deja-sync-") as tmp:
        try:
            flags = " --full" if full else ""
            said = _ssh(env, host, f"{_remote_deja(env)} sync export {shlex.quote(remote)} --peer {shlex.quote(me)} --json{flags}",
                        f"deja sync export on {host}")
            try:
                batch = json.loads(said).get("path")
            except (ValueError, AttributeError):
                raise Fail(f"deja sync export on {host} did not answer in JSON: {said.strip()[:200]}")
            if batch:
                _run(["scp", "-q", *_options(env), f"{host}:{batch}", tmp + "/"], f"scp from {host}")
        finally:
            try:
                _ssh(env, host, f"rm -rf {shlex.quote(remote)}", f"ssh {host}")
            except Fail:
                pass
        got = sync.import_batches(tmp, env=env, notice=notice, default_origin=host)
        names = _origins(Path(tmp))
    if names:  # the name the peer gives itself: what its sessions are stamped with here
        row["name"] = sorted(names)[0]
    row["last_pull"] = sync.now_iso()
    sync.save_peers(rows, env)
    return {"host": host, "name": row.get("name"), "received": got["records"], "duplicates": got["duplicates"],
            "sessions": got["sessions"]}


def _origins(folder: Path) -> set[str]:
    names: set[str] = set()
    for f in folder.glob("*.jsonl"):
        with open(f, "rb") as fh:
            for raw in fh:
                try:
                    origin = json.loads(raw).get("origin")
                except (ValueError, AttributeError):
                    continue
                if isinstance(origin, str) and origin:
                    names.add(origin)
                    break
    return names


def exchange(host: str, *, send: bool = True, receive: bool = False, full: bool = False,
             env: Mapping[str, str] | None = None, notice=None) -> dict:
    out: dict = {"host": host}
    if receive:
        out["pull"] = pull(host, full=full, env=env, notice=notice)
    if send:
        out["push"] = push(host, full=full, env=env, notice=notice)
    return out


def sync_all(*, full: bool = False, env: Mapping[str, str] | None = None, notice=None) -> list[dict]:
    """Bare `deja sync`: every peer of peers.json, both ways. One peer that
    cannot be reached is said and the others still run."""
    env = environ(env)
    rows = sync.load_peers(env)
    if not rows:
        raise Fail(f"no peers yet; `deja sync ssh <host>` adds one (they are kept in {sync.peers_path(env)})")
    done = []
    for row in rows:
        try:
            done.append(exchange(row["host"], send=True, receive=True, full=full, env=env, notice=notice))
        except Fail as exc:
            tell(notice, f"deja: {row['host']}: {exc}")
            done.append({"host": row["host"], "error": str(exc)})
    return done
