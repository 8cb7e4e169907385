"""deja sync export / import between two machines: two temp HOMEs, each with
its own store and machine name, exchanging JSONL batches through a folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import Home, claude_assistant, claude_user, write_jsonl

SA = "5a1f0c3e-1111-4a4a-9b9b-000000000001"
SB = "5b2f0c3e-2222-4a4a-9b9b-000000000002"


def machine(root: Path, name: str) -> Home:
    root.mkdir()
    h = Home(root)
    h.env["DEJA_MACHINE"] = name
    return h


@pytest.fixture
def two(tmp_path):
    return machine(tmp_path / "a", "alpha"), machine(tmp_path / "b", "beta")


def session(h: Home, sid: str, ask: str, answer: str, cwd: str = "/home/dev/src/shop", day: str = "2026-03-02"):
    write_jsonl(h.claude_file(sid, cwd), [
        claude_user(sid, ask, f"{day}T09:00:00Z", "u1", cwd=cwd),
        claude_assistant(sid, [{"type": "text", "text": answer}], f"{day}T09:00:05Z", "a1", cwd=cwd, parent="u1"),
    ])


def export(h: Home, folder: Path, *args) -> dict:
    return json.loads(h.run("sync", "export", str(folder), "--json", *args).stdout)


def import_(h: Home, folder: Path) -> dict:
    return json.loads(h.run("sync", "import", str(folder), "--json").stdout)


def batch_lines(folder: Path) -> list[dict]:
    return [json.loads(ln) for f in sorted(folder.glob("*.jsonl")) for ln in f.read_text().splitlines()]


def test_a_session_exported_here_is_found_there_namespaced_and_marked_with_its_machine(two, tmp_path):
    a, b = two
    session(a, SA, "the upload times out behind nginx", "raised client_max_body_size to 50m in the proxy")
    a.run("index")
    out = export(a, tmp_path / "x")
    assert out["records"] == 2 and out["sessions"] == 1 and Path(out["path"]).name.startswith("deja-sync-")
    assert oct(Path(out["path"]).stat().st_mode & 0o777) == "0o600"
    got = import_(b, tmp_path / "x")
    assert (got["records"], got["sessions"], got["duplicates"], got["machines"]) == (2, 1, 0, {"alpha": 2})

    hit = b.search("client_max_body_size")["hits"][0]["session"]
    assert hit["harness"] == "claude"
    assert hit["id"].startswith("imported-") and hit["id"] != SA
    assert hit["project"] == "imported:src/shop"
    assert hit["source"] == {"origin": "imported"}
    assert (hit["orig_id"], hit["from"]) == (SA, "alpha")
    # found by the id it has on the machine it came from, and read whole
    shown = b.run("show", SA[:8]).stdout
    assert "client_max_body_size" in shown and "the upload times out" in shown
    last = json.loads(b.run("last", "--json", "--from", "alpha").stdout)["sessions"]
    assert [s["orig_id"] for s in last] == [SA]
    # the project is matched without its imported: prefix: by name, by a tail, by the path here
    for project in ("src/shop", "shop", "/home/dev/src/shop", "imported:src/shop"):
        hits = b.search("client_max_body_size", "--project", project)["hits"]
        assert [h["session"]["orig_id"] for h in hits] == [SA], project
    assert b.search("client_max_body_size", "--project", "web", check=False)["hits"] == []
    resume = b.run("resume", SA[:8], "--print", check=False)
    assert resume.returncode == 1 and "synced in from alpha" in resume.stderr


def test_importing_again_adds_nothing_and_a_second_export_carries_only_what_is_new(two, tmp_path):
    a, b = two
    session(a, SA, "why is the pool exhausted", "the pool size was 5; raised it to 20")
    a.run("index")
    export(a, tmp_path / "x1")
    assert import_(b, tmp_path / "x1")["records"] == 2
    again = import_(b, tmp_path / "x1")
    assert (again["records"], again["duplicates"]) == (0, 2)

    assert export(a, tmp_path / "x2")["path"] is None  # nothing new since
    # the session goes on: only its new turns travel
    write_jsonl(a.claude_file(SA), [
        claude_user(SA, "and the timeout?", "2026-03-02T10:00:00Z", "u2", parent="a1"),
        claude_assistant(SA, [{"type": "text", "text": "pool_timeout set to 30s"}], "2026-03-02T10:00:04Z", "a2",
                         parent="u2"),
    ], mode="a")
    a.run("index")
    out = export(a, tmp_path / "x2")
    assert out["records"] == 2
    assert {ln["text"] for ln in batch_lines(tmp_path / "x2")} == {"and the timeout?", "pool_timeout set to 30s"}
    assert import_(b, tmp_path / "x2")["records"] == 2
    # one session there, all four turns in it
    hits = b.search("pool_timeout")["hits"]
    assert len(hits) == 1 and hits[0]["session"]["orig_id"] == SA
    assert b.run("show", SA).stdout.count("[user]") == 2
    # --full sends everything again; the other side keeps one copy
    assert export(a, tmp_path / "x3", "--full")["records"] == 4
    assert import_(b, tmp_path / "x3")["duplicates"] == 4


def test_a_peer_has_its_own_watermark(two, tmp_path):
    a, _ = two
    session(a, SA, "flaky test in CI", "the temp dir was shared between workers")
    a.run("index")
    assert export(a, tmp_path / "p1", "--peer", "box")["records"] == 2
    assert export(a, tmp_path / "p2", "--peer", "BOX")["path"] is None  # the same machine, spelled otherwise
    assert export(a, tmp_path / "p3", "--peer", "other")["records"] == 2  # another machine still needs it
    assert export(a, tmp_path / "p4")["records"] == 2  # and so does an export to no one in particular


def test_a_round_trip_does_not_echo(two, tmp_path):
    a, b = two
    session(a, SA, "migrations hang on deploy", "a lock held by the old release; we added a lock_timeout")
    session(b, SB, "the css build is slow", "switched the bundler to esbuild", cwd="/home/dev/src/web")
    a.run("index")
    b.run("index")
    export(a, tmp_path / "ab")
    import_(b, tmp_path / "ab")
    back = export(b, tmp_path / "ba")
    lines = batch_lines(tmp_path / "ba")
    assert back["sessions"] == 1 and {ln["session_id"] for ln in lines} == {SB}  # only beta's own
    assert {ln["origin"] for ln in lines} == {"beta"}
    # alpha's own lines, come back in a folder with beta's, are left out
    for f in (tmp_path / "ab").glob("*.jsonl"):
        (tmp_path / "ba" / f.name).write_bytes(f.read_bytes())
    got = import_(a, tmp_path / "ba")
    assert (got["records"], got["echoed"]) == (2, 2)
    ids = [h["session"]["id"] for h in a.search("lock_timeout")["hits"]]
    assert ids == [SA]  # the local session, not an imported copy of itself


def test_a_rebuild_keeps_the_imported_sessions(two, tmp_path):
    a, b = two
    session(a, SA, "redis evictions at noon", "maxmemory-policy was noeviction; set allkeys-lru")
    a.run("index")
    export(a, tmp_path / "x")
    import_(b, tmp_path / "x")
    b.run("index", "--rebuild")
    hit = b.search("allkeys-lru")["hits"][0]["session"]
    assert (hit["orig_id"], hit["from"], hit["source"]["origin"]) == (SA, "alpha", "imported")
    doctor = json.loads(b.run("doctor", "--json").stdout)
    imported = next(s for s in doctor["stores"] if s["name"] == "imported")
    assert (imported["files"], imported["indexed_sessions"]) == (1, 1)
    assert doctor["sync"]["imported_sessions"] == {"alpha": 1}


def test_a_secret_the_store_still_holds_never_leaves_in_an_export(two, tmp_path):
    a, b = two
    key = "sk-proj-" + "Q7v2" * 12
    session(a, SA, f"my key is {key} and it is rejected", "the key had a trailing newline")
    a.run("index", extra_env={"DEJA_NO_REDACT": "1"})  # a store written before today's rules
    export(a, tmp_path / "x")
    text = "".join(f.read_text() for f in (tmp_path / "x").glob("*.jsonl"))
    assert key not in text and "[redacted" in text
    import_(b, tmp_path / "x")
    imports = b.home / ".local" / "share" / "deja" / "imports"
    kept = "".join(f.read_text() for f in imports.rglob("*.jsonl"))
    assert kept and key not in kept


def test_a_batch_written_by_hand_is_redacted_on_the_way_in(two, tmp_path):
    _, b = two
    key = "ghp_" + "a1B2c3D4e5F6" * 3
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "deja-sync-hand.jsonl").write_text(json.dumps(
        {"harness": "codex", "session_id": "019b-demo", "project": "api", "role": "assistant",
         "text": f"token {key} rotated", "time": "2026-03-02T09:00:12Z", "origin": "gamma",
         "title": f"rotate {key}"}) + "\n")
    assert import_(b, folder)["records"] == 1
    imports = b.home / ".local" / "share" / "deja" / "imports"
    kept = "".join(f.read_text() for f in imports.rglob("*.jsonl"))
    assert kept and key not in kept
    assert b.search("rotated")["hits"][0]["session"]["from"] == "gamma"


def test_bad_lines_are_counted_and_the_rest_imported(two, tmp_path):
    _, b = two
    folder = tmp_path / "in"
    folder.mkdir()
    good = {"harness": "codex", "session_id": "019b-demo", "project": "api", "role": "assistant",
            "text": "the flaky test was a shared temp dir", "time": "2026-03-02T09:00:12Z"}
    (folder / "deja-sync-x.jsonl").write_text("\n".join([
        json.dumps(good),  # no origin: seed-era batches; counted under "unknown"
        "{not json",
        json.dumps(dict(good, role="wizard")),
        json.dumps(dict(good, time="yesterday-ish")),
        json.dumps(dict(good, text="")),
        json.dumps([1, 2]),
        json.dumps(dict(good, text="a lone \ud800 surrogate and ünïcode", session_id="019b-odd")),
    ]) + "\n")
    got = import_(b, folder)
    assert (got["records"], got["malformed"]) == (2, 5)
    assert "ünïcode" in b.run("show", "019b-odd").stdout
    hit = b.search("shared temp dir")["hits"][0]["session"]
    assert (hit["orig_id"], hit["from"], hit["project"]) == ("019b-demo", "unknown", "imported:api")


def test_an_excluded_project_is_not_exported(two, tmp_path):
    a, _ = two
    session(a, SA, "payroll numbers for march", "exported to the finance sheet", cwd="/home/dev/src/payroll")
    session(a, SB, "lint errors", "ruff config fixed", cwd="/home/dev/src/web")
    a.run("index")
    cfg = a.home / ".config" / "deja"
    cfg.mkdir(parents=True)
    (cfg / "exclude").write_text("payroll\n")  # excluded after indexing
    export(a, tmp_path / "x")
    assert {ln["session_id"] for ln in batch_lines(tmp_path / "x")} == {SB}


def test_bad_arguments_are_one_line(two, tmp_path):
    a, _ = two
    for args, said in [
        (("sync", "import", str(tmp_path / "nope")), "is not a folder of sync batches"),
        (("sync", "export"), "needs a folder"),
        (("sync", "frobnicate"), "unknown sync action"),
        (("sync", "forget", "box"), "no peer 'box'"),
        (("sync",), "no peers yet"),
    ]:
        p = a.run(*args, check=False)
        assert p.returncode == 1 and said in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1


def test_a_host_is_one_machine_the_way_ssh_matches_it():
    from deja.pipeline.sync import find_peer, host_key

    assert host_key("box") == host_key("BOX") == "box"
    assert host_key("Root@box") != host_key("root@box")
    assert host_key("Root@BOX") == host_key("Root@box")
    assert host_key("a@b@Box") == "a@b@box"  # only after the last @
    rows = [{"host": "dev@Workstation"}]
    assert find_peer(rows, "dev@workstation") is rows[0]
    assert find_peer(rows, "Dev@workstation") is None


def _hand_batch(tmp_path: Path, lines: list) -> Path:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    (folder / "deja-sync-hand.jsonl").write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    return folder


def _kept(h: Home) -> list[dict]:
    imports = h.home / ".local" / "share" / "deja" / "imports"
    return [json.loads(ln) for f in sorted(imports.rglob("*.jsonl")) for ln in f.read_text().splitlines()]


GOOD = {"harness": "codex", "session_id": "019b-demo", "project": "api", "role": "assistant",
        "text": "the flaky test was a shared temp dir", "time": "2026-03-02T09:00:12Z", "origin": "laptop"}


def test_a_line_whose_time_is_a_number_is_imported_with_the_rest(two, tmp_path):
    _, b = two
    folder = _hand_batch(tmp_path, [GOOD, dict(GOOD, role="user", text="why is the integration test flaky",
                                               time=1772442000)])  # epoch seconds, as the line check accepts
    got = import_(b, folder)
    assert (got["records"], got["malformed"]) == (2, 0)
    assert b.search("shared temp dir")["hits"] and b.search("integration")["hits"]
    # kept as deja writes times, so it reads (and dedupes) like any other line
    assert sorted(ln["time"] for ln in _kept(b)) == ["2026-03-02T09:00:00.000Z", "2026-03-02T09:00:12.000Z"]
    assert "09:00:00" in b.run("show", "019b-demo").stdout
    assert import_(b, folder)["duplicates"] == 2


def test_no_value_of_any_json_type_in_any_field_stops_an_import(two, tmp_path):
    """Every field of a batch line is untrusted input: a value of the wrong type costs that
    line (a field import cannot do without) or that value (one it can), never the import."""
    _, b = two
    values = {"int": 1772442000, "float": 1772442000.25, "bool": True, "null": None, "list": [1, "a"],
              "dict": {"a": 1}, "huge": "w " * 600_000, "surrogate": "odd \ud800 one"}
    fields = ("harness", "session_id", "project", "role", "text", "time", "origin", "title", "tool", "exit_code",
              "seq")
    lines = [dict(GOOD, text="anchor line imported whatever its neighbours")]
    for field in fields:
        for kind, value in values.items():
            marker = f"fuzz-{field}-{kind}"
            line = dict(GOOD, text=marker, title="a title", tool="Bash", exit_code=0, seq=1)
            line[field] = marker + " " + value if field == "text" and isinstance(value, str) else value
            lines.append(line)
    proc = b.run("sync", "import", str(_hand_batch(tmp_path, lines)), "--json", check=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    got = json.loads(proc.stdout)

    strings = {"huge", "surrogate"}
    expected = {f"fuzz-{f}-{k}" for f in fields for k in values
                if f in ("project", "origin", "title", "tool", "exit_code", "seq")  # optional: costs the value
                or (f in ("harness", "session_id", "text") and k in strings)
                or (f == "time" and k in ("int", "float", "null"))}
    kept = {ln["text"].split()[0] for ln in _kept(b) if ln["text"].startswith("fuzz-")}
    assert kept == expected
    assert got["records"] == len(expected) + 1 and got["malformed"] == len(lines) - 1 - len(expected)
    assert b.search("anchor line imported")["hits"]
    again = import_(b, tmp_path / "in")
    assert (again["records"], again["duplicates"]) == (0, len(expected) + 1)


def test_a_line_naming_its_agent_otherwise_is_found_under_deja_s_name_for_it(two, tmp_path):
    _, b = two
    folder = _hand_batch(tmp_path, [dict(GOOD, harness="Claude", text="nginx buffer raised"),
                                    dict(GOOD, harness="claude-code", session_id="019b-other",
                                         text="nginx timeout raised"),
                                    dict(GOOD, harness="Zork Agent", session_id="019b-z", text="nginx unknown agent")])
    assert import_(b, folder)["records"] == 3
    found = b.search("nginx", "--harness", "claude")["hits"]
    assert sorted(h["session"]["orig_id"] for h in found) == ["019b-demo", "019b-other"]
    assert {ln["harness"] for ln in _kept(b)} == {"claude", "zork-agent"}  # unknown: kept, in one spelling


# What has been indexed since an export is what the next one sends, whatever the records' times say:
# the session of `session` was exported (its newest record 09:00:05), then these turns were written.
def _later_turns(day: str = "2026-03-02") -> dict[str, list[dict]]:
    def turn(uuid, text, ts, parent):
        line = claude_user(SA, text, ts, uuid, parent=parent)
        if ts is None:
            del line["timestamp"]
        return line

    return {
        "clock stepped back": [turn("u2", "SKEWED bump the version to 1.4.2", f"{day}T07:00:00Z", "a1")],
        "no timestamp": [turn("u2", "UNSTAMPED bump the version to 1.4.2", None, "a1")],
        "same millisecond": [turn("u2", "SAMEMS bump the version to 1.4.2", f"{day}T09:00:05Z", "a1")],
    }


def _exported_then(a: Home, tmp_path: Path, turns: list[dict], name: str) -> Path:
    session(a, SA, "why does checkout 500 on empty carts", "fixed by guarding empty carts")
    a.run("index")
    assert export(a, tmp_path / f"{name}1")["records"] == 2
    write_jsonl(a.claude_file(SA), turns, mode="a")
    a.run("index")
    return tmp_path / f"{name}2"


@pytest.mark.parametrize("case", ["clock stepped back", "no timestamp", "same millisecond"])
def test_a_turn_indexed_after_an_export_is_sent_by_the_next_whatever_its_time(two, tmp_path, case):
    a, b = two
    turns = _later_turns()[case]
    folder = _exported_then(a, tmp_path, turns, "x")
    out = export(a, folder)
    assert out["records"] == 1 and [ln["text"] for ln in batch_lines(folder)] == [turns[0]["message"]["content"]]
    assert export(a, tmp_path / "x3")["path"] is None  # and then it has been sent
    import_(b, tmp_path / "x1")
    assert import_(b, folder)["records"] == 1
    word = turns[0]["message"]["content"].split()[0]
    assert [h["session"]["orig_id"] for h in b.search(word)["hits"]] == [SA]


def test_a_turn_stamped_before_the_last_export_is_still_sent_after_a_rebuild(two, tmp_path):
    a, b = two
    turns = _later_turns()["clock stepped back"]
    folder = _exported_then(a, tmp_path, turns, "x")
    a.run("index", "--rebuild")  # every record read again under a new id: sent again, never lost
    export(a, folder)
    assert turns[0]["message"]["content"] in [ln["text"] for ln in batch_lines(folder)]
    import_(b, tmp_path / "x1")
    got = import_(b, folder)
    assert (got["records"], got["duplicates"]) == (1, 2)  # the other side keeps one copy of the rest
    assert b.search("SKEWED")["hits"]


def test_a_watermark_an_older_deja_kept_sends_again_rather_than_lose(two, tmp_path):
    a, _ = two
    session(a, SA, "why does checkout 500 on empty carts", "fixed by guarding empty carts")
    a.run("index")
    state = a.home / ".local" / "share" / "deja" / "sync-state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    # per transcript, the newest record time sent: here, later than any record
    state.write_text(json.dumps({"watermarks": {"": {str(a.claude_file(SA)): 4102444800000}}}))
    assert export(a, tmp_path / "x1")["records"] == 2
    assert export(a, tmp_path / "x2")["path"] is None
    assert "watermarks" not in json.loads(state.read_text()) or not json.loads(state.read_text())["watermarks"]
