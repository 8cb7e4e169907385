"""Moving memory between machines (cli-contract §2.3, the seed's "Sync format"
and "Which machines are one machine").

``export`` writes this machine's own records, redacted again, as JSONL batches
``deja-sync-<machine-hash>-<timestamp>.jsonl``; only what is new since the last
export to the same peer (a watermark per peer: the newest record id sent,
in the store that numbered it; see ``_sent``). ``import_batches`` appends the lines it has not seen to
``<data>/deja/imports/<machine>/<month>.jsonl``, which the ``imported`` reader
(``stages/sources/imported.py``) reads like any agent's store: imported
sessions are indexed like local ones and a rebuild replays them. Records that
came from elsewhere are never exported, and a line that originated on this
machine is never imported back.

Who this machine syncs with lives in ``peers.json`` beside the trust policy
(``DEJA_PEERS_FILE``); the watermarks in ``<data>/deja/sync-state.json``.
Both outlive any rebuild of the index. The ssh path (``pipeline/sync_ssh.py``)
runs the same export and import on both ends with the system ``ssh``/``scp``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Callable, Mapping

from deja.pipeline.access import environ, open_store, reindex, tell
from deja.pipeline.errors import Fail
from deja.stages.policy import config_dir, exclusion_patterns, project_excluded
from deja.stages.roles import ROLES
from deja.stages.sources.imported import PROJECT_PREFIX, harness_name
from deja.stages.sources.locate import imports_dir
from deja.stages.store.private import private_dir, private_file

Notice = Callable[[str], None] | None

BATCH_PREFIX = "deja-sync-"
CHUNK = 5_000  # records fetched, redacted and written at a time: memory stays flat on any history


# --------------------------------------------------------------------------- names


def machine_name(env: Mapping[str, str] | None = None) -> str:
    """The name this machine gives itself in what it exports: DEJA_MACHINE, else the host name."""
    env = environ(env)
    return (env.get("DEJA_MACHINE") or socket.gethostname() or "localhost").strip()


def host_key(host: str) -> str:
    """A host as ssh matches it: the login before the last @ as typed, the
    machine after it without case (``box`` and ``BOX`` are one machine,
    ``Root@box`` and ``root@box`` two logins on it)."""
    user, at, machine = host.strip().rpartition("@")
    return f"{user}{at}{machine.lower()}"


def _slug(name: str) -> str:
    import re

    s = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return (s or "unknown")[:80] + "-" + hashlib.blake2b(name.encode(), digest_size=3).hexdigest()


# --------------------------------------------------------------------------- peers and watermarks


def peers_path(env: Mapping[str, str] | None = None) -> Path:
    env = environ(env)
    if env.get("DEJA_PEERS_FILE"):
        return Path(env["DEJA_PEERS_FILE"]).expanduser()
    return config_dir(env) / "peers.json"


def state_path(env: Mapping[str, str] | None = None) -> Path:
    return Path(imports_dir(environ(env))).parent / "sync-state.json"


def read_json(path: Path, what: str) -> dict:
    """A JSON object file of deja's ({} when absent); one line when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise Fail(f"{path}: cannot read the {what} ({exc}); fix or remove it")
    if not isinstance(data, dict):
        raise Fail(f"{path}: the {what} is not a JSON object; fix or remove it")
    return data


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_json(path: Path, data: dict) -> None:
    """``data`` as ``path``, owner-only, replaced whole (a reader never sees half of it)."""
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    private_file(tmp)
    os.replace(tmp, path)


def load_peers(env: Mapping[str, str] | None = None) -> list[dict]:
    rows = read_json(peers_path(env), "peers file").get("peers", [])
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("host"), str) and r["host"].strip()]


def save_peers(rows: list[dict], env: Mapping[str, str] | None = None) -> None:
    write_json(peers_path(env), {"peers": rows})


def find_peer(rows: list[dict], host: str) -> dict | None:
    """The row of ``host`` (matched as ssh matches it), or None."""
    key = host_key(host)
    return next((r for r in rows if host_key(r["host"]) == key), None)


def forget_peer(host: str, env: Mapping[str, str] | None = None) -> dict:
    """Remove a peer's row and its export watermarks; what was imported from it stays."""
    rows = load_peers(env)
    row = find_peer(rows, host)
    if row is None:
        raise Fail(f"no peer {host!r} in {peers_path(env)}")
    save_peers([r for r in rows if r is not row], env)
    state = read_json(state_path(env), "sync state")
    for kind in ("sent", "watermarks"):
        state.get(kind, {}).pop(host_key(row["host"]), None)
    write_json(state_path(env), state)
    return row


