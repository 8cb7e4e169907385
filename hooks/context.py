"""SessionStart — `deja hook-context`: the project's digest (≤2 KB), and
PreCompact — `deja hook-precompact`: forget what this session was shown.

hooks-contract §5.2; seed "Claude SessionStart hook". The digest is led by the
project's accepted promoted notes (sessions of harness ``deja`` whose text
says state accepted), then the most recent sessions of the project ranked by
how many of the files the working tree is touching they mention, each with its
decision line.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import zlib

from . import common as c

BUDGET = {"safe": 2048, "aggressive": 4096}
MAX_SESSIONS = {"safe": 3, "aggressive": 6}
CANDIDATES = 12
LEAD = ("Past sessions on this project, from deja's index of your agents' transcripts. For details "
        + c.MORE + "; mention deja only when you actually reused something from it.")
LEAD_COMPACT = ("The context was just compacted; the memory below survived it. For details "
                + c.MORE + "; mention deja only when you actually reused something from it.")
_ACCEPTED = re.compile(r"\b(?:state|status|lifecycle)\b\W{0,4}accepted\b|\[accepted\]", re.I)
_LOCKFILES = frozenset(("package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "cargo.lock", "go.sum",
                        "uv.lock", "gemfile.lock", "composer.lock", "bun.lockb"))


def run(payload: dict, out: c.Output, once: bool = False) -> None:
    env = os.environ
    mode = c.recall_mode(env)
    sid = c.session_id(payload)
    cwd = c.project_cwd(payload, env)
    event = payload.get("hook_event_name")
    event = event if event in ("SessionStart", "UserPromptSubmit") else "SessionStart"
    root = c.index_root(env)
    ledger = c.Ledger(root, sid)
    if once and ledger.has("once:context"):
        raise c.Silent("already given to this session")
    compacted = payload.get("source") == "compact"
    cached = None if compacted else cache_get(root, cwd, sid, mode, env)
    if cached is not None:
        body, keys = cached
    else:
        live = c.open_warm(env)
        try:
            body, keys = digest(live, c.project_name(cwd), cwd, sid, mode, compacted)
            if compacted and not out.packet:  # no packet was captured: what the index holds of this session
                evidence = evidence_packet(live, sid)
                if evidence:
                    body = "\n".join([LEAD_COMPACT, evidence, *body.splitlines()[1:]])
        finally:
            live.close()
        if not compacted:
            cache_put(root, cwd, mode, env, body, keys)
    if not body:
        raise c.Silent("nothing to recall")
    body = c.fit_lines(body.splitlines(), BUDGET[mode])
    receipt = None
    if keys and not out.plain:
        mark = c.Ledger(root, "cwd:%08x" % zlib.crc32(cwd.encode("utf-8", "replace")))
        token = "receipt:" + c.fingerprint(" ".join(sorted(keys)))
        if not mark.has(token):
            size = len(c.frame(body).encode("utf-8")) / 1024
            n = len(keys)
            receipt = f"deja recalled {n} prior session{'s' if n != 1 else ''} from this project · {size:.1f} KB of context"
            mark.add(token)
    out.emit(event, body, receipt, keys=keys)
    if once:
        ledger.add("once:context")


# --------------------------------------------------------------------------- cache

CACHE_TTL = 60.0  # seconds (hooks-contract §5.2: a per-cwd cache, valid 60 s)


def _cache_path(root, cwd: str):
    return root.with_name(f"{root.name}.hookcache-{_fnv32(cwd):08x}")


def _fnv32(text: str) -> int:
    h = 0x811C9DC5
    for b in text.encode("utf-8", "replace"):
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _cache_key(root, cwd: str, mode: str, env) -> str | None:
    """What the digest depends on besides time: the workspace, the recall mode
    and policy (exclusions), and the index itself (any commit changes the catalog)."""
    from deja.stages.policy import exclusion_patterns

    try:
        st = os.stat(root / "catalog.duckdb")
    except OSError:
        return None
    return c.fingerprint("\0".join([cwd, mode, *exclusion_patterns(env), f"{st.st_mtime_ns}:{st.st_size}"]))


def cache_get(root, cwd: str, sid: str, mode: str, env) -> tuple[str, list[str]] | None:
    """A digest built for this workspace under the same rules within the last
    minute, from the same index; None when there is none or it no longer holds."""
    import json

    key = _cache_key(root, cwd, mode, env)
    if key is None:
        return None
    try:
        entry = json.loads(_cache_path(root, cwd).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or time.time() - float(entry.get("t", 0)) > CACHE_TTL:
        return None
    keys = [k for k in entry.get("keys", []) if isinstance(k, str)]
    if sid and any(k.split(":", 1)[-1] == sid for k in keys):
        return None  # it recalls the session asking: build one without it
    return str(entry.get("body", "")), keys


def cache_put(root, cwd: str, mode: str, env, body: str, keys: list[str]) -> None:
    import json

    key = _cache_key(root, cwd, mode, env)
    if key is None:
        return
    c.replace_file(_cache_path(root, cwd), json.dumps({"t": time.time(), "key": key, "body": body, "keys": keys}))


def digest(live, project: str, cwd: str, sid: str, mode: str, compacted: bool = False) -> tuple[str, list[str]]:
    """(the digest body, the session keys it recalls); ``project`` is the cwd's project root."""
    notes = accepted_notes(live, project) if project else []
    any_project = mode == "aggressive"
    if not project and not any_project:
        return "", []
    from deja.queries.project_memory import recent_sessions

    rows = recent_sessions(live, project, sid, any_project, CANDIDATES)
    touching = working_tree_files(cwd) if rows else []
    recency = {r[0]: i for i, r in enumerate(rows)}

    def mentions(r) -> int:
        names = {os.path.basename(p).lower() for p in (r[6] or [])}
        return sum(1 for b in touching if b in names)

    rows.sort(key=lambda r: (r[7] is True, -mentions(r), recency[r[0]]))  # backed-out sessions go last
    picked, seen_titles = [], set()
    for r in rows:
        title = c.recall_line(r[3] or "", 140)
        decision = c.recall_line(r[4] or "", 220)
        words = {w.lower() for w in re.findall(r"\w{2,}", title + " " + decision)}
        if len(words) < 3:
            continue
        norm = " ".join(sorted(words))[:120]
        if norm in seen_titles:  # near-duplicate of one already shown
            continue
        seen_titles.add(norm)
        picked.append((r, title, decision))
        if len(picked) >= MAX_SESSIONS[mode]:
            break
    if not picked and not notes:
        return "", []
    lines = [LEAD_COMPACT if compacted else LEAD]
    keys = []
    if project:
        from deja.queries.project_memory import project_display

        name = next((r[8] for r in rows if r[8] and not any_project), "") or project_display(live, project)
    if notes:
        lines.append(f"Standing decisions for {name} (accepted notes):")
        for key, text in notes:
            lines.append(f"- {text}")
            keys.append(key)
    if picked:
        lines.append(f"Recent sessions in {name}:" if not any_project else "Recent sessions:")
        for r, title, decision in picked:
            lines.append(f"- {c.day(r[5])} {r[1]} \"{title}\" (deja:{r[2][:8]})")
            if decision:
                lines.append(f"  decided: {decision}")
            if r[7]:
                lines.append("  warning: this session backed out of its approach; do not repeat it blindly")
            keys.append(r[0])
    return "\n".join(lines), keys


