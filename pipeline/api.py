"""The front door: deja as a Python library.

    import deja
    deja.index()
    hits = deja.search("connection pool", limit=5)["hits"]

The CLI (cli*.py), and the MCP and warm servers to come, are front ends over
these functions: each takes keyword arguments and an optional ``env`` (the
environment to read paths from; default ``os.environ``) and returns plain data
(what the matching ``deja … --json`` prints, where there is one). Nothing here
prints or exits. A problem a user can cause raises ``Fail`` (one line of text,
deja.pipeline.errors); ``NotFound`` says nothing matched.

``notice``: an optional callable given each line a person should see while it
works (the CLI writes them to stderr as they come); without it they are dropped.

Reading functions first bring the store up to date (appended turns are
searchable at once; heavier refreshes run in the background), then answer from
the live store. Imports stay inside the functions: a search must not pay for
the index run's modules, nor for typer.

Every answer leaves through ``shown_data`` (deja.stages.shown): its text under
today's redaction rules, whatever rules the store was built with. A front end
over these functions (the MCP server to come, an export) prints what they
return and needs no redaction of its own.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from deja.pipeline.access import (  # noqa: F401  (part of the door)
    Notice,
    as_deja_lines,
    check_harness,
    environ,
    open_store,
    refresh,
    reindex,
    run_index,
    since_ms,
    split_id,
    tell,
)
from deja.pipeline.errors import Fail, NotFound  # noqa: F401  (part of the door)
from deja.stages.shown import preload as preload_redaction, shown, shown_data
from deja.stages.store import config

if TYPE_CHECKING:  # (the answers' dataclasses live with their queries: dataclasses costs search ~7 ms to import)
    from deja.queries.show import Session
    from deja.queries.work_answers import Blame

ROLE_ERROR = "unknown role {!r} (user, assistant, tool, tool-output, files, command, edit, summary)"


def _words(query: str | Iterable[str]) -> str:
    return (query if isinstance(query, str) else " ".join(query)).strip()


# --------------------------------------------------------------------------- the store


def index(*, rebuild: bool = False, env: Mapping[str, str] | None = None,
          progress: Callable | None = None, notice: Notice = None, con=None, prune_gone: bool = False) -> dict:
    """Build or refresh the index; the summary `deja index --json` prints.

    ``progress(done, total, path)`` is called as files are read. Sessions whose
    transcripts the agent deleted are kept; ``prune_gone`` takes them out."""
    from deja.stages.store import duck

    env = environ(env)
    con = con or duck.connect()  # one DuckDB instance for the check and the run
    if not rebuild and not prune_gone:
        # nothing to do is the common case: answer it without loading the pipeline
        from deja.pipeline.fresh import pending
        from deja.stages.store.catalog import Store

        skipped: list[str] = []  # unreadable folders, dangling links: said on every run, not only busy ones
        try:
            state = pending(env, con, problems=skipped)
        except OSError:  # an index path that is a file, a folder we may not read: the run says which
            state = None
        from deja.stages.store.catalog import suspects

        root = config.index_dir(env)
        if (state is not None and not state[0] and state[2] and not Store(root).writer_running()
                and not suspects(root)):  # (a part a query could not read: the run decodes it whole)
            return {"schema_version": 2, "up_to_date": True, "sessions": state[1], "seconds": 0.0, "harnesses": [],
                    "errors": skipped}
    return run_index(rebuild=rebuild, env=env, progress=progress, notice=notice, con=con,
                     prune_gone=prune_gone).as_json()


def embed(*, rebuild: bool = False, env: Mapping[str, str] | None = None, progress: Callable | None = None,
          notice: Notice = None) -> dict:
    """Embed the speech records not yet embedded (`deja embed --json`'s summary).
    ``progress(done, total)`` is called as records are embedded."""
    from deja.pipeline.embed import run_embed

    return run_embed(environ(env), rebuild=rebuild, progress=progress, notice=as_deja_lines(notice))


# --------------------------------------------------------------------------- search


def search(query: str | Iterable[str], *, harness: str | None = None, project: str | None = None,
           since: str | None = None, role: str | None = None, limit: int = 15, show_all: bool = False,
           session: str | None = None, regex: bool = False, rebuild: bool = False,
           env: Mapping[str, str] | None = None, notice: Notice = None, embed: bool = True) -> dict:
    """Search every agent's history: the envelope `deja search --json` prints
    (``{schema_version, tier, total, capped?, hits}``). ``embed``: False leaves
    the store's vectors out (words only)."""
    from deja.queries.search import ROLE_ALIASES, ROLE_CODE, Query, search as run_search
    from deja.stages.store.read import Busy, Damaged, NoIndex, open_live

    text = _words(query)
    if not text:
        raise Fail("search needs a query")
    harness = check_harness(harness)
    if role and ROLE_ALIASES.get(role, role) not in ROLE_CODE:
        raise Fail(ROLE_ERROR.format(role))
    if not 1 <= limit <= 100:
        raise Fail("--limit takes a number from 1 to 100")
    cutoff = since_ms(since) if since else None
    if rebuild:  # the work in front of you, like `deja index --rebuild`
        from deja.pipeline.run import run_index as run
        from deja.stages.store.catalog import Busy as WriterBusy

        try:
            run(environ(env), rebuild=True, notice=as_deja_lines(notice))
        except WriterBusy as exc:
            raise Fail(f"{exc}; try again when it finishes")
    from deja.stages.store import duck

    if duck.warming():
        # DuckDB is still starting on its thread (which releases the GIL): load
        # what the ladder's spelling rung and the output need in time that would
        # otherwise be spent waiting
        import json  # noqa: F401
        import rapidfuzz.distance  # noqa: F401

        preload_redaction()
    # the freshness check lists the transcripts before it needs DuckDB (which
    # may still be warming up), and on a fresh store leaves the catalog
    # attached for the query
    attached = not rebuild and refresh(env, notice, keep_attached=True) == "fresh"
    con = duck.shared()  # one DuckDB instance for the freshness check and the query
    if session is not None:
        session = session.strip().strip("'\"`‘’“”")
        if not session:  # (quotes alone searched every session, as if no --session were given)
            raise Fail("--session needs a session's id or its first characters")
    q = Query(text, limit, show_all, harness, project, cutoff, role, session, regex, embed)
    for attempt in range(3):
        try:
            live = open_live(config.index_dir(env), con=con, attached=attached, records_view=False)
            attached = False  # (a retry attaches again)
        except (NoIndex, Damaged) as exc:
            raise Fail(str(exc))
        except Busy:
            raise Fail("the index is busy being written; try again in a moment")
        notes: list[str] = []

        def once():
            notes.clear()
            return run_search(live, q, notes)

        try:
            answer = live.tolerant(once)  # a damaged part: answered from the rest, said once below
            break
        except (ValueError, Damaged) as exc:
            raise Fail(str(exc))
        except duck.IOException:
            # a run committed between listing the live files and reading them, and
            # cleaned up what it replaced: list them again
            if attempt == 2:
                raise
            con = duck.connect()
        finally:
            live.close()
    if live.damage_notice():
        tell(notice, live.damage_notice())
    for n in notes:
        tell(notice, n)
    return shown_data(answer)


# --------------------------------------------------------------------------- sessions: last, show, ctx


def last(n: int = 10, *, harness: str | None = None, project: str | None = None, since: str | None = None,
         role: str | None = None, origin: str | None = None, extras: bool = False,
         env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """Recent sessions, newest first: ``{schema_version, sessions}`` as `deja last --json`.
    ``extras``: also ``_stored``, how many sessions the store holds when none matched."""
    from deja.queries import show as sh

    if n < 1:
        raise Fail("last takes a number of sessions ≥ 1")
    harness = check_harness(harness)
    if role and role not in sh.ROLE_COUNT:
        raise Fail(ROLE_ERROR.format(role))
    cutoff = since_ms(since) if since else None
    if origin and origin != "local":  # a peer's alias (deja sync) stands for the name it gives itself
        from deja.pipeline import sync

        try:
            row = sync.find_peer(sync.load_peers(env), origin)
        except Fail:
            row = None
        origin = (row or {}).get("name") or origin
    live = open_store(env, notice)
    try:
        sessions = sh.last(live, n, harness, project, cutoff, role, origin)
        stored = sh.session_count(live) if not sessions else len(sessions)
    finally:
        live.close()
    out = {"schema_version": 2, "sessions": sessions}
    if extras:
        out["_stored"] = stored
    return shown_data(out)


def session(ident: str, *, harness: str | None = None, offset: int | None = None, limit: int | None = None,
            exact: bool = False, work: bool = True, env: Mapping[str, str] | None = None,
            notice: Notice = None) -> Session:
    """A session by id or id prefix (``harness:id`` works), with a window of its
    messages; ``work``: commands, files and edits as compact lines too."""
    from deja.queries import show as sh

    harness = check_harness(harness)
    named, ident = split_id(ident)
    if named and harness and named != harness:
        raise Fail(f"the id names harness {named!r} but --harness is {harness!r}")
    harness = harness or named
    if exact:
        if not harness:
            raise Fail("show --json needs --harness <h> and the exact id (JSON names one session exactly)")
        limit = sh.JSON_LIMIT_DEFAULT if limit is None else limit
        if not 1 <= limit <= sh.JSON_LIMIT_MAX:
            raise Fail(f"--limit takes a number from 1 to {sh.JSON_LIMIT_MAX}")
    live = open_store(env, notice)
    try:
        res = sh.resolve(live, ident, harness, exact=exact)
        win = sh.window(live, res, offset or 0, limit, work=work)
        parent, children = sh.spawn_edges(live, res)
    except sh.ShowError as exc:
        raise Fail(str(exc))
    finally:
        live.close()
    if res.notice:  # what was picked when the prefix was ambiguous
        tell(notice, res.notice)
    return shown_data(sh.Session(res, win, parent, children))


def show(ident: str, *, harness: str | None = None, offset: int | None = None, limit: int | None = None,
         env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """One session's messages, as `deja show --json` (the exact id and its harness)."""
    return session(ident, harness=harness, offset=offset, limit=limit, exact=True, work=False, env=env,
                   notice=notice).as_json()


def ctx(query: str | Iterable[str], *, harness: str | None = None, env: Mapping[str, str] | None = None,
        notice: Notice = None) -> str:
    """Markdown digest of the best-matching session (problem, decisions, outcome)
    for a prompt or a session id, of ``harness``'s sessions when it is given.
    Raises NotFound when no session fits."""
    from deja.queries import session_brief as cx
    from deja.stages.sources import harnesses

    text = _words(query)
    if not text:
        raise Fail("ctx needs a query or a session id")
    live = open_store(env, notice)
    try:
        try:
            res, notes, nearest = cx.find(live, text, harnesses(), check_harness(harness))
            digest = cx.build(live, res, nearest)
        except cx.CtxNotFound as exc:
            raise NotFound(str(exc))
        except ValueError as exc:
            raise Fail(str(exc))
    finally:
        live.close()
    for n in notes:
        tell(notice, n)
    return shown(digest)


# --------------------------------------------------------------------------- the work: blame, files, how, fix, friction


def blame(target: str, *, show_all: bool = False, project: str | None = None, harness: str | None = None,
          since: str | None = None, cwd: str | None = None, env: Mapping[str, str] | None = None,
          notice: Notice = None) -> Blame:
    """Sessions that discussed a file, most specific first; PATH:LINE first names
    the session that changed that line (git blame + the session's edit)."""
    from deja.queries import work_answers as work
    from deja.queries.session_obj import session_object

    check_harness(harness)
    cutoff = since_ms(since) if since else None
    t = work.resolve_target(target, cwd or os.getcwd())
    if not t.base:
        raise Fail("blame needs a file path")
    live = open_store(env, notice)
    try:
        answer = work.blame_line(live, t, harness, project) if t.line is not None else None
        rows = work.blame(live, t, harness, project, cutoff, None if show_all else work.BLAME_LIMIT + 1)
    finally:
        live.close()
    capped = not show_all and len(rows) > work.BLAME_LIMIT
    rows = rows if show_all else rows[: work.BLAME_LIMIT]
    if answer is not None and answer.attributed:
        sid = answer.session["session_id"]
        rows = [r for r in rows if r["session"]["id"] != sid]
        line_row = {"session": session_object(answer.session), "title": answer.session.get("title") or "",
                    "count": 1, "snippets": [], "score": 0.0, "tier": "line", "line": t.line, "commit": answer.commit,
                    "span": answer.span}
        # no decision here: a session's conclusion is not the reason for one line it changed
        rows = [line_row] + rows
    return shown_data(work.Blame(t.shown, rows, answer, capped))


def files(topic: str | Iterable[str], *, project: str | None = None, limit: int = 10,
          env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """The files touched while a topic was worked on: ``{files: [{path, sessions,
    last, …}], tier}`` (tier ``relevance``: no session held every word)."""
    from deja.queries import work_answers as work

    text = _words(topic)
    if not text:
        raise Fail("files needs a topic")
    if limit < 1:
        raise Fail("--limit takes a number ≥ 1")
    live = open_store(env, notice)
    try:
        try:
            rows, tier = work.files(live, text, project, limit)
        except ValueError as exc:
            raise Fail(str(exc))
    finally:
        live.close()
    return shown_data({"files": rows, "tier": tier})


def how(what: str | Iterable[str], *, project: str | None = None, limit: int = 8,
        env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """Real invocations of a tool on this machine, most used and successful first:
    ``{words, commands: [{command, exit, runs, sessions, last}]}``."""
    from deja.queries import work_answers as work

    words = work.how_words([what] if isinstance(what, str) else list(what))
    if not words:
        raise Fail("how needs a word the command should contain")
    if limit < 1:
        raise Fail("--limit takes a number ≥ 1")
    live = open_store(env, notice)
    try:
        rows = work.how(live, words, project, limit)
    finally:
        live.close()
    return shown_data({"words": words, "commands": rows})


def fix(error: str, *, limit: int = 3, env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """What was run after the same error before, where it did not come back:
    ``{status, fixes: [{error, date, command, session, …}]}``; status ``not-error``
    when the text does not read like an error line."""
    from deja.queries import work_answers as work

    if not error.strip():
        raise Fail("fix needs the error text")
    if limit < 1:
        raise Fail("--limit takes a number ≥ 1")
    live = open_store(env, notice)
    try:
        ans = work.fix(live, error, limit)
    finally:
        live.close()
    return shown_data({"status": ans.status, "fixes": ans.rows})


def friction(*, limit: int = 10, env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """Errors that recur across sessions: ``{errors: [...], sessions_with_output, min_sessions}``."""
    from deja.queries import work_answers as work

    if limit < 1:
        raise Fail("--limit takes a number ≥ 1")
    live = open_store(env, notice)
    try:
        res = work.friction(live, limit)
    finally:
        live.close()
    return shown_data({"errors": res.rows, "sessions_with_output": res.sessions_with_output,
                       "min_sessions": work.FRICTION_MIN_SESSIONS})


# --------------------------------------------------------------------------- curating memory


def remember(text: str | Iterable[str], *, project: str | None = None, tags: Iterable[str] | None = None,
             cwd: str | None = None, reindex_now: bool = True, env: Mapping[str, str] | None = None,
             notice: Notice = None) -> dict:
    """Append a durable note to notes.jsonl (and index it): ``{session, project, path}``."""
    from deja.pipeline import curate

    return curate.remember(_words(text), project, tags, cwd, reindex_now, environ(env), notice)


def promote(ident: str, *, state: str = "accepted", note: str | None = None, tags: Iterable[str] | None = None,
            to: str | os.PathLike | None = None, harness: str | None = None, reindex_now: bool = True,
            env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """Distil a session into a curated note with provenance and a lifecycle state:
    ``{session, state, note}``; ``to``: also append a Markdown block to that file."""
    from deja.pipeline import curate

    return curate.promote(ident, state, note, tags, to, harness, reindex_now, environ(env), notice)


def forget(*, session: str | None = None, project: str | None = None, before: str | None = None,
           all_matches: bool = False, dry_run: bool = False, env: Mapping[str, str] | None = None,
           notice: Notice = None) -> dict:
    """Remove sessions (and compaction-recovery packets) from the index and write
    tombstones so re-indexing cannot bring them back: ``{sessions, packets}``
    (what was, or with ``dry_run`` would be, forgotten)."""
    from deja.pipeline import curate

    plan = curate.forget_plan(session, project, before, all_matches, environ(env), notice)
    if not dry_run:
        curate.forget_apply(plan, curate.forget_reason(session, project, before), environ(env), notice)
    return plan


def tombstones(*, env: Mapping[str, str] | None = None) -> list[dict]:
    """The forgotten sessions: ``[{session, project, created, reason}]``."""
    from deja.pipeline import curate

    return curate.tombstones(environ(env))


def unforget(key: str, *, reindex_now: bool = True, env: Mapping[str, str] | None = None,
             notice: Notice = None) -> str:
    """Lift one tombstone (``harness:id``); the harness's store is read again."""
    from deja.pipeline import curate

    return curate.unforget(key, reindex_now, environ(env), notice)


# --------------------------------------------------------------------------- looking at it whole


def stats(*, harness: str | None = None, project: str | None = None, since: str | None = None,
          extras: bool = False, timeline: bool = False, env: Mapping[str, str] | None = None,
          notice: Notice = None) -> dict:
    """What the memory holds, as `deja stats --json`. ``extras``: also the
    text-mode numbers (``_days``, ``_commands``, ``_files``); ``timeline``: also
    ``_timeline``, the sessions counted, newest first (for the HTML page)."""
    from deja.queries import stats as qs

    check_harness(harness)
    cutoff = since_ms(since) if since else None
    live = open_store(env, notice)
    try:
        st = qs.collect_stats(live, harness, project, cutoff, _usage_rows(live.root), _recovery_summary(live.root))
        if timeline:
            st["_timeline"] = qs.timeline(live)
    finally:
        live.close()
    return shown_data(st if extras or timeline else qs.public_stats(st))


def redactions(*, env: Mapping[str, str] | None = None) -> dict:
    """`deja stats --redaction`: what the redactor took out at index time, per
    kind and harness, from the catalog's per-file counts (manifest.redactions)."""
    import json

    from deja.stages.store.catalog import Busy, CatalogUnreadable, Store

    store = Store(config.index_dir(environ(env)))
    if not store.exists():
        raise Fail("no index yet; run `deja index`")
    try:
        con = store.connect(read_only=True, retries=20)
    except Busy:
        raise Fail("the index is busy being written; try again in a moment")
    except CatalogUnreadable as exc:
        raise Fail(f"the index catalog cannot be read ({exc}); run `deja index` to rebuild it")
    try:
        rows = con.execute("SELECT harness, redactions FROM manifest WHERE redaction_total > 0").fetchall()
    finally:
        con.close()
    by_harness: dict[str, dict[str, int]] = {}
    for harness, raw in rows:
        try:
            counts = json.loads(raw or "{}")
        except ValueError:
            continue
        mine = by_harness.setdefault(harness, {})
        for kind, n in counts.items():
            mine[kind] = mine.get(kind, 0) + int(n)
    by_kind: dict[str, int] = {}
    for counts in by_harness.values():
        for kind, n in counts.items():
            by_kind[kind] = by_kind.get(kind, 0) + n
    return {"schema_version": 2, "total": sum(by_kind.values()),
            "by_kind": dict(sorted(by_kind.items(), key=lambda kv: (-kv[1], kv[0]))),
            "by_harness": {h: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) for h, c in sorted(by_harness.items())}}


def _usage_rows(root) -> list[tuple]:
    """(t, kind, bytes, sessions, empty) from the hooks' bounded usage log
    (``<index>.usage``, hooks/packet/metric.py)."""
    from datetime import datetime

    from deja.hooks.packet import metric

    rows = []
    for ev in metric.events(root, ("recall", "mcp", "inject", "dejavu", "handoff")):
        try:
            t = datetime.strptime(str(ev.get("t", ""))[:19], "%Y-%m-%dT%H:%M:%S")
        except ValueError:
            continue
        keys = [k for k in str(ev.get("sessions") or "").split() if k]
        rows.append((t, ev.get("kind"), int(ev.get("bytes") or 0), keys, not ev.get("n")))
    return rows


def _recovery_summary(root) -> dict:
    """Seed 000: raw tool calls between a capture and the first editing tool."""
    from deja.hooks.packet import metric

    metric.settle_pending(root)
    return metric.summary(root)


def view_sessions(*, env: Mapping[str, str] | None = None, notice: Notice = None) -> list[dict]:
    """Every session with its first messages, newest first (what `deja view` draws)."""
    from deja.queries import stats as qs

    live = open_store(env, notice)
    try:
        return shown_data(qs.view_sessions(live))
    finally:
        live.close()


def doctor(*, env: Mapping[str, str] | None = None) -> dict:
    """Each agent store, what the index holds, unreadable files, the store's size."""
    from deja.pipeline.doctor import report

    return report(environ(env))


# --------------------------------------------------------------------------- handing a session on: resume, handoff, restore, share


def _resolve(ident: str, harness: str | None, env, notice):
    """The session an id names, as `deja show` resolves it (a prefix, ``harness:id``)."""
    from deja.queries import show as sh

    harness = check_harness(harness)
    named, ident = split_id(ident)
    if named and harness and named != harness:
        raise Fail(f"the id names harness {named!r} but --harness is {harness!r}")
    live = open_store(env, notice)
    try:
        res = sh.resolve(live, ident, harness or named)
    except sh.ShowError as exc:
        live.close()
        raise Fail(str(exc))
    if res.notice:
        tell(notice, res.notice)
    return live, res


def resume(ident: str, *, harness: str | None = None, env: Mapping[str, str] | None = None,
           notice: Notice = None) -> dict:
    """How to reopen a session in its own agent and folder: ``{harness, id, cwd,
    command, argv, shell}`` (the native resume command; `deja resume` runs it).
    A session its agent cannot reopen raises ``Fail`` saying why."""
    from deja.pipeline.handover import resume_plan

    live, res = _resolve(ident, harness, env, notice)
    live.close()
    return resume_plan(res.row)


def handoff(to: str, ident: str | None = None, *, harness: str | None = None, cwd: str | None = None,
            budget: int | None = None, write: bool = True, env: Mapping[str, str] | None = None,
            notice: Notice = None) -> dict:
    """A session's working state (the crash-recovery digest), packed as the first
    prompt of another agent: ``{from: {harness, id, cwd}, to, prompt, file,
    command}``. The session is ``ident`` (an id or prefix: in ``cwd``, else from
    anywhere through the index) or the one last active in ``cwd``; read from its
    transcript, no index needed for this folder's sessions. ``write``: the prompt
    goes to a file under ``<index>.handoff/`` and ``command`` reads it; else
    ``file`` is None and ``command`` runs `deja handoff --print`."""
    from deja.pipeline import handover
    from deja.queries import recover as rc

    prefix = handover.check_target(to)
    to = to.strip().lower()
    env = environ(env)
    budget = rc.DEFAULT_BUDGET if budget is None else budget
    if budget < rc.MIN_BUDGET:
        raise Fail(f"--budget takes at least {rc.MIN_BUDGET} characters")
    where = rc.resolve_cwd(cwd)
    try:
        named, ident = split_id(ident) if ident else (None, ident)
        harness = check_harness(harness) or named
        if ident:
            try:
                cand, mod, said = rc.resolve_session(ident, where, env, harness)
            except rc.RecoverError:
                # An explicit id names its session from any folder, as show and resume
                # resolve it: the index says where it ran, its transcript is read there.
                ran = _ran_in(ident, harness, env, notice)
                if ran is None:
                    raise
                cand, mod, said = rc.resolve_session(ran["session_id"], ran["cwd"], env, ran["harness"])
            if said:
                tell(notice, said)
            state = mod.recover_state(cand.path, cand.session_id)
        else:
            found, _ = rc.scan(where, env, harness)
            state = None
            for cand, mod in found:  # the most recently active with a conversation in it
                try:
                    state = mod.recover_state(cand.path, cand.session_id)
                except Exception:  # an unreadable transcript costs that transcript
                    continue
                if state.messages:
                    break
                state = None
            if state is None:
                raise Fail(f"no session with a conversation is recorded for {where}; "
                           "pass its id, or --cwd the folder it ran in")
    except rc.RecoverError as exc:
        raise Fail(str(exc))
    prompt = shown(handover.handoff_prompt(state, rc.build_digest(state, budget).text, to))
    source = {"harness": state.harness, "id": state.session_id, "cwd": state.cwd or where}
    if write:
        file = handover.write_handoff(prompt, f"{state.harness}-{state.session_id}-to-{to}.md", env)
        command = handover.handoff_command(prefix, "cat " + _quote(file), source["cwd"])
    else:
        file = None
        command = handover.handoff_command(
            prefix, f"deja handoff --to {to} --print {_quote(state.harness + ':' + state.session_id)}", source["cwd"])
    # the usage log's `handoff` event (ids and counts only): `deja stats` counts them
    from deja.hooks.packet import metric

    metric.log(config.index_dir(env), "handoff", bytes=len(prompt.encode("utf-8")), n=1,
               sessions=f"{state.harness}:{state.session_id}", to=to)
    return {"from": source, "to": to, "prompt": prompt, "file": file, "command": command}


def _ran_in(ident: str, harness: str | None, env, notice) -> dict | None:
    """{session_id, harness, cwd} of the indexed session ``ident`` names; None
    when the index does not know it (or there is no index)."""
    try:
        live, res = _resolve(ident, harness, env, notice)
    except Fail:
        return None
    live.close()
    row = res.row
    cwd = row.get("cwd") or row.get("project_root") or ""
    return {"session_id": row["session_id"], "harness": row["harness"], "cwd": cwd} if cwd else None


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


def restore(path: str, *, edit: int | None = None, out: str | os.PathLike | None = None, cwd: str | None = None,
            env: Mapping[str, str] | None = None, notice: Notice = None) -> dict:
    """The spans agents' edits replaced in a file, newest first: ``{file, path,
    edits: [{n, path, time, session, lines, chars, redacted, text}]}``. ``edit``:
    only that one (1 = newest); ``out``: its text written to that new file (an
    existing file, the original above all, is never written over)."""
    from deja.pipeline.handover import write_new
    from deja.queries import restore as rs
    from deja.queries.blame import resolve_target

    t = resolve_target(path, cwd or os.getcwd())
    t.line = None  # restore names a file; `x.py:12` is a file named so, or nothing
    if not t.base:
        raise Fail("restore needs a file path")
    if out is not None and edit is None:
        raise Fail("-o needs --edit N (which edit's old text to write)")
    live = open_store(env, notice)
    try:
        found = rs.edits(live, t)
    finally:
        live.close()
    answer = {"file": t.shown, "path": t.path, "edits": found}
    if edit is not None:
        if not found:
            raise Fail(f"no recorded edit replaced text in {t.shown}")
        if not 1 <= edit <= len(found):
            raise Fail(f"--edit takes a number from 1 to {len(found)} (the edits to {t.shown}, newest first)")
        answer["edits"] = [found[edit - 1]]
    answer = shown_data(answer)
    for e in answer["edits"]:  # a secret today's rules took out on the way is flagged too
        e["redacted"] = rs.REDACTED_MARK in e["text"]
    if out is not None:
        target = os.path.abspath(os.path.expanduser(os.fspath(out)))
        if t.path.startswith("/") and os.path.normpath(target) == t.path:
            raise Fail(f"{out} is the file itself; restore never writes over the original")
        write_new(target, answer["edits"][0]["text"])
        answer["written"] = target
    return answer


SHARE_BUDGET = 24_000  # bytes: a digest a colleague reads, not a transcript


def share(ident: str, *, harness: str | None = None, env: Mapping[str, str] | None = None,
          notice: Notice = None) -> str:
    """A session as markdown for a colleague: title, project, dates, the
    conversation condensed, decisions, outcome, commands and files. Redacted
    again on the way out, and the home folder written as ``~``."""
    from deja.queries import session_brief as cx

    live, res = _resolve(ident, harness, env, notice)
    try:
        md = cx.build(live, res, budget=SHARE_BUDGET, conversation=True)
    finally:
        live.close()
    home = str(config.home(environ(env))).rstrip("/")
    if len(home) > 1:
        md = md.replace(home + "/", "~/")
    return shown(md.rstrip("\n") + "\n\n---\n_Shared from deja: secrets were redacted; read it over before sending._\n")
