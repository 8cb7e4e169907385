"""PreToolUse — `deja hook-tool`, and PostToolUse — `deja hook-tool-after`.

hooks-contract §5.5; seed "hook-tool" / "hook-tool-after".

Before a tool runs: one line about the file's or the command's history,
deduplicated per agent session. How much history it waits for depends on what
it has to say: a bare count of sessions needs five, a decision stands from the
second session, a program this machine has never had is named from two
sightings, and an accepted promoted note is the project's standing decision.
A fact already given this session yields to the next one it can offer — for a
command, the missing program, then the failure it hit here — and only those.

After a command fails: the error seen before and what followed it without
failing, in two lines and 420 bytes at most.
"""

from __future__ import annotations

import os
import re
import shutil

from . import common as c

LINE_BUDGET = 480
AFTER_BUDGET = 420
COUNT_NEEDS = 5
DECISION_NEEDS = 2
MISSING_NEEDS = 2
FILE_TOOLS = {"edit", "write", "multiedit", "notebookedit", "read"}
COMMAND_TOOLS = {"bash", "shell", "exec_command", "local_shell", "run_shell_command"}
_ERROR = re.compile(
    r"error|exception|traceback|failed|failure|panic|fatal|cannot|can't|undefined|not found|refused|denied|"
    r"timed? ?out|segmentation|ERR!|errno|abort|no such|permission|exit code [1-9]|exit status [1-9]",
    re.I,
)


# --------------------------------------------------------------------------- payload


def command_of(payload: dict) -> str:
    ti = payload.get("tool_input")
    if isinstance(ti, dict):
        cmd = ti.get("command") if ti.get("command") is not None else ti.get("cmd")
        if isinstance(cmd, list):
            cmd = " ".join(str(x) for x in cmd)
        return cmd if isinstance(cmd, str) else ""
    return ti if isinstance(ti, str) else ""


def target_of(payload: dict) -> tuple[str, str]:
    """("command", text) or ("file", path) or ("", "")."""
    tool = str(payload.get("tool_name") or "")
    low = tool.lower()
    ti = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    if low == "apply_patch" or (low in COMMAND_TOOLS and command_of(payload).lstrip().startswith("*** Begin Patch")):
        from deja.stages.work_records import parse_patch

        files = parse_patch(command_of(payload) or str(ti.get("patch") or ""), payload.get("cwd") or "")
        return ("file", files[0][0]) if files else ("", "")
    if low in COMMAND_TOOLS:
        return "command", command_of(payload)
    if low in FILE_TOOLS:
        path = ti.get("file_path") or ti.get("notebook_path") or ti.get("path") or ti.get("filePath") or ""
        return ("file", path) if isinstance(path, str) else ("", "")
    return "", ""


def normalise(command: str) -> str:
    first = command.strip().splitlines()[0] if command.strip() else ""
    first = first.strip()
    if first.startswith("$ "):
        first = first[2:]
    return " ".join(first.lower().split())


def is_inspection(command: str) -> bool:
    """A command that only looks (``ls``, ``git log``, ``cat x | grep y``): the
    shared rule of stages/work_records, which ``fix`` uses too."""
    from deja.stages.work_records import inspects

    return inspects(command)


# --------------------------------------------------------------------------- before


def run(payload: dict, out: c.Output, once: bool = False) -> None:
    kind, what = target_of(payload)
    if not what or not what.strip():
        raise c.Silent("no target")
    if kind == "command" and is_inspection(normalise(what)):
        raise c.Silent("inspection command")
    env = os.environ
    sid = c.session_id(payload)
    cwd = c.project_cwd(payload, env)
    if not may_say(kind, what, cwd, env):
        raise c.Silent("no history")
    project = c.project_name(cwd)
    ledger = c.Ledger(c.index_root(env), sid)
    live = c.open_warm(env)
    try:
        producers = command_facts(live, what, project) if kind == "command" else file_facts(live, what, cwd, project)
        line = None
        for produce in producers:  # a fact already given yields to the next one
            candidate = produce()
            if not candidate:
                continue
            candidate = c.fit_lines([candidate], LINE_BUDGET)
            if ledger.has("tool:" + c.fingerprint(candidate)):
                continue
            line = candidate
            break
    finally:
        live.close()
    if not line:
        raise c.Silent("nothing to say")
    out.emit("PreToolUse", line)
    ledger.add("tool:" + c.fingerprint(line))