# What a peer has had is the newest record id sent to it, in the store that numbered it.
# Record ids only grow while a store lives (an index run numbers what it reads after all
# it read before, a rebuild included), so a record indexed after an export is sent by the
# next one whatever its time says. A record read again (a rebuild, a rewritten transcript)
# gets a new id and is sent again, which import and publish take as the duplicate it is;
# a store made anew numbers from zero under a new store_id and sends everything. The
# per-transcript record times an older deja kept under "watermarks" are not trusted: they
# lost records stamped before them, so such a peer gets everything once.


def _sent(env, peer: str | None, store: str) -> int:
    """The newest record id of ``store`` already sent to ``peer`` (-1: none)."""
    mark = read_json(state_path(env), "sync state").get("sent", {}).get(host_key(peer) if peer else "")
    if isinstance(mark, dict) and mark.get("store") == store and type(mark.get("record_id")) is int:
        return mark["record_id"]
    return -1


def commit_watermarks(env, peer: str | None, mark: dict) -> None:
    """Record what an export sent (after it was delivered: a failed push sends it again)."""
    if mark.get("record_id") is None:
        return
    key = host_key(peer) if peer else ""
    state = read_json(state_path(env), "sync state")
    newest = max(mark["record_id"], _sent(env, peer, mark["store"]))
    state.setdefault("sent", {})[key] = {"store": mark["store"], "record_id": newest}
    state.get("watermarks", {}).pop(key, None)  # (an older deja's per-transcript times, superseded)
    write_json(state_path(env), state)


# --------------------------------------------------------------------------- export

_EXPORT_SQL = """
SELECT r.record_id, s.harness, s.session_id, s.project, s.title, r.role, r.text,
       epoch_ms(r.ts) AS ms, r.tool, r.exit_code, r.seq
FROM records r JOIN sessions s ON r.session_key = s.session_key
WHERE coalesce(s.origin, 'local') = 'local'
  AND r.record_id NOT IN (SELECT record_id FROM deletes)
  AND r.record_id > ?
"""  # (no order: the rows stream out as the parts are read, in bounded memory)


def _store_id(live) -> str:
    from deja.pipeline.embed import store_facts
    from deja.stages.store.catalog import Store

    return store_facts(live.con, Store(live.root))[0]


def own_records(env: Mapping[str, str], *, peer: str | None = None, full: bool = False, notice: Notice = None,
                mark: dict | None = None):
    """This machine's own records not yet sent to ``peer`` (all with ``full``),
    redacted under today's rules, in chunks: ``(rows, excluded)`` where each
    row is a dict of the batch line's fields plus ``ms`` (the record's time,
    epoch ms). ``mark`` is moved over what the rows yielded so far cover, for
    ``commit_watermarks`` once they are delivered. What export writes and
    what `deja team publish` appends."""
    from deja.stages.redact import redact_many
    from deja.stages.shown import shown

    me = machine_name(env)
    patterns = exclusion_patterns(env)
    mark = {} if mark is None else mark
    live = open_store(env, notice)
    try:
        if not live.has("records") or not live.has("sessions"):
            return
        mark["store"], mark["record_id"] = _store_id(live), None
        cur = live.con.execute(_EXPORT_SQL, [-1 if full else _sent(env, peer, mark["store"])])
        while rows := cur.fetchmany(CHUNK):
            keep = [r for r in rows if not project_excluded(r[3] or "", patterns)]
            texts, _ = redact_many([r[6] for r in keep])
            out = []
            for (rid, harness, sid, project, title, role, _, ms, tool, exit_code, seq), text in zip(keep, texts):
                out.append({"harness": harness, "session_id": sid, "project": project or "", "role": role,
                            "text": text, "ms": ms, "origin": me,
                            # (titles are cut from turns: they hold what turns held)
                            "title": shown(title) if title else None, "tool": tool, "exit_code": exit_code,
                            "seq": seq})
                mark["record_id"] = rid if mark["record_id"] is None else max(rid, mark["record_id"])
            yield out, len(rows) - len(keep)
    finally:
        live.close()


