"""The warm server (`deja serve`, pipeline/serve.py) and its thin client
(pipeline/serve_client.py), across real processes: started on demand by the
first hook or search, answering the next ones with the in-process bytes,
private to its user, gone when idle, replaced when stale or dead, and never
in a hook's way (a hung or babbling server means the in-process answer)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

S1 = "5a1f0c2e-1111-4000-8000-00000000aaaa"
S2 = "5a1f0c2e-2222-4000-8000-00000000bbbb"
CWD = "/home/dev/src/shop"


def _status(home: Home) -> dict | None:
    code = ("import json, os\nfrom deja.pipeline import serve_client\n"
            "print(json.dumps(serve_client.status()))")
    proc = subprocess.run([_python(), "-c", code], env=dict(home.env), capture_output=True, text=True, timeout=30)
    return json.loads(proc.stdout or "null")


def _python() -> str:
    return str(Path(deja_cmd()[0]).parent / "python") if Path(deja_cmd()[0]).name == "deja" else deja_cmd()[0]


def _socket(home: Home) -> Path:
    code = "from deja.pipeline import serve_client\nprint(serve_client.socket_path())"
    return Path(subprocess.run([_python(), "-c", code], env=dict(home.env), capture_output=True, text=True,
                               timeout=30).stdout.strip())


def _wait(cond, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return False


def _run(home: Home, *args: str, stdin: str | None = None, **env) -> subprocess.CompletedProcess:
    if stdin is None:
        return subprocess.run(deja_cmd() + list(args), env=dict(home.env, **env), capture_output=True,
                              text=True, timeout=120, cwd=home.home)
    # a payload from a file: all there when the hook looks (through a pipe, a loaded machine
    # could keep the test from writing it within the hooks' 0.3 s stdin deadline)
    import tempfile

    with tempfile.TemporaryFile("w+") as fh:
        fh.write(stdin)
        fh.seek(0)
        return subprocess.run(deja_cmd() + list(args), stdin=fh, env=dict(home.env, **env), capture_output=True,
                              text=True, timeout=120, cwd=home.home)


def _stop(home: Home) -> None:
    got = _status(home)
    if got:
        try:
            os.kill(got["pid"], signal.SIGTERM)
        except OSError:
            pass
        _wait(lambda: not _alive(got["pid"]), 10)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie (its parent, the test's detached spawn, gone) is not alive
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture
def served(home):
    """An indexed store whose deja may use a server (torn down after the test)."""
    write_jsonl(home.claude_file(S1, CWD), [
        claude_user(S1, "checkout returns 500 when the connection pool is exhausted", "2026-03-02T10:00:00Z", "u1", cwd=CWD),
        claude_assistant(S1, [{"type": "text", "text": "The fix: raise pool_size to 20 in db/session.py; the root "
                                                      "cause was a leaked session in the retry loop."}],
                         "2026-03-02T10:01:00Z", "a1", cwd=CWD),
    ])
    write_jsonl(home.claude_file(S2, CWD), [
        claude_user(S2, "the zebra cache warms too slowly after deploys", "2026-03-05T10:00:00Z", "u2", cwd=CWD),
        claude_assistant(S2, [{"type": "text", "text": "Warm it from the access log instead of the sitemap."}],
                         "2026-03-05T10:01:00Z", "a2", cwd=CWD),
    ])
    home.run("index")
    home.env.update({"DEJA_SERVE": "on", "DEJA_SERVE_IDLE": "60", "XDG_RUNTIME_DIR": ""})
    yield home
    _stop(home)


def _started(home: Home) -> dict:
    assert _wait(lambda: _status(home) is not None), "no server started"
    return _status(home)


PROMPT = json.dumps({"session_id": "$live", "cwd": CWD, "hook_event_name": "UserPromptSubmit",
                     "prompt": "why is checkout returning 500 when the connection pool is exhausted?"})
TOOL = json.dumps({"session_id": "$live", "cwd": CWD, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "pytest -q"}, "tool_use_id": "t1"})
CONTEXT = json.dumps({"session_id": "$live", "cwd": CWD, "hook_event_name": "SessionStart", "source": "startup"})
CASES = [
    (("search", "--json", "connection", "pool"), None),
    (("search", "connection", "pool"), None),
    (("zebra", "cache"), None),  # bare words
    (("search", "--json", "nothing", "matches", "this"), None),
    (("last", "--json"), None),
    (("show", S1[:8]), None),
    (("show", "no-such-session"), None),  # an error: one line, status 1, the same
    (("ctx", "--json"), None),
    (("blame", "db/session.py"), None),
    (("how", "pool"), None),
    (("fix", "connection pool exhausted"), None),
    (("hook-prompt",), PROMPT),
    (("hook-tool",), TOOL),
    (("hook-context",), CONTEXT),
    (("hook-prompt",), "{not json"),
]


def test_the_server_answers_every_hook_and_command_as_in_process(served):
    home = served
    first = _run(home, "search", "--json", "connection", "pool")  # no server yet: in-process, and one starts
    assert first.returncode == 0 and json.loads(first.stdout)["hits"]
    for args, stdin in CASES:  # what a hook says once per machine (a first-run note) is said here
        if stdin:
            _run(home, *args, stdin=stdin.replace("$live", "warm"), DEJA_SERVE="off")
    before = _started(home)["requests"]
    for i, (args, stdin) in enumerate(CASES):
        # a hook remembers what it told a session (a prompt cools down): each run its own live session
        off = _run(home, *args, stdin=stdin and stdin.replace("$live", f"off-{i}"), DEJA_SERVE="off")
        on = _run(home, *args, stdin=stdin and stdin.replace("$live", f"on-{i}"))
        assert (on.returncode, on.stdout, on.stderr) == (off.returncode, off.stdout, off.stderr), args
    assert _status(home)["requests"] == before + len(CASES)


def test_the_socket_is_its_users_alone(served):
    _run(served, "search", "pool")
    _started(served)
    sock = _socket(served)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600 and stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700


def test_an_idle_server_exits_and_takes_its_socket(served):
    _run(served, "search", "pool", DEJA_SERVE_IDLE="1")
    pid = _started(served)["pid"]
    assert _wait(lambda: not _alive(pid), 15)
    assert not _socket(served).exists()


def test_off_starts_nothing(served):
    _run(served, "search", "pool", DEJA_SERVE="off")
    _run(served, "hook-prompt", stdin=PROMPT, DEJA_SERVE="off")
    time.sleep(1.0)
    assert _status(served) is None and not _socket(served).exists()


def test_a_server_of_other_code_is_replaced(served):
    """An upgrade: the client runs other code than the server; it answers
    itself, the old server leaves, and a server of the new code starts."""
    _run(served, "search", "pool", DEJA_SERVE_CODE="old")
    old = _started(served)
    assert old["code"] == "old"
    off = _run(served, "search", "--json", "pool", DEJA_SERVE="off")
    new = _run(served, "search", "--json", "pool", DEJA_SERVE_CODE="new")
    assert new.stdout == off.stdout
    assert _wait(lambda: not _alive(old["pid"]), 15)
    assert _wait(lambda: (_status(served) or {}).get("code") == "new")


def test_a_killed_server_and_the_socket_it_left_are_replaced(served):
    _run(served, "search", "pool")
    pid = _started(served)["pid"]
    os.kill(pid, signal.SIGKILL)
    assert _wait(lambda: not _alive(pid), 10)
    assert _socket(served).exists()  # what a crash leaves
    off = _run(served, "search", "--json", "pool", DEJA_SERVE="off")
    again = _run(served, "search", "--json", "pool")
    assert again.stdout == off.stdout and again.returncode == 0
    assert _wait(lambda: (_status(served) or {}).get("pid") not in (None, pid))


@pytest.mark.parametrize("reply", [None, b"garbage\n", b"\x00\xff" * 40])
def test_a_hung_or_babbling_server_means_the_in_process_answer(served, reply):
    """Something listens on the socket but never forks (hung), or answers
    nonsense: the hook and the search answer in-process, in time."""
    path = _socket(served)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    held = []

    def fake():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            if reply:
                try:
                    conn.recv(1 << 16)
                    conn.sendall(reply)
                except OSError:
                    pass

    threading.Thread(target=fake, daemon=True).start()
    try:
        for args, stdin in [(("hook-prompt",), PROMPT), (("search", "--json", "pool"), None)]:
            off = _run(served, *args, stdin=stdin and stdin.replace("$live", "off"), DEJA_SERVE="off")
            t = time.monotonic()
            on = _run(served, *args, stdin=stdin and stdin.replace("$live", "on"), DEJA_SERVE_START="0")
            assert (on.returncode, on.stdout, on.stderr) == (off.returncode, off.stdout, off.stderr)
            assert time.monotonic() - t < 30
        # each asked it once: the Python deja the compiled one falls back to does not ask again
        assert len(held) == 2
    finally:
        listener.close()
        path.unlink(missing_ok=True)
        for c in held:
            c.close()


def test_a_status_sent_right_behind_the_ack_is_the_clients_exit_status(served):
    """A command done before the client reads its ``ok`` line: both lines
    arrive in one read. The client must still see the status (it used to
    read both as the ack, find nothing after, and exit 1)."""
    path = _socket(served)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)

    def fake():
        for code in (0, 3):
            conn, _ = listener.accept()
            with conn:
                head = b""
                while b"\n" not in head:
                    head += conn.recv(1 << 16)
                size = int(head.split(b"\n", 1)[0].split()[1])
                body = head.split(b"\n", 1)[1]
                while len(body) < size:
                    body += conn.recv(1 << 16)
                conn.sendall(b"go\n")
                _msg, fds, _flags, _addr = socket.recv_fds(conn, 16, 3)
                for fd in fds:
                    os.close(fd)
                conn.sendall(f"ok {os.getpid()} warm\nexit {code}\n".encode())

    threading.Thread(target=fake, daemon=True).start()
    try:
        codes = [_run(served, "search", "--json", "pool", DEJA_SERVE_START="0").returncode for _ in range(2)]
        assert codes == [0, 3]
    finally:
        listener.close()
        path.unlink(missing_ok=True)


def test_many_clients_at_once(served):
    _run(served, "search", "pool")
    _started(served)
    want = _run(served, "search", "--json", "connection", "pool", DEJA_SERVE="off").stdout
    got: list[str] = []

    def one():
        got.append(_run(served, "search", "--json", "connection", "pool").stdout)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [want] * 8


def test_an_index_run_between_two_requests_is_seen_by_the_next(served):
    _run(served, "search", "pool")
    _started(served)
    assert not json.loads(_run(served, "search", "--json", "okapi").stdout)["hits"]
    write_jsonl(served.claude_file(S2, CWD), [
        claude_user(S2, "the okapi importer drops rows with unicode names", "2026-03-05T11:00:00Z", "u3", cwd=CWD)], "a")
    served.run("index")
    hits = json.loads(_run(served, "search", "--json", "okapi").stdout)["hits"]
    assert [h["session"]["id"] for h in hits] == [S2]


def test_a_sessions_promoted_state_is_in_the_next_served_search(served):
    """A warm store keeps the session rows it served; `deja promote` commits
    a new catalog, and the next search reads the rows of the new store."""
    hit = json.loads(_run(served, "search", "--json", "pool").stdout)["hits"][0]
    _started(served)
    assert "lifecycle" not in json.loads(_run(served, "search", "--json", "pool").stdout)["hits"][0]["session"]
    served.run("promote", hit["session"]["id"], "--state", "superseded", "--note", "the pool moved to pgbouncer")
    again = [h for h in json.loads(_run(served, "search", "--json", "pool").stdout)["hits"]
             if h["session"]["id"] == hit["session"]["id"]]
    assert again and again[0]["session"]["lifecycle"] == "superseded"
    assert again[0]["session"]["lifecycle_note"] == "the pool moved to pgbouncer"


def test_a_packet_captured_through_the_server_is_delivered_by_the_next_hook(home):
    """hook-precompact and then hook-context, both answered by the server."""
    from test_packet_hooks import SID, _repo, _transcript, context_of

    repo = _repo(home)
    path = _transcript(home, str(repo))
    home.run("index")
    home.env.update({"DEJA_SERVE": "on", "DEJA_SERVE_IDLE": "60", "XDG_RUNTIME_DIR": ""})
    try:
        _run(home, "search", "pool")
        _started(home)
        cap = _run(home, "hook-precompact", stdin=json.dumps({
            "session_id": SID, "transcript_path": str(path), "cwd": str(repo), "hook_event_name": "PreCompact",
            "trigger": "auto"}))
        assert cap.returncode == 0 and cap.stdout == ""
        out = _run(home, "hook-context", stdin=json.dumps({"session_id": SID, "cwd": str(repo),
                                                           "hook_event_name": "SessionStart", "source": "compact"}))
        assert "billing exporter" in context_of(out.stdout)
        assert _status(home)["requests"] >= 2
    finally:
        _stop(home)


def test_doctor_reports_the_server(served):
    rep = json.loads(_run(served, "doctor", "--json").stdout)
    assert rep["server"]["state"] == "not running"
    _run(served, "search", "pool")
    _started(served)
    _run(served, "search", "pool")
    rep = json.loads(_run(served, "doctor", "--json").stdout)["server"]
    assert rep["state"] == "running" and rep["requests"] >= 1 and rep["rss_mb"] > 0 and rep["version"]
    text = _run(served, "doctor").stdout
    assert f"server: running, pid {rep['pid']}" in text
    assert json.loads(_run(served, "doctor", "--json", DEJA_SERVE="off").stdout)["server"]["state"] == "off"
    # what `deja` itself is: the compiled client, or the Python script without a compiler
    assert rep["executable"] == ("compiled" if _native() else "python")
    assert ("deja is the Python script" in text) is (not _native())


def test_a_client_killed_mid_command_stops_its_copy(served):
    """SIGKILL cannot be passed on: the server sees the client's end of the
    socket close and stops the command it was running for it."""
    _run(served, "search", "pool")
    _started(served)
    proc = subprocess.Popen(deja_cmd() + ["search", "pool"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(served.env, DEJA_FAULT_SLOW="60"))
    assert _wait(lambda: _status(served)["running"] == 1, 10)
    proc.kill()
    proc.wait()
    assert _wait(lambda: _status(served)["running"] == 0, 5)


def test_show_on_a_terminal_runs_in_process(served):
    """`deja show` may page on a terminal, and a pager reads keys from the
    process's own terminal, which the server's copy does not have."""
    _run(served, "search", "pool")
    before = _started(served)["requests"]
    main, other = os.openpty()
    try:
        proc = subprocess.run(deja_cmd() + ["show", S1[:8]], stdout=other, stderr=subprocess.PIPE,
                              env=dict(served.env, DEJA_PAGER="cat"), timeout=60, cwd=served.home)
    finally:
        os.close(other)
        os.close(main)
    assert proc.returncode == 0
    assert _status(served)["requests"] == before
    piped = _run(served, "show", S1[:8])
    assert piped.returncode == 0 and _status(served)["requests"] == before + 1


# ---------------------------------------------------------------- the compiled deja

def _native() -> bool:
    exe = Path(deja_cmd()[0])
    try:
        return exe.name == "deja" and exe.read_bytes()[:2] != b"#!"
    except OSError:
        return False


native = pytest.mark.skipif(not _native(), reason="deja is the Python script here (no C compiler when installed)")


@native
def test_deja_is_compiled_and_runs_the_python_deja_beside_it_for_the_rest(served):
    """The installed `deja` (setup.py, hooks/client.c) hands the hot commands
    to the server and runs `deja-py`, the Python deja beside it, for the
    others: the same output and status, and the server is not asked."""
    exe = Path(deja_cmd()[0])
    python = exe.with_name("deja-py")
    assert os.access(python, os.X_OK)
    _run(served, "search", "pool")
    before = _started(served)["requests"]
    for args in (["--version"], ["search", "--help"], ["index", "--nope"], []):
        native_run = _run(served, *args)
        by_python = subprocess.run([str(python), *args], env=dict(served.env), capture_output=True, text=True,
                                   timeout=120, cwd=served.home)
        assert (native_run.returncode, native_run.stdout, native_run.stderr) == \
               (by_python.returncode, by_python.stdout, by_python.stderr), args
    assert _status(served)["requests"] == before


def test_the_python_client_is_served_too(served):
    """Python's deja (`deja-py` beside a compiled `deja`, or `deja` itself
    without a compiler) hands a search to the server with the same bytes."""
    exe = Path(deja_cmd()[0])
    python = exe.with_name("deja-py") if _native() else exe
    _run(served, "search", "pool")
    before = _started(served)["requests"]
    run = lambda **env: subprocess.run([str(python), "search", "--json", "connection", "pool"],  # noqa: E731
                                       env=dict(served.env, **env), capture_output=True, text=True, timeout=120,
                                       cwd=served.home)
    on, off = run(), run(DEJA_SERVE="off")
    assert (on.returncode, on.stdout, on.stderr) == (off.returncode, off.stdout, off.stderr)
    assert json.loads(on.stdout)["hits"] and _status(served)["requests"] == before + 1


# ---------------------------------------------------------------- warm processes


def test_a_warm_vocabulary_follows_appended_turns_through_their_compaction(served):
    """A warm process adds an appended turn's words to its vocabulary table and,
    when compaction merges those small parts, swaps their rows for the merged
    part's without reading the large part again: every answer stays the one a
    fresh process gives."""
    s3 = "b0b0b0b0-0000-4000-8000-000000000003"
    words = " ".join(f"lexeme{i}q" for i in range(4000))  # a large first vocabulary part
    write_jsonl(served.claude_file(s3, CWD), [claude_user(s3, words, "2026-03-06T10:00:00Z", "u30", cwd=CWD)])
    served.run("index", extra_env={"DEJA_SERVE": "off"})
    _run(served, "search", "pool")
    _started(served)
    for i in range(10):  # the ninth vocabulary part makes compaction merge the small ones
        write_jsonl(served.claude_file(S2, CWD), [claude_user(
            S2, f"the okapi{i} importer drops rows with unicode names", f"2026-03-05T11:{i:02d}:00Z", f"v{i}",
            cwd=CWD)], "a")
        served.run("index")
        assert json.loads(_run(served, "search", "--json", f"okapi{i}").stdout)["hits"], i
        for query in ("importers", "lexeme3999q", "lexemes", f"okapi{max(i - 1, 0)}"):
            got = _run(served, "search", "--json", query).stdout
            assert got == _run(served, "search", "--json", query, DEJA_SERVE="off").stdout, (i, query)


def test_requests_are_answered_by_a_warm_process_that_stays(served):
    """The server keeps a warm process (DuckDB and the live store open)
    between requests: one after the other, the same process answers."""
    _run(served, "search", "pool")
    _started(served)
    want = _run(served, "search", "--json", "connection", "pool", DEJA_SERVE="off").stdout
    before = _status(served)
    for _ in range(3):
        assert _run(served, "search", "--json", "connection", "pool").stdout == want
    after = _status(served)
    assert after["warm_requests"] == before["warm_requests"] + 3
    assert [w["pid"] for w in after["warm"]] == [w["pid"] for w in before["warm"]]


def test_a_dead_warm_process_is_replaced(served):
    _run(served, "search", "pool")
    warm = _started(served)["warm"][0]["pid"]
    os.kill(warm, signal.SIGKILL)
    assert _wait(lambda: warm not in [w["pid"] for w in _status(served)["warm"]], 10)
    off = _run(served, "search", "--json", "pool", DEJA_SERVE="off")
    assert _run(served, "search", "--json", "pool").stdout == off.stdout
    assert _wait(lambda: bool(_status(served)["warm"]), 10)
    assert _run(served, "search", "--json", "pool").stdout == off.stdout


def test_a_warm_process_past_its_memory_gives_way_to_a_fresh_one(served):
    """Resident memory stays flat: a warm process past DEJA_SERVE_WARM_MB
    leaves after its answer and the server forks a fresh one."""
    _run(served, "search", "pool", DEJA_SERVE_WARM_MB="1")
    first = _started(served)["warm"][0]["pid"]
    off = _run(served, "search", "--json", "pool", DEJA_SERVE="off")
    assert _run(served, "search", "--json", "pool").stdout == off.stdout
    assert _wait(lambda: first not in [w["pid"] for w in _status(served)["warm"]], 10)
    assert _run(served, "search", "--json", "pool").stdout == off.stdout


def test_a_warm_process_on_its_way_out_is_handed_no_request(served):
    """A warm process that leaves after its answer (past its memory) says so
    with that answer: a request that comes while it is still leaving goes to a
    fresh process or a fork, never to it (nobody would read it: its client
    heard "exit 1", with nothing on stderr)."""
    _run(served, "search", "pool", DEJA_SERVE_WARM_MB="1", DEJA_FAULT_LINGER="3")
    _started(served)
    off = _run(served, "search", "--json", "pool", DEJA_SERVE="off")
    for _ in range(3):
        got = _run(served, "search", "--json", "pool")
        assert (got.returncode, got.stderr, got.stdout) == (0, "", off.stdout)
    assert _status(served)["failed"] == 0


def test_an_error_the_server_did_not_foresee_still_says_its_one_line(served):
    _run(served, "search", "pool")
    _started(served)
    got = _run(served, "search", "pool", DEJA_FAULT_SLOW="not a number")  # fails in the server's own code
    assert got.returncode == 1 and got.stdout == ""
    assert got.stderr.startswith("deja: ValueError: ") and got.stderr.count("\n") == 1


def test_a_busy_warm_process_leaves_the_next_request_to_a_fork(served):
    """One slow request does not hold the others: while the warm process is
    busy, the next request is answered by a copy forked for it."""
    _run(served, "search", "pool", DEJA_SERVE_WARM="1")
    _started(served)
    slow = subprocess.Popen(deja_cmd() + ["search", "pool"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(served.env, DEJA_FAULT_SLOW="30"))
    try:
        assert _wait(lambda: _status(served)["running"] == 1, 10)
        off = _run(served, "search", "--json", "pool", DEJA_SERVE="off")
        t = time.monotonic()
        assert _run(served, "search", "--json", "pool").stdout == off.stdout
        assert time.monotonic() - t < 20
    finally:
        slow.kill()
        slow.wait()


def test_a_warm_process_started_for_the_next_request_holds_no_clients_pipe(served):
    """Every warm process busy: the request is forked, and one more warm
    process is started for next time. It must not inherit this client's
    stdout: the caller reads the output until its end (an agent reading a
    hook's answer), and a pipe held open by a process that lives on never ends."""
    _run(served, "search", "pool", DEJA_SERVE_WARM="2")
    _started(served)
    slow = subprocess.Popen(deja_cmd() + ["search", "pool"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(served.env, DEJA_FAULT_SLOW="30", DEJA_SERVE_WARM="2"))
    try:
        assert _wait(lambda: (_status(served) or {}).get("running") == 1, 10)
        warm_before = len((_status(served) or {}).get("warm") or [])
        for _ in range(2):
            try:
                got = subprocess.run(deja_cmd() + ["search", "--json", "pool"], env=dict(served.env, DEJA_SERVE_WARM="2"),
                                     capture_output=True, text=True, timeout=20, cwd=served.home)
            except subprocess.TimeoutExpired:
                pytest.fail("the client's output never ended: a server process kept its pipe open")
            assert got.returncode == 0 and json.loads(got.stdout)["hits"]
        assert len((_status(served) or {}).get("warm") or []) >= warm_before
    finally:
        slow.kill()
        slow.wait()


# ---------------------------------------------------------------- the compiled hook client

needs_cc = pytest.mark.skipif(not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="no C compiler")


@pytest.fixture
def wired(served):
    """`deja install claude` with the hook client built: the launcher the agent runs."""
    (served.home / ".claude").mkdir(exist_ok=True)
    out = served.run("install", "claude", extra_env={"DEJA_HOOK_CLIENT": "on"})
    assert "hook client built" in out.stdout + out.stderr
    launcher = served.home / ".config" / "deja" / "bin" / "deja-hook"
    assert os.access(launcher.with_name("deja-client"), os.X_OK)
    return served, launcher


def _hook(home: Home, launcher: Path, hook: str, stdin: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([str(launcher), hook], input=stdin, env=dict(home.env, **env), capture_output=True,
                          text=True, timeout=60, cwd=home.home)


@needs_cc
def test_the_hook_client_is_served_with_the_in_process_bytes(wired):
    home, launcher = wired
    _run(home, "search", "pool")
    _started(home)
    for args, stdin in CASES:
        if args[0].startswith("hook-") and stdin:
            _hook(home, launcher, args[0], stdin.replace("$live", "warm"), DEJA_SERVE="off")
    before = _status(home)["requests"]
    hooks = [(a[0], s) for a, s in CASES if a[0].startswith("hook-")]
    for i, (hook, stdin) in enumerate(hooks):
        off = _hook(home, launcher, hook, stdin.replace("$live", f"off-{i}"), DEJA_SERVE="off")
        on = _hook(home, launcher, hook, stdin.replace("$live", f"on-{i}"))
        assert (on.returncode, on.stdout, on.stderr) == (off.returncode, off.stdout, off.stderr), hook
    assert _status(home)["requests"] == before + len(hooks)


@needs_cc
def test_the_hook_client_without_a_server_runs_deja_which_starts_one(wired):
    home, launcher = wired
    assert _status(home) is None
    off = _hook(home, launcher, "hook-prompt", PROMPT.replace("$live", "a"), DEJA_SERVE="off")
    on = _hook(home, launcher, "hook-prompt", PROMPT.replace("$live", "b"))
    assert on.stdout == off.stdout and on.returncode == 0
    assert _started(home)["pid"]
    # DEJA_SERVE=off: deja in-process, and no server asked
    _stop(home)
    _hook(home, launcher, "hook-prompt", PROMPT.replace("$live", "c"), DEJA_SERVE="off")
    time.sleep(1.0)
    assert _status(home) is None


@needs_cc
def test_the_hook_client_leaves_a_hung_server_for_deja_in_time(wired):
    home, launcher = wired
    path = _socket(home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    try:
        off = _hook(home, launcher, "hook-prompt", PROMPT.replace("$live", "a"), DEJA_SERVE="off")
        t = time.monotonic()
        on = _hook(home, launcher, "hook-prompt", PROMPT.replace("$live", "b"), DEJA_SERVE_START="0")
        assert on.stdout == off.stdout and on.returncode == 0
        assert time.monotonic() - t < 30
    finally:
        listener.close()
        path.unlink(missing_ok=True)


@needs_cc
def test_the_hook_client_passes_other_commands_to_deja(wired):
    home, launcher = wired
    proc = subprocess.run([str(launcher), "--version"], env=dict(home.env), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("deja ")


@needs_cc
def test_doctor_and_uninstall_know_the_hook_client(wired):
    home, launcher = wired
    assert json.loads(_run(home, "doctor", "--json").stdout)["server"]["hook_client"] == "built"
    assert "hook client built" in _run(home, "doctor").stdout
    home.run("uninstall", "claude")
    assert not launcher.exists() and not launcher.with_name("deja-client").exists()


def test_a_warm_process_killed_mid_answer_says_so_in_one_line(served):
    """The process answering a served search is killed while it works: the
    command is not run again (part of its answer may be out), the client says
    what happened in one line and exits 1; a hook stays silent and exits 0."""
    _run(served, "search", "pool")
    _started(served)
    for argv, code in ((["search", "pool"], 1), (["hook-prompt"], 0)):
        warm = [w["pid"] for w in _status(served)["warm"]]
        assert warm
        stdin = served.root / "hook-input.json"
        stdin.write_text(json.dumps({"prompt": "why is the pool exhausted", "cwd": str(served.root)}))
        with open(stdin, "rb") as fh:
            proc = subprocess.Popen(deja_cmd() + argv, stdin=fh, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=dict(served.env, DEJA_FAULT_SLOW="60"))
        assert _wait(lambda: _status(served)["running"] == 1, 10)
        for pid in warm:
            os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == code and out == b""
        if code:
            assert err.decode().count("\n") == 1 and "ended before its answer was complete" in err.decode()
        else:
            assert err == b""
        assert _wait(lambda: bool(_status(served)["warm"]), 10)


def test_a_turn_appended_to_a_quiet_store_is_in_the_next_served_answer(served):
    """A warm process that found the store fresh stats no transcript again
    until a watched folder changes (stages/sources/watch.py): a turn appended
    to an old transcript is still in the very next served answer, as in
    process, and a new transcript is still seen (and read in the background)."""
    served.env["DEJA_NO_REFRESH"] = "0"  # (the tests' default: each query checks nothing)
    old = served.claude_file(S1, CWD)
    os.utime(old, (1_600_000_000, 1_600_000_000))
    served.run("index", extra_env={"DEJA_SERVE": "off"})
    _run(served, "search", "pool")
    _started(served)
    for _ in range(3):  # the warm process's checks find the store fresh
        assert json.loads(_run(served, "search", "--json", "zebra").stdout)["hits"]
    write_jsonl(old, [claude_user(S1, "the wombat importer double counts refunds", "2026-03-07T10:00:00Z", "w1",
                                  cwd=CWD)], "a")
    assert [h["session"]["id"] for h in json.loads(_run(served, "search", "--json", "wombat").stdout)["hits"]] == [S1]
    s3 = "b0b0b0b0-0000-4000-8000-000000000003"
    write_jsonl(served.claude_file(s3, CWD), [claude_user(s3, "the numbat exporter skips archived rows",
                                                          "2026-03-07T11:00:00Z", "n1", cwd=CWD)])
    # (a new transcript is read by a background run, started by the check that sees it)
    assert _wait(lambda: [h["session"]["id"] for h in json.loads(
        _run(served, "search", "--json", "numbat").stdout)["hits"]] == [s3], 20)
    assert _status(served)["warm"]