def may_say(kind: str, what: str, cwd: str, env) -> bool:
    """False when the store has no history this hook could name, known from
    the history map (stages/store/history_map.py) without DuckDB: the common
    case, a command or a file never seen, costs a small read. True when the
    map is missing or out of date."""
    from deja.stages.store import history_map

    known = history_map.load(c.index_root(env))
    if known is None:
        return True
    if kind == "command":
        norm = normalise(what)
        from deja.stages.work_records import program_of

        return known.may_have_command(norm) or could_be_missing(program_of(norm))
    return known.notes or known.may_have_file(os.path.basename(_absolute(what, cwd)))


def _absolute(path: str, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, path)) if not os.path.isabs(path) and cwd else path


def could_be_missing(prog: str) -> bool:
    """A program name this machine does not have (missing_program may name it)."""
    return bool(prog) and bool(re.fullmatch(r"[\w.+-]+", prog)) and not shutil.which(prog)


def command_facts(live, command: str, project: str):
    from deja.stages.work_records import program_of

    norm = normalise(command)
    prog = program_of(norm)
    from deja.queries.tool_memory import past_runs

    runs = _memo(lambda: past_runs(live, norm))
    return [lambda: command_history(live, norm, runs()), lambda: missing_program(live, prog),
            lambda: failure_here(live, norm, project, runs())]


def _memo(fn):
    box: list = []

    def get():
        if not box:
            box.append(fn())
        return box[0]
    return get


def command_history(live, norm: str, runs: list[tuple]) -> str:
    """"This machine has run that command in N sessions, last DATE — last time: <decision>"."""
    last: dict[str, object] = {}
    for key, _, _, ts, _, _ in runs:  # newest first
        last.setdefault(key, ts)
    rows = list(last.items())
    n = len(rows)
    if n < DECISION_NEEDS:
        return ""
    from deja.queries.tool_memory import latest_decision

    decision = latest_decision(live, [r[0] for r in rows])
    if not decision and n < COUNT_NEEDS:
        return ""
    shown = c.recall_line(norm, 100)
    line = f"This machine has run `{shown}` in {n} sessions, last {c.day(rows[0][1])}"
    if decision:
        line += f" — last time: {c.recall_line(decision, 220)}"
    return line


def missing_program(live, prog: str) -> str:
    """A program this machine has never had, named from two sightings."""
    if not could_be_missing(prog):
        return ""
    from deja.queries.tool_memory import not_found_sightings

    n, last = not_found_sightings(live, prog)
    if n < MISSING_NEEDS:
        return ""
    return (f"`{prog}` is not installed on this machine: agents hit \"{prog}: command not found\" in {n} sessions, "
            f"last {c.day(last)}")


def failure_here(live, norm: str, project: str, runs: list[tuple]) -> str:
    """The failure that command hit last time in this project."""
    if not project:
        return ""
    failed_prefix = "$ " + norm + "  → exit"
    row = next((r for r in runs if r[4] == project and r[2].lower().startswith(failed_prefix)), None)
    if not row:
        return ""
    from deja.queries.tool_memory import output_after

    err = _error_line(output_after(live, row[0], row[1], row[5]))
    code = row[2].rsplit("→", 1)[-1].strip()
    return f"Last time here (`{c.recall_line(norm, 80)}`, {c.day(row[3])}) it failed with {code}" + \
        (f": {c.recall_line(err, 200)}" if err else "")


def file_facts(live, path: str, cwd: str, project: str):
    return [lambda: standing_note(live, path, project), lambda: file_history(live, path, cwd, project)]


def file_history(live, path: str, cwd: str, project: str) -> str:
    path = _absolute(path, cwd)
    base = os.path.basename(path)
    if not base:
        return ""
    from deja.queries.tool_memory import file_sessions

    rows = file_sessions(live, path, project)
    n = len(rows)
    if n < DECISION_NEEDS:
        return ""
    decision = next((d for _, _, d, g in rows[:3] if d and not g), "")
    shown = os.path.relpath(path, cwd) if cwd and path.startswith(cwd.rstrip("/") + "/") else path
    if decision:
        return (f"{shown} has been worked on in {n} sessions, last {c.day(rows[0][1])} — "
                f"prior decision: {c.recall_line(decision, 200)}")
    if n < COUNT_NEEDS:
        return ""
    return f"{shown} has been worked on in {n} sessions, last {c.day(rows[0][1])} — see `deja blame {shown}`"


def standing_note(live, path: str, project: str) -> str:
    if not project:
        return ""
    from .context import accepted_notes

    base = os.path.basename(path).lower()
    for _, text in accepted_notes(live, project):
        if base and base in text.lower():
            return f"Standing decision for this project (accepted note): {text}"
    return ""