def batch_line(row: dict) -> dict:
    """A row of ``own_records`` as a line of a batch (cli-contract §2.3)."""
    line = {k: row[k] for k in ("harness", "session_id", "project", "role", "text")}
    line["time"] = iso_ms(row["ms"])
    line["origin"] = row["origin"]
    for k in ("title", "tool", "exit_code", "seq"):
        if row.get(k) is not None:
            line[k] = row[k]
    return line


def export(dest: str | os.PathLike, *, peer: str | None = None, full: bool = False,
           env: Mapping[str, str] | None = None, notice: Notice = None, commit: bool = True) -> dict:
    """Write this machine's records not yet sent to ``peer`` (all with ``full``)
    as one JSONL batch in ``dest``. Returns the counts, the batch's path
    (None when nothing was new) and the watermarks it advances (``commit``:
    recorded now; the ssh path records them once the peer has imported)."""
    env = environ(env)
    dest = Path(dest).expanduser()
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Fail(f"cannot write to {dest}: {exc.strerror}")
    me = machine_name(env)
    name = (f"{BATCH_PREFIX}{hashlib.blake2b(me.encode(), digest_size=6).hexdigest()}-"
            f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.jsonl")
    path: Path | None = dest / name
    tmp = dest / ("." + name + ".tmp")
    mark: dict = {}
    records = excluded = 0
    sessions: set[tuple[str, str]] = set()
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            private_file(tmp)
            for rows, left_out in own_records(env, peer=peer, full=full, notice=notice, mark=mark):
                excluded += left_out
                out.write("".join(json.dumps(batch_line(r), ensure_ascii=False) + "\n" for r in rows))
                records += len(rows)
                sessions.update((r["harness"], r["session_id"]) for r in rows)
            out.flush()
            os.fsync(out.fileno())
        if records:
            os.replace(tmp, path)
        else:
            tmp.unlink()
            path = None
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise Fail(f"cannot write the batch in {dest}: {exc.strerror or exc}")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if commit:
        commit_watermarks(env, peer, mark)
    return {"path": str(path) if path else None, "records": records, "sessions": len(sessions),
            "excluded": excluded, "machine": me, "peer": peer, "watermarks": mark}


def iso_ms(ms: int | None) -> str | None:
    if ms is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


# --------------------------------------------------------------------------- import


def record_key(line: dict) -> bytes:
    """A record's identity across machines and imports: where it ran, its
    session, time, role and text (the seed's harness:session_id:time, with the
    role and text, so two records of one second are two records)."""
    h = hashlib.blake2b(digest_size=12)
    # (the time and the agent as import keeps them: a line kept as written by an older
    # deja meets the same line normalised)
    for part in (line["origin"], harness_name(line["harness"]), line["session_id"], str(line_time(line.get("time"))),
                 line["role"], line["text"]):
        h.update(part.encode("utf-8", "replace"))
        h.update(b"\0")
    if type(line.get("seq")) is int:  # its place in the session: two equal records of one moment stay two
        h.update(str(line["seq"]).encode())
    return h.digest()


def line_time(value) -> str | None:
    """A line's time as import keeps it: any form the line check accepts (ISO,
    epoch seconds or ms, as a number or a string) as deja writes times; None
    when absent or not a time."""
    from deja.stages.sources.jsonl import parse_ts

    return iso_ms(parse_ts(value))


def _valid(obj) -> bool:
    from deja.stages.sources.jsonl import parse_ts

    return (isinstance(obj, dict) and isinstance(obj.get("harness"), str) and obj["harness"].strip() != ""
            and isinstance(obj.get("session_id"), str) and obj["session_id"].strip() != ""
            and obj.get("role") in ROLES and isinstance(obj.get("text"), str) and obj["text"] != ""
            and (obj.get("time") is None or parse_ts(obj["time"]) is not None))


def _seen_keys(folder: Path) -> set[bytes]:
    seen: set[bytes] = set()
    for f in sorted(folder.rglob("*.jsonl")) if folder.is_dir() else []:
        with open(f, "rb") as fh:
            for raw in fh:
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                if _valid(obj) and isinstance(obj.get("origin"), str):
                    seen.add(record_key(obj))
    return seen


def import_batches(src: str | os.PathLike, *, env: Mapping[str, str] | None = None, notice: Notice = None,
                   default_origin: str | None = None, index_now: bool = True) -> dict:
    """Read every ``*.jsonl`` batch in ``src`` and keep the records not seen
    before (re-import adds nothing), redacted under today's rules, in the
    imports folder; then index them. ``default_origin``: the machine a line
    that does not name one came from (a pull names the host)."""
    src = Path(src).expanduser()
    if not src.is_dir():
        raise Fail(f"{src} is not a folder of sync batches")
    batches = sorted(p for p in src.glob("*.jsonl") if p.is_file())

    def lines():
        for batch in batches:
            try:
                fh = open(batch, "rb")
            except OSError as exc:
                raise Fail(f"cannot read {batch}: {exc.strerror}")
            with fh:
                for raw in fh:
                    try:
                        yield json.loads(raw)
                    except ValueError:
                        yield None

    got = import_lines(lines(), env=env, notice=notice, default_origin=default_origin, index_now=index_now)
    return {"batches": len(batches), **got}


def import_lines(objs, *, env: Mapping[str, str] | None = None, notice: Notice = None,
                 default_origin: str | None = None, index_now: bool = True) -> dict:
    """``import_batches`` for lines already parsed (None: a line that was not
    JSON); `deja team pull` hands the team's rows here."""
    import fcntl

    from deja.stages.redact import redact_many
    from deja.stages.shown import shown

    env = environ(env)
    me = machine_name(env)
    folder = private_dir(Path(imports_dir(env)))
    counts = {"records": 0, "duplicates": 0, "echoed": 0, "malformed": 0}
    machines: dict[str, int] = {}
    sessions: set[tuple[str, str, str]] = set()

    def keep(pending: dict[str, list[dict]], seen: set[bytes]) -> None:
        for origin, lines in pending.items():
            texts, _ = redact_many([ln["text"] for ln in lines])
            out = []
            for ln, text in zip(lines, texts):
                ln["text"] = text
                k = record_key(ln)
                if k in seen:
                    counts["duplicates"] += 1
                    continue
                seen.add(k)
                out.append((ln, json.dumps(ln, ensure_ascii=False) + "\n"))
                sessions.add((origin, ln["harness"], ln["session_id"]))
            if out:
                # one file per machine and month: the reader parses a file whole, so each stays
                # a month of one machine's history, not all of it
                by_month: dict[str, list[str]] = {}
                for ln, text in out:
                    by_month.setdefault((ln["time"] or "undated")[:7], []).append(text)
                machine_dir = private_dir(folder / _slug(origin))
                for month, texts in sorted(by_month.items()):
                    fd = os.open(machine_dir / f"{month}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                    with os.fdopen(fd, "a", encoding="utf-8") as w:
                        w.write("".join(texts))
                        w.flush()
                        os.fsync(w.fileno())
                counts["records"] += len(out)
                machines[origin] = machines.get(origin, 0) + len(out)
        pending.clear()

    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two imports at once append whole lines, and see each other's keys
        seen = _seen_keys(folder)
        pending: dict[str, list[dict]] = {}
        n = 0
        for obj in objs:
            if not _valid(obj):
                counts["malformed"] += 1
                continue
            origin = obj.get("origin") if isinstance(obj.get("origin"), str) and obj["origin"].strip() else (default_origin or "unknown")
            if origin == me:
                counts["echoed"] += 1  # ours, come back: never imported
                continue
            # every field is untrusted: what is kept is what the checks above accepted, in one form
            line = {"harness": harness_name(obj["harness"]), "session_id": obj["session_id"],
                    "project": obj["project"].removeprefix(PROJECT_PREFIX) if isinstance(obj.get("project"), str) else "",
                    "role": obj["role"], "text": obj["text"], "time": line_time(obj.get("time")), "origin": origin}
            for extra, kind in (("title", str), ("tool", str), ("exit_code", int), ("seq", int)):
                if type(obj.get(extra)) is kind:
                    line[extra] = obj[extra]
            if "title" in line:
                line["title"] = shown(line["title"])
            for k, v in line.items():  # (JSON can spell a lone surrogate, which no UTF-8 file holds)
                if isinstance(v, str) and not v.isascii():
                    line[k] = v.encode("utf-8", "replace").decode("utf-8")
            pending.setdefault(line["origin"], []).append(line)  # (the origin made writable above)
            n += 1
            if n % CHUNK == 0:
                keep(pending, seen)
        keep(pending, seen)
    counts["sessions"] = len(sessions)
    counts["machines"] = machines
    if counts["malformed"]:
        tell(notice, f"deja: {counts['malformed']} line(s) were not sync records; skipped")
    if counts["records"] and index_now:
        reindex("the import", env, notice)
    return counts
