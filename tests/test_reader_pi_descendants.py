"""Senpi, gajae-code, Kimchi Coding and prime-agent: pi forks that kept pi's
session file (stages/sources/pi_format.py) and moved where it lies. Each store
is laid out as the fork's own source builds it (the paths in each reader's
docstring); the samples are composed, no real transcripts are published."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from deja.stages.sources import gjc, kimchi, locate, prime, senpi

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"
SENPI_ID = "5e9a1c2d-7b3f-4a60-9d18-2c4e6f8a0b1c"
GJC_ID = "7a1c3e4f-9d5b-4c82-9f3a-4e6a8b0c2d3e"
KIMCHI_ID = "6f0b2d3e-8c4a-4b71-8e29-3d5f7a9b1c2d"
PRIME_ID = "0195f3a2-6b7c-7d8e-9f01-a2b3c4d5e6f7"


def _lay(home: Path, sample: str, dest: str) -> Path:
    """Copy a sample's sessions dir to ``home/dest``; the one transcript's path."""
    src = next(p for p in (SAMPLES / sample).rglob("sessions") if p.is_dir())
    shutil.copytree(src, home / dest)
    return next((home / dest).rglob("*.jsonl"))


def test_senpi_store_at_its_default_home_reads_as_senpi(tmp_path):
    path = _lay(tmp_path, "senpi", ".senpi/agent/sessions")
    assert locate.senpi_files({"HOME": str(tmp_path)}) == [str(path)]
    res = senpi.read(str(path))
    assert res.error == "" and res.malformed == 0 and res.safe_offset == path.stat().st_size
    [s] = res.sessions
    assert (s.harness, s.session_id, s.cwd) == ("senpi", SENPI_ID, "/home/dev/src/atlas")
    roles = [m.role for m in s.messages]
    assert roles == ["user", "assistant", "command", "files", "tool-output", "tool-output",
                     "files", "edit", "tool-output", "assistant"]
    times = [m.ts for m in s.messages]
    assert times == sorted(times) and times[0] == 1772701205000
    cmd = next(m for m in s.messages if m.role == "command")
    assert (cmd.text, cmd.exit_code) == ("$ npm test -- tiles  → exit 1", 1)
    edit = next(m for m in s.messages if m.role == "edit")
    assert edit.text.startswith("/home/dev/src/atlas/src/tiles/cache.ts\n")  # edits[] spans, relative to cwd


def test_senpi_relocation_variables(tmp_path):
    agent = tmp_path / "elsewhere"
    path = _lay(agent, "senpi", "sessions")
    assert locate.senpi_files({"HOME": str(tmp_path), "SENPI_CODING_AGENT_DIR": str(agent)}) == [str(path)]
    # a session dir override holds the files themselves, no cwd folder
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(path, flat / path.name)
    assert locate.senpi_files({"HOME": str(tmp_path), "SENPI_CODING_AGENT_SESSION_DIR": str(flat)}) == [str(flat / path.name)]
    assert locate.senpi_files({"HOME": str(tmp_path), "DEJA_SENPI_ROOT": str(flat)}) == [str(flat / path.name)]
    # pi's own variable is pi's: it does not make a second harness of one store
    assert locate.senpi_files({"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent)}) == []


def test_gjc_v2_scope_folder_and_title_and_xdg_store(tmp_path):
    path = _lay(tmp_path, "gjc", ".gjc/agent/sessions")
    scope = path.parent
    (scope / ".gjc-managed-session-scope.v2.json").write_text('{"canonicalCwd": "/home/dev/src/harbor"}\n')
    sub = scope / GJC_ID / "1-explore.jsonl"  # a sub-agent pass, one folder deeper: not a session of its own
    sub.parent.mkdir()
    shutil.copy(path, sub)
    assert locate.gjc_files({"HOME": str(tmp_path)}) == [str(path)]
    [s] = gjc.read(str(path)).sessions
    assert (s.harness, s.session_id, s.cwd) == ("gjc", GJC_ID, "/home/dev/src/harbor")
    assert (s.title, s.title_rank) == ("berth double booking", 1)
    assert [m.text for m in s.messages if m.role == "edit"] == ["/home/dev/src/harbor/harbor/berths.py\nif slot.free:"]
    xdg = tmp_path / "xdg"
    moved = _lay(xdg, "gjc", "gjc/sessions")
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(xdg)}
    assert locate.gjc_files(env) == sorted([str(path), str(moved)])
    assert locate.gjc_files({**env, "DEJA_GJC_ROOT": str(xdg / "gjc" / "sessions")}) == [str(moved)]


def test_gjc_without_a_cwd_takes_no_project_from_a_digest_folder(tmp_path):
    path = tmp_path / "v2-3f6c9e2a1b7d4058" / f"2026-03-07T09-00-00-000Z_{GJC_ID}.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps({"type": "session", "id": GJC_ID, "timestamp": "2026-03-07T09:00:00Z"}) + "\n"
                    + json.dumps({"type": "message", "id": "u", "timestamp": "2026-03-07T09:00:01Z",
                                  "message": {"role": "user", "content": "slot 4 again"}}) + "\n")
    [s] = gjc.read(str(path)).sessions
    assert s.cwd == "" and s.project == ""
    legacy = tmp_path / "--home-dev-src-harbor--" / path.name
    legacy.parent.mkdir()
    shutil.copy(path, legacy)
    assert gjc.read(str(legacy)).sessions[0].project == "src/harbor"


def test_kimchi_store_under_its_config_harness_dir(tmp_path):
    path = _lay(tmp_path, "kimchi", ".config/kimchi/harness/sessions")
    assert locate.kimchi_files({"HOME": str(tmp_path)}) == [str(path)]
    # its entry point builds the path from the home, not from XDG_CONFIG_HOME
    assert locate.kimchi_files({"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "x")}) == [str(path)]
    [s] = kimchi.read(str(path)).sessions
    assert (s.harness, s.session_id, s.cwd) == ("kimchi", KIMCHI_ID, "/home/dev/src/kiln")
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "files", "tool-output", "tool-output", "assistant"]


def test_prime_flat_root_legacy_folders_and_its_relocation_variables(tmp_path):
    path = _lay(tmp_path, "prime", ".prime/agent/sessions")
    root = path.parent
    legacy = root / "--home-dev-src-quarry--" / "2026-01-02T10-00-00-000Z_0195f3a2-0000-7000-8000-000000000001.jsonl"
    legacy.parent.mkdir()
    shutil.copy(path, legacy)
    assert locate.prime_files({"HOME": str(tmp_path)}) == sorted([str(path), str(legacy)])
    for var in ("PRIME_AGENT_SESSION_DIR", "PRIME_AGENT_CODING_AGENT_SESSION_DIR", "DEJA_PRIME_ROOT"):
        assert locate.prime_files({"HOME": "/nonexistent", var: str(legacy.parent)}) == [str(legacy)]
    assert locate.prime_files({"HOME": "/nonexistent", "PRIME_AGENT_CODING_AGENT_DIR": str(root.parent)}) \
        == sorted([str(path), str(legacy)])
    [s] = prime.read(str(path)).sessions
    assert (s.harness, s.session_id, s.cwd, s.kind) == ("prime", PRIME_ID, "/home/dev/src/quarry", "")
    assert [(m.role, m.exit_code) for m in s.messages if m.role == "command"] == [("command", 1)]


def test_prime_without_a_cwd_in_the_flat_root_has_no_folder_project(tmp_path):
    path = tmp_path / "sessions" / f"{PRIME_ID}.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps({"type": "session", "id": PRIME_ID, "timestamp": "2026-03-08T09:00:00Z"}) + "\n")
    [s] = prime.read(str(path)).sessions
    assert s.project == ""  # "sessions" is not an encoded cwd


def test_descendants_append_read_on_and_bad_input_is_counted(tmp_path):
    path = _lay(tmp_path, "senpi", ".senpi/agent/sessions")
    first = senpi.read(str(path))
    with open(path, "a") as fh:
        fh.write("not json\n")
        fh.write(json.dumps({"type": "message", "id": "u2", "parentId": "a0000009", "timestamp": "2026-03-05T09:05:00Z",
                             "message": {"role": "user", "content": "and the vector layer?"}}) + "\n")
        fh.write('{"type":"message","id":"a4","message":{"role":"assis')  # torn: mid-write
    more = senpi.read(str(path), first.safe_offset)
    [s] = more.sessions
    assert (s.session_id, s.cwd) == (SENPI_ID, "/home/dev/src/atlas")  # the header, re-read from the head
    assert [(m.role, m.text) for m in s.messages] == [("user", "and the vector layer?")]
    assert more.malformed == 1 and more.safe_offset < path.stat().st_size
    path.unlink()
    gone = senpi.read(str(path), more.safe_offset)
    assert gone.error and gone.sessions == []


def test_absent_descendant_stores_cost_nothing(tmp_path):
    env = {"HOME": str(tmp_path)}
    assert locate.senpi_files(env) == locate.gjc_files(env) == locate.kimchi_files(env) == locate.prime_files(env) == []


def test_deja_indexes_and_finds_the_pi_descendants(home):
    _lay(home.home, "senpi", ".senpi/agent/sessions")
    _lay(home.home, "gjc", ".gjc/agent/sessions")
    _lay(home.home, "kimchi", ".config/kimchi/harness/sessions")
    _lay(home.home, "prime", ".prime/agent/sessions")
    out = json.loads(home.run("index", "--json").stdout)
    by = {h["harness"]: h for h in out["harnesses"]}
    assert by["senpi"]["sessions"] == by["gjc"]["sessions"] == by["kimchi"]["sessions"] == by["prime"]["sessions"] == 1
    assert "prime" in json.dumps(home.search("BOM", "importer"))
