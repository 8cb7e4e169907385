"""pi, omp and OpenClaw: one session format (stages/sources/pi_format.py), three
stores. Built to pi's source and omp's session documentation: no real
transcripts of these harnesses are published."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from deja.stages.sources import locate, omp, openclaw, pi

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"
PI_ID = "0c6e1f2a-3b4c-4d5e-8f6a-7b8c9d0e1f2a"


def _pi_store(home: Path) -> Path:
    dest = home / ".pi" / "agent" / "sessions"
    shutil.copytree(SAMPLES / "pi" / "sessions", dest)
    return next(dest.rglob("*.jsonl"))


def test_pi_session_roles_order_times_project_and_title(tmp_path):
    path = _pi_store(tmp_path)
    assert locate.pi_files({"HOME": str(tmp_path)}) == [str(path)]
    res = pi.read(str(path))
    assert res.error == "" and res.malformed == 0 and res.safe_offset == path.stat().st_size
    [s] = res.sessions
    assert (s.harness, s.session_id, s.cwd) == ("pi", PI_ID, "/home/dev/src/relay")
    assert (s.title, s.title_rank) == ("webhook double retry", 2)  # session_info: a person named it
    roles = [m.role for m in s.messages]
    assert roles == ["user", "assistant", "command", "files", "tool-output", "tool-output",
                     "files", "edit", "tool-output", "assistant"]
    times = [m.ts for m in s.messages]
    assert times == sorted(times) and times[0] == 1772434805000  # the envelope's time, epoch ms
    assert "thinking" not in " ".join(m.text for m in s.messages)  # thinking blocks are not text


def test_pi_work_records_from_its_tool_dialect(tmp_path):
    s = pi.read(str(_pi_store(tmp_path))).sessions[0]
    by = {}
    for m in s.messages:
        by.setdefault(m.role, []).append(m)
    [cmd] = by["command"]
    assert (cmd.text, cmd.exit_code) == ("$ npm test -- webhook  → exit 1", 1)  # the exit from the bash result
    assert by["files"][0].text == "/home/dev/src/relay/src/webhook/retry.ts"  # relative to the session cwd
    assert by["edit"][0].text == "/home/dev/src/relay/src/webhook/retry.ts\nexport const RETRIES = 2;"
    assert by["tool-output"][1].is_error is True


def test_pi_append_reads_on_from_the_safe_offset_and_keeps_the_header(tmp_path):
    path = _pi_store(tmp_path)
    first = pi.read(str(path))
    with open(path, "a") as fh:
        fh.write(json.dumps({"type": "message", "id": "u2", "parentId": "a3", "timestamp": "2026-03-02T07:05:00Z",
                             "message": {"role": "user", "content": "and for the payment webhook?"}}) + "\n")
        fh.write('{"type":"message","id":"a4","message":{"role":"assis')  # torn: the agent is mid-write
    more = pi.read(str(path), first.safe_offset)
    [s] = more.sessions
    assert (s.session_id, s.cwd) == (PI_ID, "/home/dev/src/relay")
    assert [(m.role, m.text) for m in s.messages] == [("user", "and for the payment webhook?")]
    assert more.safe_offset < path.stat().st_size and more.malformed == 0


def test_pi_bad_lines_are_counted_and_a_vanished_file_is_an_error(tmp_path):
    path = _pi_store(tmp_path)
    with open(path, "a") as fh:
        fh.write("not json at all\n")
        fh.write('{"type":"message","id":"x","timestamp":"2026-03-02T07:09:00Z","message":[1,2]}\n')  # unexpected shape
        fh.write('{"type":"message","id":"y","timestamp":"2026-03-02T07:09:01Z","message":{"role":"user","content":{"odd":1}}}\n')
    res = pi.read(str(path))
    assert res.malformed == 1 and res.sessions and res.safe_offset == path.stat().st_size
    path.unlink()
    gone = pi.read(str(path))
    assert gone.error and gone.sessions == []


def test_pi_fork_keeps_the_parent_edge_and_a_person_run_command(tmp_path):
    path = tmp_path / "--home-dev-src-relay--" / "2026-03-02T08-00-00-000Z_9d8c7b6a-1111-4222-8333-944455566677.jsonl"
    path.parent.mkdir()
    rows = [
        {"type": "session", "version": 3, "id": "9d8c7b6a-1111-4222-8333-944455566677", "timestamp": "2026-03-02T08:00:00Z",
         "cwd": "/home/dev/src/relay",
         "parentSession": f"/home/dev/.pi/agent/sessions/--home-dev-src-relay--/2026-03-02T07-00-00-000Z_{PI_ID}.jsonl"},
        {"type": "message", "id": "b1", "parentId": None, "timestamp": "2026-03-02T08:00:01Z",
         "message": {"role": "bashExecution", "command": "make test", "output": "2 failed", "exitCode": 2,
                     "cancelled": False, "truncated": False, "timestamp": 1772438401000}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    [s] = pi.read(str(path)).sessions
    assert (s.kind, s.parent) == ("fork", PI_ID)
    assert [(m.role, m.text) for m in s.messages] == [("command", "$ make test  → exit 2"), ("tool-output", "2 failed")]


def test_pi_without_a_cwd_takes_its_folders_project(tmp_path):
    path = tmp_path / "--home-dev-src-relay--" / f"2026-03-02T07-00-00-000Z_{PI_ID}.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps({"type": "session", "id": PI_ID, "timestamp": "2026-03-02T07:00:00Z"}) + "\n"
                    + json.dumps({"type": "message", "id": "u", "timestamp": "2026-03-02T07:00:01Z",
                                  "message": {"role": "user", "content": "hi there, the relay drops frames"}}) + "\n")
    [s] = pi.read(str(path)).sessions
    assert s.cwd == "" and s.project == "src/relay"


def test_omp_profiles_and_xdg_are_found_and_its_header_title_kept(tmp_path):
    home = tmp_path / "home"
    src = next((SAMPLES / "omp").rglob("*.jsonl"))
    main = home / ".omp" / "agent" / "sessions" / src.parent.name
    prof = home / ".omp" / "profiles" / "work" / "agent" / "sessions" / src.parent.name
    xdg = tmp_path / "xdg" / "omp" / "sessions" / src.parent.name
    for d in (main, prof, xdg):
        d.mkdir(parents=True)
    shutil.copy(src, main / src.name)
    shutil.copy(src, prof / ("2026-03-03T11-00-00-000Z_" + "2" * 8 + "-0000-4000-8000-" + "2" * 12 + ".jsonl"))
    shutil.copy(src, xdg / src.name)
    env = {"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    assert len(locate.omp_files(env)) == 3
    assert locate.omp_files({"HOME": str(home), "DEJA_OMP_ROOT": str(xdg.parent)}) == [str(xdg / src.name)]
    [s] = omp.read(str(main / src.name)).sessions
    assert (s.harness, s.title, s.title_rank, s.cwd) == ("omp", "rounding drift in invoice totals", 1, "/home/dev/src/ledger")


def test_openclaw_reads_only_live_transcripts_at_agent_session_depth(tmp_path):
    state = tmp_path / "state"
    shutil.copytree(SAMPLES / "openclaw", state)
    sessions = state / "agents" / "ops" / "sessions"
    live = next(sessions.glob("*.jsonl"))
    for extra in (f"{live.stem}.checkpoint.0f0f0f0f-0000-4000-8000-000000000000.jsonl", f"{live.stem}.jsonl.deleted.2026",
                  f"{live.stem}.reset.jsonl", "old.bak.jsonl", "nested/deep.jsonl"):
        p = sessions / extra
        p.parent.mkdir(exist_ok=True)
        shutil.copy(live, p)
    assert locate.openclaw_files({"HOME": str(tmp_path), "OPENCLAW_STATE_DIR": str(state)}) == [str(live)]
    [s] = openclaw.read(str(live)).sessions
    assert s.harness == "openclaw" and s.cwd == "/home/dev/src/infra"
    assert [m.text for m in s.messages if m.role == "command"] == ["$ docker logs backup-cron --tail 20"]
    # with no cwd recorded the project is the agent's
    bare = sessions / "bare.jsonl"
    bare.write_text('{"type":"session","id":"bare","timestamp":"2026-03-04T09:00:00Z"}\n')
    assert openclaw.read(str(bare)).sessions[0].project == "openclaw-ops"


def test_absent_pi_family_stores_cost_nothing(tmp_path):
    env = {"HOME": str(tmp_path)}
    assert locate.pi_files(env) == locate.omp_files(env) == locate.openclaw_files(env) == []


def test_deja_indexes_and_finds_the_pi_family(home):
    _pi_store(home.home)
    shutil.copytree(SAMPLES / "omp", home.home / ".omp")
    shutil.copytree(SAMPLES / "openclaw", home.home / ".openclaw")
    out = json.loads(home.run("index", "--json").stdout)
    by = {h["harness"]: h for h in out["harnesses"]}
    assert by["pi"]["sessions"] == by["omp"]["sessions"] == by["openclaw"]["sessions"] == 1
    hits = home.search("bucket", "policy")
    assert "openclaw" in json.dumps(hits)
