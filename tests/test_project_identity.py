"""Project identity (issue 13): one project per repository whatever the harness
and wherever in it the agent ran, distinct projects for repositories that share
their last two segments, and one ``--project`` rule for every command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl


def claude_session(home: Home, sid: str, cwd: str, ask: str, answer: str, day: str = "2026-03-02") -> None:
    rows = [claude_user(sid, ask, f"{day}T10:00:00Z", f"u-{sid}", cwd=cwd),
            claude_assistant(sid, [{"type": "text", "text": answer}], f"{day}T10:01:00Z", f"a-{sid}",
                             msg_id=f"m-{sid}", cwd=cwd, parent=f"u-{sid}")]
    write_jsonl(home.claude_file(sid, cwd=cwd), rows)


def codex_session(home: Home, sid: str, cwd: str, ask: str, answer: str, ts: str = "2026-03-05T09:00:00") -> None:
    rows = [{"timestamp": ts + ".000Z", "type": "session_meta",
             "payload": {"id": sid, "cwd": cwd, "cli_version": "0.118.0", "git": {"branch": "main"}}}]
    for i, (role, kind, text) in enumerate((("user", "input_text", ask), ("assistant", "output_text", answer))):
        rows.append({"timestamp": f"{ts[:-2]}{10 + i:02d}.000Z", "type": "response_item",
                     "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}})
    write_jsonl(home.codex_file(sid, stamp=ts.replace(":", "-")), rows)


def repo(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path


def last(home: Home, *args: str) -> list[dict]:
    return json.loads(home.run("last", "--json", *args).stdout)["sessions"]


def hook_context(home: Home, cwd: Path) -> str:
    payload = {"session_id": "live-session", "transcript_path": None, "cwd": str(cwd),
               "hook_event_name": "SessionStart", "source": "startup"}
    proc = subprocess.run(deja_cmd() + ["hook-context", "--plain"], input=json.dumps(payload).encode(),
                          env=home.env, capture_output=True, timeout=60)
    assert proc.returncode == 0
    return proc.stdout.decode()


def sessions_table(home: Home) -> list[tuple]:
    return duckdb.sql(f"SELECT session_id, project, project_root FROM read_parquet('{home.index}/sessions/*.parquet') "
                      "ORDER BY session_id").fetchall()


CLAUDE_ID = "11111111-1111-4111-8111-111111111111"
CODEX_ID = "019a0000-0000-7000-8000-000000000002"


def volcano(home: Home) -> Path:
    """A repository with a Claude session at its root and a Codex one in a subfolder."""
    root = repo(home.home / "github" / "volcano")
    (root / "src" / "lava").mkdir(parents=True)
    claude_session(home, CLAUDE_ID, str(root), "why does the lava flow model diverge at the vent?",
                   "The lava flow solver used a fixed step; decided: adaptive timestep for the vent region.")
    codex_session(home, CODEX_ID, str(root / "src" / "lava") + "/", "tune the lava flow viscosity table please",
                  "Lava flow viscosity now comes from the measured table; decided: interpolate in log space.")
    return root


def test_a_claude_and_a_codex_session_in_one_repository_share_one_project(tmp_path):
    home = Home(tmp_path)
    root = volcano(home)
    home.run("index")
    ids = {CLAUDE_ID, CODEX_ID}
    both = last(home)
    assert {s["id"] for s in both} == ids
    assert {s["project"] for s in both} == {"github/volcano"}
    assert {s["project_root"] for s in both} == {str(root)}  # the session object names the root too
    hits = home.search("lava", "flow", "--project", "github/volcano")["hits"]
    assert {h["session"]["id"] for h in hits} == ids
    assert {s["id"] for s in last(home, "--project", "github/volcano")} == ids
    stats = json.loads(home.run("stats", "--json").stdout)
    assert stats["top_projects"] == [{"project": "github/volcano", "sessions": 2}]
    # SessionStart in a third folder of the same repository recalls both
    (root / "docs").mkdir()
    ctx = hook_context(home, root / "docs")
    assert "Recent sessions in github/volcano" in ctx
    assert f"deja:{CLAUDE_ID[:8]}" in ctx and f"deja:{CODEX_ID[:8]}" in ctx
    # analysts get the root beside the name, in the sessions and in the records
    assert {r[1:] for r in sessions_table(home)} == {("github/volcano", str(root))}
    roots = duckdb.sql(f"SELECT DISTINCT project, project_root FROM read_parquet('{home.index}/records/*/*/*.parquet', "
                       "hive_partitioning = true)").fetchall()
    assert roots == [("github/volcano", str(root))]


def test_two_repositories_with_the_same_last_two_segments_stay_apart(tmp_path):
    home = Home(tmp_path)
    first = repo(home.home / "a" / "buildroot" / "dl")
    second = repo(home.home / "b" / "buildroot" / "dl")
    claude_session(home, CLAUDE_ID, str(first), "why is the toolchain download cached twice here?",
                   "The toolchain download cache key ignored the mirror; decided: key on the mirror url.")
    codex_session(home, CODEX_ID, str(second), "the kernel download hangs behind the proxy again",
                  "The kernel download hangs on the proxy CONNECT; decided: set the proxy for wget as well.")
    home.run("index")
    assert {(s["id"], s["project"]) for s in last(home)} == {(CLAUDE_ID, "a/buildroot/dl"), (CODEX_ID, "b/buildroot/dl")}
    assert [s["id"] for s in last(home, "--project", "a/buildroot/dl")] == [CLAUDE_ID]
    assert {s["id"] for s in last(home, "--project", "buildroot/dl")} == {CLAUDE_ID, CODEX_ID}  # a suffix of both
    ctx = hook_context(home, first)
    assert f"deja:{CLAUDE_ID[:8]}" in ctx and CODEX_ID[:8] not in ctx
    stats = json.loads(home.run("stats", "--json").stdout)
    assert sorted(p["project"] for p in stats["top_projects"]) == ["a/buildroot/dl", "b/buildroot/dl"]


def test_project_filter_takes_the_display_name_a_path_suffix_or_an_absolute_path(tmp_path):
    home = Home(tmp_path)
    root = volcano(home)
    other = repo(home.home / "work" / "glacier")
    claude_session(home, "22222222-2222-4222-8222-222222222222", str(other), "glacier lava flow comparison notes",
                   "Glacier melt is not a lava flow; decided: keep the two models apart.", day="2026-03-03")
    home.run("index")
    ids = {CLAUDE_ID, CODEX_ID}
    for value in ("github/volcano", "volcano", "GitHub/Volcano", str(root), str(root / "src" / "lava"),
                  "~/github/volcano/", str(home.home / "github" / "volcano" / ".." / "volcano")):
        assert {s["id"] for s in last(home, "--project", value)} == ids, value
        assert {h["session"]["id"] for h in home.search("lava", "flow", "--project", value)["hits"]} == ids, value
    assert last(home, "--project", "cano") == []  # a suffix ends at a path segment
    assert last(home, "--project", "github") == []


def test_a_cwd_whose_repository_is_gone_falls_back_to_the_normalised_cwd(tmp_path):
    home = Home(tmp_path)
    gone = tmp_path / "gone" / "Shop" / "api"  # was inside a repository at gone/Shop: never created here
    claude_session(home, CLAUDE_ID, str(gone) + "/", "the checkout api returns 500 on empty carts",
                   "The checkout api divided by the item count; decided: guard empty carts.")
    codex_session(home, CODEX_ID, str(gone), "checkout api empty cart again", "Guarded the empty cart path.")
    win = "33333333-3333-4333-8333-333333333333"
    claude_session(home, win, "C:\\Users\\Ann\\Vault\\", "vault sync conflicts on windows", "Use the vault's lock.")
    codex_session(home, "019a0000-0000-7000-8000-000000000004", "c:/users/ann/vault",
                  "vault sync again", "The vault lock holds.", ts="2026-03-06T09:00:00")
    home.run("index")
    rows = sessions_table(home)
    assert {r[1:] for r in rows if r[0] in (CLAUDE_ID, CODEX_ID)} == {("Shop/api", str(gone))}
    assert {r[1:] for r in rows if r[0] not in (CLAUDE_ID, CODEX_ID)} == {("Ann/Vault", "c:/users/ann/vault")}


def test_a_later_repository_with_the_same_ending_renames_the_first_on_the_next_run(tmp_path):
    home = Home(tmp_path)
    first = repo(home.home / "a" / "buildroot" / "dl")
    claude_session(home, CLAUDE_ID, str(first), "why is the toolchain download cached twice here?",
                   "The toolchain download cache key ignored the mirror; decided: key on the mirror url.")
    home.run("index")
    assert [s["project"] for s in last(home)] == ["buildroot/dl"]  # the short form while it is unique
    second = repo(home.home / "b" / "buildroot" / "dl")
    codex_session(home, CODEX_ID, str(second), "the kernel download hangs behind the proxy again",
                  "The kernel download hangs on the proxy CONNECT; decided: set the proxy for wget as well.")
    home.run("index")  # an append-only run: the untouched session is renamed too
    assert {(s["id"], s["project"]) for s in last(home)} == {(CLAUDE_ID, "a/buildroot/dl"), (CODEX_ID, "b/buildroot/dl")}


def catalog_roots(home: Home) -> set[str]:
    con = duckdb.connect(str(home.index / "catalog.duckdb"), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT DISTINCT project_root FROM file_sessions").fetchall()}
    finally:
        con.close()


def test_a_repository_reached_through_a_symlink_is_one_project_with_its_real_path(tmp_path):
    home = Home(tmp_path)
    root = repo(home.home / "src" / "shop")
    link = home.home / "links" / "shop"
    link.parent.mkdir()
    link.symlink_to(root)
    (root / "api").mkdir()
    claude_session(home, CLAUDE_ID, str(link), "the checkout total drifts by a cent on refunds",
                   "Refund totals were rounded per line; decided: round once on the total.")
    codex_session(home, CODEX_ID, str(root / "api"), "checkout total rounding on refunds again",
                  "Rounded once on the total, as decided.")
    home.run("index")
    ids = {CLAUDE_ID, CODEX_ID}
    assert {(s["project"], s["project_root"]) for s in last(home)} == {("src/shop", str(root))}
    for spelling in (str(link), str(root), str(link / "api"), "~/links/shop"):
        assert {s["id"] for s in last(home, "--project", spelling)} == ids, spelling
    ctx = hook_context(home, link)
    assert f"deja:{CLAUDE_ID[:8]}" in ctx and f"deja:{CODEX_ID[:8]}" in ctx


def test_a_root_named_anew_by_a_later_rule_joins_its_project_without_a_rebuild(tmp_path):
    """A store indexed while a session's folder did not resolve (its link not
    there yet, as under an older deja that never resolved links) names the
    root anew on the next run that changes anything, and keeps it."""
    home = Home(tmp_path)
    root = repo(home.home / "src" / "shop")
    link = home.home / "links" / "shop"
    claude_session(home, CLAUDE_ID, str(link), "the checkout total drifts by a cent on refunds",
                   "Refund totals were rounded per line; decided: round once on the total.")
    home.run("index")
    assert {s["project_root"] for s in last(home)} == {str(link)}
    link.parent.mkdir()
    link.symlink_to(root)
    codex_session(home, CODEX_ID, str(root), "checkout total rounding on refunds again",
                  "Rounded once on the total, as decided.")
    home.run("index")  # reads only the new rollout
    assert {(s["id"], s["project_root"]) for s in last(home)} == {(CLAUDE_ID, str(root)), (CODEX_ID, str(root))}
    assert catalog_roots(home) == {str(root)}  # kept: the next runs need not name it again