EVIDENCE_ITEMS, EVIDENCE_COMMAND = 8, 120  # hooks-contract §5.3
_SCRATCH = ("/tmp/", "/var/tmp/", "/var/folders/", "/private/tmp/", "/private/var/folders/", "/dev/")


def evidence_packet(live, sid: str) -> str:
    """hooks-contract §5.3's evidence packet for a compacted session whose
    PreCompact captured nothing (a host without that hook, a capture that
    failed): the files it touched and the commands it ran, most recent first,
    from the index (the refresh PreCompact asked for put them there). A
    summary keeps conclusions and drops these. "" when the index holds none."""
    if not sid or not live.has("records"):
        return ""
    from deja.stages.work_records import command_of  # (only after a compaction nothing captured)

    rows = live.con.execute(
        f"SELECT role, text FROM {live.records_source()} WHERE session_id = ? AND role IN ('files', 'command') "
        "AND record_id NOT IN (SELECT record_id FROM deletes) ORDER BY ts DESC NULLS LAST, seq DESC LIMIT 400",
        [sid]).fetchall()
    files: list[str] = []
    commands: list[str] = []
    for role, text in rows:
        if role == "files":
            for path in (text or "").splitlines():
                path = path.strip()
                if path and not path.startswith(_SCRATCH) and path not in files and len(files) < EVIDENCE_ITEMS:
                    files.append(path)
        else:
            if "\n" in (text or "").strip():
                continue
            cmd = command_of(text)[0].strip()
            if cmd and len(cmd) <= EVIDENCE_COMMAND and cmd not in commands \
                    and len(commands) < EVIDENCE_ITEMS:
                commands.append(cmd)
    if not files and not commands:
        return ""
    lines = ["This session before the compaction (a summary keeps its conclusions and drops these):"]
    if files:
        lines.append("files it touched: " + ", ".join(c.recall_line(p, 200) for p in files))
    if commands:
        lines.append("commands it ran:")
        lines += [f"- {c.recall_line(cmd, EVIDENCE_COMMAND + 8)}" for cmd in commands]
    return "\n".join(lines)