def _error_line(text: str) -> str:
    for ln in (text or "").splitlines():
        if _ERROR.search(ln) and not ln.strip().lower().startswith("exit code"):
            return ln.strip()
    return ""


# --------------------------------------------------------------------------- after


def failed(payload: dict) -> tuple[bool, str]:
    """(did the command fail, its error text): the harness's exit status where it
    reports one, otherwise the output by the friction rule (an error line in
    stderr, or an error-marked result)."""
    resp = payload.get("tool_response")
    code = None
    text = ""
    if isinstance(resp, dict):
        for k in ("exit_code", "exitCode", "returncode", "status_code"):
            if isinstance(resp.get(k), int) and not isinstance(resp.get(k), bool):
                code = resp[k]
                break
        stderr = resp.get("stderr") if isinstance(resp.get("stderr"), str) else ""
        stdout = resp.get("stdout") if isinstance(resp.get("stdout"), str) else ""
        output = resp.get("output") if isinstance(resp.get("output"), str) else ""
        text = "\n".join(x for x in (stderr, stdout, output) if x)
        if code is None and (resp.get("is_error") is True or resp.get("isError") is True):
            code = 1
        if code is None:
            m = re.search(r"(?:exit code|exit status|Process exited with code)\s*(-?\d+)", text, re.I)
            if m:
                code = int(m.group(1))
        if code is None and _first_failure(text):
            code = 1
    elif isinstance(resp, str):
        text = resp
        m = re.search(r"(?:exit code|exit status|Process exited with code)\s*(-?\d+)", text, re.I)
        code = int(m.group(1)) if m else (1 if re.match(r"\s*(error|fatal)", text, re.I) else None)
    return bool(code and code > 0), text


def error_words(err: str) -> list[str]:
    """The first five distinct words of an error line (filler left out), without
    the numbers, ids and paths that change."""
    from deja.queries.search import FILLER

    words = []
    for w in re.findall(r"[A-Za-z][A-Za-z_'-]{2,}", err):
        lw = w.lower()
        if lw in FILLER or lw in words:
            continue
        words.append(lw)
    return words[:5]


def run_after(payload: dict, out: c.Output, once: bool = False) -> None:
    tool = str(payload.get("tool_name") or "").lower()
    if tool not in COMMAND_TOOLS:
        raise c.Silent("not a command")
    bad, text = failed(payload)
    if not bad:
        raise c.Silent("it worked")
    err = _first_failure(text) or next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    words = error_words(err)
    if len(words) < 2:
        raise c.Silent("too few error words")
    env = os.environ
    sid = c.session_id(payload)
    ledger = c.Ledger(c.index_root(env), sid)
    live = c.open_warm(env)
    try:
        pair = error_fix_pair(live, words, sid, err)
    finally:
        live.close()
    if not pair:
        raise c.Silent("no pair on file")
    seen_err, fix, when = pair
    lines = [f"Seen before ({c.day(when)}): {c.recall_line(seen_err, 160)}",
             f"What followed without failing: {c.recall_line(fix, 160)}"]
    body = c.fit_lines(lines, AFTER_BUDGET)
    token = "tool:" + c.fingerprint(body)
    if ledger.has(token):
        raise c.Silent("already given")
    out.emit("PostToolUse", body)
    ledger.add(token)


def error_fix_pair(live, words: list[str], sid: str, err: str = ""):
    """(error text, the command that followed it and succeeded, when), newest first.

    With ``deja.stages.failures`` present, "the same error" means the same
    failure signature (numbers, ids and directories masked), as deja friction
    counts it; otherwise the error's words must all appear.
    """
    from deja.queries.tool_memory import failures_with_fix

    rows = failures_with_fix(live, words[:4], sid)
    key = _sig_key(err)
    for text, fix, ts in rows:
        if key is not None:
            lines = _failures_of(text)
            match = next((ln for ln in lines if _sig_key(ln) == key), None)
            if match is None:
                continue
            return match, fix, ts
        return _error_line(text) or text, fix, ts
    return None


def _sig_key(line: str):
    try:
        from deja.stages import failures
    except ImportError:
        return None
    f = failures.failure_line(line or "")
    return failures.signature_key(f) if f else None


def _failures_of(text: str) -> list[str]:
    from deja.stages import failures

    return failures.failure_lines(text or "")


def _first_failure(text: str) -> str:
    """The first failure line by the rule ``fix`` and ``friction`` use (stages/failures)."""
    from deja.stages import failures

    return failures.first_failure(text or "") or ""
