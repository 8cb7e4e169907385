"""`deja team`: a team's memory in Apache Iceberg tables (stages/store/lake.py)
whose catalog is a Postgres the team already runs and whose data files sit on
a shared folder or an S3-compatible bucket.

* ``init`` writes ``~/.config/deja/team.toml`` (catalog DSN, data path, this
  machine's name; never a password: libpq reads PGPASSWORD or ~/.pgpass, the
  bucket's keys come from the AWS environment or ~/.aws) and creates the tables.
* ``publish`` appends this machine's own records (`deja sync`'s, redacted
  again, only what is new since the last publish: the same watermarks under
  the team's name) and the rows of the sessions they belong to, in one commit
  per table, retried when another machine committed first.
* ``pull`` reads the data files it has not read yet and imports the other
  machines' records as `deja sync import` does (same namespacing, same
  dedupe), so they are searched like local sessions.
* ``search``/``ctx`` with ``--team`` query the tables themselves.
* Forgetting a local session deletes what this machine published of it
  (``retract``); when the catalog cannot be reached then, the deletion waits
  in ``team-state.json`` and the next publish or pull does it first.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Mapping

from deja.pipeline import sync
from deja.pipeline.access import environ, tell
from deja.pipeline.errors import Fail
from deja.stages.policy import config_dir
from deja.stages.sources.locate import imports_dir
from deja.stages.store import config, lake

Notice = sync.Notice
APPEND_ROWS = 50_000  # records a data file write takes at a time: memory stays bounded on any history


@contextmanager
def _said(what: str):
    """Whatever goes wrong with the team store inside, as one line (``what`` failed: why)."""
    try:
        yield
    except Fail:
        raise
    except lake.LakeError as exc:
        raise Fail(str(exc))
    except Exception as exc:
        raise Fail(f"{what}: {lake.why(exc)}")


# --------------------------------------------------------------------------- configuration


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = environ(env)
    if env.get("DEJA_TEAM_CONFIG"):
        return Path(env["DEJA_TEAM_CONFIG"]).expanduser()
    return config_dir(env) / "team.toml"


def _conninfo(dsn: str) -> dict:
    """A Postgres DSN (URL or libpq keywords) as libpq's keywords; a password
    in it is refused (it would be stored in a file)."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise Fail("the team store needs psycopg")
    text = dsn.strip()
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://"):
        if text.startswith(prefix):
            text = "postgresql://" + text[len(prefix):]
    try:
        info = {k: str(v) for k, v in conninfo_to_dict(text).items()}
    except Exception as exc:
        raise Fail(f"--catalog is not a Postgres DSN ({lake.why(exc)})")  # (not echoed: it may hold a password)
    if info.pop("password", None) is not None:
        raise Fail("keep the password out of the DSN: deja never stores one; set PGPASSWORD or use ~/.pgpass")
    return info


def _sqlalchemy_url(info: dict) -> str:
    from urllib.parse import quote, urlencode

    query = {k: v for k, v in info.items() if k not in ("user", "host", "port", "dbname")}
    host = info.get("host", "")
    netloc = quote(info["user"], safe="") + "@" if info.get("user") else ""
    if host and not host.startswith("/"):
        netloc += host + (f":{info['port']}" if info.get("port") else "")
    else:  # a unix socket's folder (or libpq's default): given as a query argument
        if host:
            query["host"] = host
        if info.get("port"):
            query["port"] = info["port"]
    return f"postgresql+psycopg://{netloc}/{quote(info.get('dbname', ''), safe='')}" + (
        "?" + urlencode(query) if query else "")


def _warehouse(data: str) -> str:
    if data.startswith("s3://"):
        return data.rstrip("/")
    if "://" in data and not data.startswith("file://"):
        raise Fail(f"the data path is a folder or s3://bucket/prefix, not {data!r}")
    folder = Path(data[len("file://"):] if data.startswith("file://") else data).expanduser().resolve()
    return "file://" + str(folder)