def accepted_notes(live, project: str, limit: int = 6) -> list[tuple[str, str]]:
    """The project's promoted notes whose text says they were accepted, newest first."""
    from deja.queries.project_memory import promoted_notes

    out = []
    for key, title, decision, text in promoted_notes(live, project):
        if not (_ACCEPTED.search(text) or _ACCEPTED.search(title or "")):
            continue
        body = decision or next((ln for ln in text.splitlines() if ln.strip() and not _ACCEPTED.search(ln)), "") or title
        out.append((key, c.recall_line(body, 300)))
        if len(out) >= limit:
            break
    return out


def working_tree_files(cwd: str, budget: float = 0.4) -> list[str]:
    """Basenames the repo is touching: `git status --porcelain`, then the last 3 commits."""
    if not cwd or not os.path.isdir(cwd):
        return []
    out: list[str] = []
    end = time.monotonic() + budget
    for args in (["status", "--porcelain"], ["log", "--name-only", "--format=", "-3"]):
        left = end - time.monotonic()
        if left <= 0 or len(out) >= 8:
            break
        try:
            proc = subprocess.run(["git", "-C", cwd, *args], capture_output=True, text=True, timeout=left,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            break
        if proc.returncode != 0:
            break
        for line in proc.stdout.splitlines():
            path = line[3:] if args[0] == "status" else line
            path = path.split(" -> ")[-1].strip().strip('"')
            base = os.path.basename(path).lower()
            if not base or "." not in base or base in _LOCKFILES or base in out:
                continue
            out.append(base)
            if len(out) >= 8:
                break
    return out


def run_precompact(payload: dict, out: c.Output, once: bool = False) -> None:
    """Keep a recovery packet of the live transcript, forget what this session
    was shown (compaction threw those blocks away), and ask for the usual
    background refresh so the turns about to be summarised are indexed."""
    env = os.environ
    sid = c.session_id(payload)
    root = c.index_root(env)
    if sid:
        c.Ledger(root, sid).forget()
    if c.recall_mode(env) != "off":
        try:
            from deja.hooks.packet.capture import capture

            capture(payload, root, env)
        except Exception:  # NoCapture, Busy, anything: a best-effort miss
            if env.get("DEJA_DEBUG"):
                import traceback

                traceback.print_exc()
    if env.get("DEJA_NO_REFRESH") != "1":
        from deja.stages.store.refresh import background_index  # (none while one runs)

        background_index(env)
    raise c.Silent("precompact prints nothing")