class Team:
    """A loaded team.toml: what every team command starts from."""

    def __init__(self, catalog: str, data: str, machine: str, env: Mapping[str, str]):
        self.dsn, self.data, self.machine, self.env = catalog, data, machine, env
        self.info = _conninfo(catalog)
        self.uri = _sqlalchemy_url(self.info)
        self.warehouse = _warehouse(data)
        # the watermarks of publish, and the files a pull has read, are kept per team store: its
        # data path names it (a catalog reached by another address is the same store)
        self.id = hashlib.blake2b(self.warehouse.encode(), digest_size=6).hexdigest()
        self._cat = None

    def peer(self) -> str:
        """The name publish's watermarks are kept under: the records table's own
        id, so tables made anew (a new catalog, a wiped folder) get everything again."""
        return f"team:{lake.load(self.catalog(), lake.RECORDS).metadata.table_uuid}"

    def catalog(self):
        if self._cat is None:
            props = {}
            if self.warehouse.startswith("s3://"):  # where the bucket is; its keys pyarrow reads from the AWS env
                for var, prop in (("AWS_ENDPOINT_URL", "s3.endpoint"), ("AWS_REGION", "s3.region")):
                    if self.env.get(var):
                        props[prop] = self.env[var]
            with _said("cannot open the team catalog"):
                self._cat = lake.catalog(self.uri, self.warehouse, props)
        return self._cat


def load_team(env: Mapping[str, str] | None = None) -> Team:
    import tomllib

    env = environ(env)
    path = config_path(env)
    try:
        cfg = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise Fail(f"no team store configured; run `deja team init --catalog DSN --data FOLDER --machine NAME` ({path})")
    except (OSError, ValueError) as exc:
        raise Fail(f"{path}: cannot read it ({exc})")
    missing = [k for k in ("catalog", "data", "machine") if not isinstance(cfg.get(k), str) or not cfg[k].strip()]
    if missing:
        raise Fail(f"{path}: {', '.join(missing)} missing; run `deja team init` again")
    return Team(cfg["catalog"], cfg["data"], cfg["machine"], env)


def configured(env: Mapping[str, str] | None = None) -> bool:
    return config_path(env).is_file()


def init(catalog: str, data: str, machine: str | None = None, *, env: Mapping[str, str] | None = None) -> dict:
    """Write team.toml and create the tables (there already: left as they are)."""
    env = environ(env)
    machine = (machine or sync.machine_name(env)).strip()
    if not machine:
        raise Fail("--machine needs a name")
    team = Team(catalog, data, machine, env)  # (checks the DSN and the data path)
    if team.warehouse.startswith("file://"):
        try:
            Path(team.warehouse[len("file://"):]).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Fail(f"cannot make the data folder {data}: {exc.strerror}")
    with _said("cannot create the team tables"):
        lake.ensure_tables(team.catalog())
    path = config_path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{k} = {json.dumps(v)}\n" for k, v in (("catalog", catalog), ("data", data), ("machine", machine)))
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text("# deja's team store (deja team init); no password here: PGPASSWORD or ~/.pgpass\n" + body)
    os.replace(tmp, path)
    return {"config": str(path), "catalog": team.uri, "warehouse": team.warehouse, "machine": machine}


# --------------------------------------------------------------------------- state kept between runs


def _state_path(env) -> Path:
    return Path(imports_dir(env)).parent / "team-state.json"


def _state(env, team: Team) -> dict:
    mine = sync.read_json(_state_path(env), "team state").get(team.id)
    return mine if isinstance(mine, dict) else {}


def _save_state(env, team: Team, mine: dict) -> None:
    path = _state_path(env)
    sync.write_json(path, {**sync.read_json(path, "team state"), team.id: mine})


def report(env: Mapping[str, str] | None = None) -> dict | None:
    """What `deja doctor` says of the team store: None when none is configured.
    Reads only team.toml and the state file (doctor never waits on a catalog)."""
    env = environ(env)
    if not configured(env):
        return None
    try:
        team = load_team(env)
        mine = _state(env, team)
    except Fail as exc:
        return {"error": str(exc)}
    return {"machine": team.machine, "data": team.warehouse, "config": str(config_path(env)),
            "last_publish": mine.get("last_publish"), "last_pull": mine.get("last_pull"),
            "pending_deletions": len(mine.get("retract", []))}


# --------------------------------------------------------------------------- publish


def publish(*, full: bool = False, env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """Append this machine's records not yet published (``full``: replace all
    this machine has in the tables) and its sessions' rows."""
    import pyarrow as pa

    env = environ(env)
    team = load_team(env)
    env = dict(env, DEJA_MACHINE=team.machine)  # (the records are stamped with the team's name for this machine)
    cat = team.catalog()
    retracted = _retract_pending(team, env, notice)
    published_at = pa.scalar(int(time.time() * 1_000_000), pa.timestamp("us", tz="UTC"))
    out = {"records": 0, "sessions": 0, "retracted": retracted, "machine": team.machine}
    mark: dict = {}
    sessions: set[tuple[str, str]] = set()
    with _said("cannot reach the team store"):
        lake.ensure_tables(cat)  # (a lake made by an older deja gets the columns added since)
        peer = team.peer()
        there = None if full else _Published(lake.load(cat, lake.RECORDS), team.machine)

    def write_records(tx) -> None:  # (run again from the start when the commit lost a race)
        from pyiceberg.expressions import EqualTo

        out["records"] = 0
        mark.clear()
        sessions.clear()
        if full:
            tx.delete(EqualTo("machine", team.machine))
        pending: list[dict] = []
        for rows, _ in sync.own_records(env, peer=peer, full=full, notice=notice, mark=mark):
            if there is not None:
                rows = [r for r in rows if not there.has(r)]
            pending += rows
            if len(pending) >= APPEND_ROWS:
                tx.append(_records_table(pending, team.machine, published_at))
                pending = []
            sessions.update((r["harness"], r["session_id"]) for r in rows)
            out["records"] += len(rows)
        if pending:
            tx.append(_records_table(pending, team.machine, published_at))

    with _said("cannot publish to the team store"):
        attempts = lake.commit(cat, lake.RECORDS, write_records)
    # the records are in: never sent again, whatever happens to the sessions' rows
    # (those wait in the state until a publish writes them)
    sync.commit_watermarks(env, peer, mark)
    mine = _state(env, team)
    sessions |= {tuple(k) for k in mine.get("sessions_pending", [])}
    mine["sessions_pending"] = sorted(sessions)
    _save_state(env, team, mine)
    try:
        with _said("cannot write the sessions' rows"):
            if sessions or full:
                rows = _session_rows(env, team, sessions, full, published_at)

                def write_sessions(tx) -> None:
                    from pyiceberg.expressions import And, EqualTo, In

                    if full:
                        tx.delete(EqualTo("machine", team.machine))
                    else:
                        tx.delete(And(EqualTo("machine", team.machine), In("session_id", sorted({s for _, s in sessions}))))
                    if rows.num_rows:
                        tx.append(rows)

                lake.commit(cat, lake.SESSIONS, write_sessions)
                out["sessions"] = rows.num_rows
    except Fail as exc:
        raise Fail(f"the records are published, their sessions' rows not yet (the next publish writes them): {exc}")
    mine = _state(env, team)
    mine["sessions_pending"] = []
    mine["last_publish"] = sync.now_iso()
    _save_state(env, team, mine)
    out["attempts"] = attempts
    return out


class _Published:
    """The record keys this machine has in the records table, read a month's
    files at a time as rows of that month come to be published: a record sent
    again (read again here under a new id: a rebuild, a rewritten transcript,
    a state from an older deja) is not appended a second time."""

    def __init__(self, table, machine: str):
        import re

        self.table, self.keys = table, {}
        self.files: dict[str, list[str]] = {}
        for f in lake.data_files(table):
            if f"/machine={machine}/" in f:
                m = re.search(r"/month=(\d{4}-\d{2}|null)/", f)
                # (a file whose month this cannot read is read with every month: a duplicate
                # costs more than a read)
                self.files.setdefault(m.group(1) if m else "", []).append(f)

    def has(self, row: dict) -> bool:
        month = sync.iso_ms(row["ms"])[:7] if row["ms"] is not None else "null"
        if month not in self.keys:
            files = self.files.get(month, []) + self.files.get("", [])
            got = lake.read_files(self.table, files, ["record_key"]) if files else None
            self.keys[month] = set(got.column("record_key").to_pylist()) if got is not None else set()
        return sync.record_key(sync.batch_line(row)).hex() in self.keys[month]


def _records_table(rows: list[dict], machine: str, published_at):
    import pyarrow as pa

    n = len(rows)
    cols = {
        "machine": pa.array([machine] * n, pa.string()),
        "harness": pa.array([r["harness"] for r in rows], pa.string()),
        "session_id": pa.array([r["session_id"] for r in rows], pa.string()),
        "project": pa.array([r["project"] for r in rows], pa.string()),
        "role": pa.array([r["role"] for r in rows], pa.string()),
        "text": pa.array([r["text"] for r in rows], pa.string()),
        "ts": pa.array([None if r["ms"] is None else r["ms"] * 1000 for r in rows], pa.timestamp("us", tz="UTC")),
        "tool": pa.array([r["tool"] for r in rows], pa.string()),
        "exit_code": pa.array([r["exit_code"] for r in rows], pa.int64()),
        "record_key": pa.array([sync.record_key(sync.batch_line(r)).hex() for r in rows], pa.string()),
        "published_at": pa.array([published_at] * n, pa.timestamp("us", tz="UTC")),
        "seq": pa.array([r.get("seq") for r in rows], pa.int64()),
    }
    # tool output after everything else (then by role, session, time): it fills row groups
    # of its own, which a search of what was said skips by their statistics
    import pyarrow.compute as pc

    table = pa.table(cols, schema=lake.arrow_schema(lake.RECORDS))
    table = table.append_column("_bulk", pc.equal(table["role"], "tool-output"))
    return table.sort_by([("_bulk", "ascending"), ("role", "ascending"), ("session_id", "ascending"),
                          ("ts", "ascending")]).drop_columns(["_bulk"])


def _session_rows(env, team: Team, keys: set[tuple[str, str]], every: bool, published_at):
    """This machine's local sessions (those of ``keys``; ``every``: all) as rows of the sessions table."""
    import pyarrow as pa

    from deja.pipeline.access import open_store
    from deja.stages.shown import shown

    live = open_store(env)
    try:
        rows = live.con.execute(
            """SELECT harness, session_id, project, title, epoch_ms(started), epoch_ms(updated), messages
               FROM sessions WHERE coalesce(origin, 'local') = 'local'""").fetchall() if live.has("sessions") else []
    finally:
        live.close()
    rows = [r for r in rows if every or (r[0], r[1]) in keys]
    us = lambda ms: None if ms is None else ms * 1000  # noqa: E731
    return pa.table({
        "machine": pa.array([team.machine] * len(rows), pa.string()),
        "harness": pa.array([r[0] for r in rows], pa.string()),
        "session_id": pa.array([r[1] for r in rows], pa.string()),
        "project": pa.array([r[2] for r in rows], pa.string()),
        "title": pa.array([shown(r[3]) if r[3] else None for r in rows], pa.string()),
        "started": pa.array([us(r[4]) for r in rows], pa.timestamp("us", tz="UTC")),
        "updated": pa.array([us(r[5]) for r in rows], pa.timestamp("us", tz="UTC")),
        "records": pa.array([r[6] for r in rows], pa.int64()),
        "published_at": pa.array([published_at] * len(rows), pa.timestamp("us", tz="UTC")),
    }, schema=lake.arrow_schema(lake.SESSIONS))


# --------------------------------------------------------------------------- forget


def retract(keys: list[tuple[str, str]], *, env: Mapping[str, str] | None = None, notice: Notice = None) -> int:
    """Delete what this machine published of these (harness, session id)
    sessions; when the team store cannot be reached, keep them for the next
    publish or pull. Returns the sessions deleted now."""
    env = environ(env)
    if not keys or not configured(env):
        return 0
    try:
        team = load_team(env)
    except Fail as exc:
        tell(notice, f"deja: {exc}")
        return 0
    mine = _state(env, team)
    pending = {tuple(k) for k in mine.get("retract", [])} | set(keys)
    mine["retract"] = sorted(pending)
    _save_state(env, team, mine)
    try:
        return _retract_pending(team, env, notice)
    except (Fail, ImportError) as exc:  # (a machine without deja[team] keeps them pending too)
        tell(notice, f"deja: the team store keeps those sessions until it can be reached ({exc}); "
                     "the next `deja team publish` deletes them")
        return 0


def _retract_pending(team: Team, env, notice) -> int:
    from pyiceberg.expressions import And, EqualTo, In

    mine = _state(env, team)
    pending = [tuple(k) for k in mine.get("retract", [])]
    if not pending:
        return 0
    ids = sorted({sid for _, sid in pending})

    def drop(tx) -> None:
        tx.delete(And(EqualTo("machine", team.machine), In("session_id", ids)))

    with _said("cannot reach the team store"):
        cat = team.catalog()
        lake.commit(cat, lake.RECORDS, drop)
        lake.commit(cat, lake.SESSIONS, drop)
    mine["retract"] = []
    _save_state(env, team, mine)
    return len(pending)


# --------------------------------------------------------------------------- pull


def pull(*, env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """Import the other machines' records from the data files not read before;
    a session its machine has since taken out of the tables (forgotten there)
    is forgotten here too."""
    env = environ(env)
    team = load_team(env)
    env = dict(env, DEJA_MACHINE=team.machine)
    retracted = _retract_pending(team, env, notice) if _state(env, team).get("retract") else 0
    with _said("cannot read the team store"):
        cat = team.catalog()
        records = lake.load(cat, lake.RECORDS)
        files = lake.data_files(records)
        mine = _state(env, team)
        done = set(mine.get("pulled", []))
        new = [f for f in files if f not in done and f"/machine={team.machine}/" not in f]
        table = lake.read_files(records, new, ["machine", "harness", "session_id", "project", "role", "text", "ts",
                                               "tool", "exit_code", "seq"]) if new else None
        titles = _team_titles(cat, team.machine)
        # what the others have in the tables now (the records decide: a sessions row may lag them)
        published = _published(records, files, team.machine)
    got = {"records": 0, "duplicates": 0, "sessions": 0, "machines": {}}
    seen: set[tuple] = set()
    if table is not None and table.num_rows:
        got = sync.import_lines(_lines(table, team.machine, titles, seen), env=env, notice=notice)
    before = {tuple(k) for k in mine.get("pulled_sessions", [])}
    gone = sorted(before - published)
    if gone:
        _forget_here(gone, env, notice)
    mine["pulled"] = sorted(set(files))
    mine["pulled_sessions"] = sorted((before | seen) & published)
    mine["last_pull"] = sync.now_iso()
    _save_state(env, team, mine)
    return {"files": len(new), "retracted": retracted, "forgotten": len(gone),
            **{k: got[k] for k in ("records", "duplicates", "sessions", "machines")}}


def _team_titles(cat, me: str) -> dict[tuple, str]:
    """(machine, harness, id) → title of the other machines' sessions in the sessions table."""
    table = lake.load(cat, lake.SESSIONS)
    rows = lake.read_files(table, lake.data_files(table), ["machine", "harness", "session_id", "title"])
    if rows is None:
        return {}
    cols = [rows.column(c).to_pylist() for c in ("machine", "harness", "session_id", "title")]
    return {(m, h, s): t for m, h, s, t in zip(*cols) if m != me and t}


def _published(records, files: list[str], me: str) -> set[tuple]:
    """(machine, harness, id) of the other machines' sessions the records table holds now."""
    others = [f for f in files if f"/machine={me}/" not in f]
    rows = lake.read_files(records, others, ["machine", "harness", "session_id"]) if others else None
    if rows is None:
        return set()
    rows = rows.group_by(["machine", "harness", "session_id"]).aggregate([])
    return {k for k in zip(*(rows.column(c).to_pylist() for c in ("machine", "harness", "session_id"))) if k[0] != me}


def _forget_here(keys: list[tuple], env, notice) -> None:
    """Forget the imported copies of sessions their machine took out of the team store."""
    from deja.pipeline import curate
    from deja.stages.sources.imported import imported_id

    matches = [{"key": f"{h}:{imported_id(m, h, s)}", "project": ""} for m, h, s in keys]
    curate.forget_apply({"sessions": matches, "packets": []}, "deja team pull: forgotten on its machine", env, notice)


def _lines(table, me: str, titles: dict, seen: set):
    cols = {c: table.column(c).to_pylist() for c in table.column_names}
    titled: set[tuple] = set()
    for i in range(table.num_rows):
        machine = cols["machine"][i]
        if machine == me:
            continue
        ts = cols["ts"][i]
        key = (machine, cols["harness"][i], cols["session_id"][i])
        seen.add(key)
        line = {"harness": key[1], "session_id": key[2], "project": cols["project"][i] or "",
                "role": cols["role"][i], "text": cols["text"][i],
                "time": sync.iso_ms(int(ts.timestamp() * 1000)) if ts is not None else None, "origin": machine,
                "tool": cols["tool"][i], "exit_code": cols["exit_code"][i], "seq": cols["seq"][i]}
        if titles.get(key) and key not in titled:
            line["title"] = titles[key]
            titled.add(key)
        yield line


# --------------------------------------------------------------------------- search --team, ctx --team


def _sources(team: Team) -> tuple[str, str]:
    """FROM sources for the two tables' current files: on a shared folder the
    files themselves; from a bucket, local copies (``<index>.team-<id>/``)."""
    from deja.stages.store.duck import sql_list

    root = config.index_dir(team.env)
    cache = root.with_name(f"{root.name}.team-{team.id}")  # (sidecars, like the others)
    out = []
    for name in (lake.RECORDS, lake.SESSIONS):
        with _said("cannot read the team's data files"):
            files = lake.current_files(team.catalog, team.info, name, cache.with_name(cache.name + ".json"))
            local = lake.local_copies(team.catalog, name, files, cache / name)
        if local:
            out.append(f"read_parquet({sql_list(local)})")
        else:  # (no file yet: the table's columns, no rows)
            cols = ", ".join(f"NULL::{_DUCK_TYPES[str(f.type)]} AS {f.name}" for f in lake.arrow_schema(name))
            out.append(f"(SELECT {cols} LIMIT 0)")
    return out[0], out[1]


_DUCK_TYPES = {"string": "VARCHAR", "int64": "BIGINT", "timestamp[us, tz=UTC]": "TIMESTAMPTZ"}


def search(query: str, *, limit: int = 15, env: Mapping[str, str] | None = None) -> dict:
    from deja.queries import team_search
    from deja.stages.store import duck

    env = environ(env)
    team = load_team(env)
    con = duck.connect()
    try:
        records, sessions = _sources(team)
        return team_search.search(con, records, sessions, query, limit=limit)
    finally:
        con.close()


def ctx(query: str, *, env: Mapping[str, str] | None = None) -> str:
    from deja.queries import team_search
    from deja.stages.store import duck

    env = environ(env)
    team = load_team(env)
    con = duck.connect()
    try:
        records, sessions = _sources(team)
        found = team_search.search(con, records, sessions, query, limit=1)
        if not found["hits"]:
            raise Fail(f"no team session matches {query!r}")
        hit = found["hits"][0]
        s = hit["session"]
        return team_search.brief(hit, team_search.session_records(con, records, s["from"], s["harness"], s["id"]))
    finally:
        con.close()
