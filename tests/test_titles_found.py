"""A name a person or an agent gave a session finds it, though no turn says it.

Claude Code writes `custom-title` (/rename) and `ai-title` lines, Codex a
`thread_name_updated` event, opencode and Cursor keep a chat's name in their
databases. Each distinct name becomes one title record where its first line
is (stages/normalize.py, ``names``): written once however often the harness
writes the line again, on a whole read and on appends alike.
"""

from __future__ import annotations

import json

import duckdb

from conftest import claude_user, write_jsonl

S = "7a1e0000-0000-4000-8000-000000000001"


def title_line(kind: str, text: str) -> dict:
    key = "customTitle" if kind == "custom-title" else "aiTitle"
    return {"type": kind, key: text, "sessionId": S}


def names(home) -> list[str]:
    if not list(home.index.glob("records/**/*.parquet")):
        return []
    con = duckdb.connect()
    rows = con.execute(f"SELECT text FROM read_parquet('{home.index}/records/**/*.parquet', hive_partitioning=true) "
                       "WHERE role = 'title' ORDER BY seq").fetchall()
    return [r[0] for r in rows]


def test_a_renamed_session_is_found_by_its_name_and_the_name_is_written_once(home):
    p = home.claude_file(S)
    write_jsonl(p, [
        claude_user(S, "the checkout page times out behind the proxy", "2026-03-02T10:00:00Z", "u1"),
        title_line("ai-title", "Checkout timeouts behind nginx"),
        title_line("custom-title", "upload saga"),
        claude_user(S, "try raising the body size limit", "2026-03-02T10:01:00Z", "u2", parent="u1"),
        title_line("custom-title", "upload saga"),  # (written again every turn)
    ])
    home.run("index")
    hits = home.search("upload", "saga")["hits"]
    assert [h["session"]["id"] for h in hits] == [S]
    assert hits[0]["tier"] == "exact"
    assert names(home) == ["Checkout timeouts behind nginx", "upload saga"]
    # turns appended, the name lines with them: nothing written twice
    write_jsonl(p, [title_line("ai-title", "Checkout timeouts behind nginx"), title_line("custom-title", "upload saga"),
                    claude_user(S, "it worked with 50m", "2026-03-02T10:02:00Z", "u3", parent="u2"),
                    title_line("custom-title", "upload saga")], "a")
    home.run("index")
    assert names(home) == ["Checkout timeouts behind nginx", "upload saga"]
    # renamed again: the new name is found too, and the old one still is
    write_jsonl(p, [title_line("custom-title", "proxy body limit fix")], "a")
    home.run("index")
    assert names(home) == ["Checkout timeouts behind nginx", "upload saga", "proxy body limit fix"]
    assert [h["session"]["id"] for h in home.search("proxy", "body", "limit", "fix")["hits"]] == [S]
    assert home.search("upload", "saga")["hits"][0]["session"]["title"] == "proxy body limit fix"
    # a whole read of the same file makes the same names
    home.run("index", "--rebuild")
    assert names(home) == ["Checkout timeouts behind nginx", "upload saga", "proxy body limit fix"]


def test_a_title_that_only_repeats_the_first_prompt_is_not_written_again(home):
    p = home.claude_file(S)
    write_jsonl(p, [
        claude_user(S, "why does   the cron job\nrun twice at midnight", "2026-03-02T10:00:00Z", "u1"),
        title_line("ai-title", "why does the cron job run twice…"),
    ])
    home.run("index")
    assert names(home) == []
    assert home.search("cron", "job")["hits"][0]["session"]["title"] == "why does the cron job run twice…"


def test_a_file_that_only_names_a_session_makes_no_session(home):
    write_jsonl(home.claude_file(S), [title_line("custom-title", "nothing said yet")])
    home.run("index")
    assert home.search("nothing", "said")["hits"] == []


def test_a_codex_thread_is_found_by_the_name_it_was_renamed_to(home):
    tid = "019b0000-0000-7000-8000-0000000000d1"
    line = lambda t, kind, payload: json.dumps({"timestamp": t, "type": kind, "payload": payload}) + "\n"  # noqa: E731
    p = home.codex_file(tid)
    p.write_text(
        line("2026-03-02T09:00:00.000Z", "session_meta", {"id": tid, "cwd": "/home/dev/src/api"})
        + line("2026-03-02T09:00:01.000Z", "response_item", {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "check the retry policy"}]})
        + line("2026-03-02T09:00:02.000Z", "event_msg", {"type": "thread_name_updated", "thread_name": "quokka audit"})
        + line("2026-03-02T09:00:03.000Z", "event_msg", {"type": "thread_name_updated", "thread_name": "quokka audit"}))
    home.run("index")
    hits = home.search("quokka")["hits"]
    assert [h["session"]["id"] for h in hits] == [tid]
    assert names(home) == ["quokka audit"]


def test_a_file_that_only_names_a_session_makes_no_name_until_it_has_a_turn(home):
    p = home.claude_file(S)
    write_jsonl(p, [title_line("custom-title", "nothing said yet")])
    home.run("index")
    write_jsonl(p, [title_line("custom-title", "nothing said yet")], "a")  # (an append of names only)
    home.run("index")
    assert names(home) == []
    write_jsonl(p, [claude_user(S, "now a question about kiwis", "2026-03-02T10:00:00Z", "u1")], "a")
    home.run("index")
    assert names(home) == ["nothing said yet"]


def part(title="", rank=1, harness="opencode", messages=("what was said",), **kw):
    from deja.stages.sources.base import Message, SessionPart

    return SessionPart(harness, "s1", title=title, title_rank=rank,
                       messages=[Message("user", t, ts=1_700_000_000_000 + i, byte_offset=i) for i, t in enumerate(messages)],
                       **kw)


def titled(*parts) -> list[str]:
    from deja.stages import normalize

    cols, _ = normalize.to_columns(list(parts), "/p")
    return [t for r, t in zip(cols["role"], cols["text"]) if r == "title"]


def test_a_placeholder_is_no_name_and_the_session_is_titled_by_its_first_prompt():
    from deja.stages import normalize

    for placeholder in ("New session - 2026-03-02T10:00:00.000Z", "Child session - 2026-03-02T10:00:00.000Z",
                        "New Session", "New Chat", "new thread", "Untitled", "New Conversation 2"):
        p = part(placeholder)
        assert titled(p) == [], placeholder
        assert (p.title, p.title_rank) == ("", 0)
    for name in ("New session handling for SSO", "Untitled pages 404", "Chat export"):
        assert titled(part(name)) == [name]
    _, meta = normalize.to_columns([part("New session - 2026-03-02T10:00:00.000Z", messages=("fix the kiwi cache",))], "/p")
    assert meta["opencode:s1"]["title"] == ""  # (derived from the first prompt when the sessions are made)


def test_a_synced_in_session_from_an_older_deja_is_named_by_its_batch_title():
    from deja.stages.sources.base import Message

    old = part("flaky CI on arm runners", harness="codex", from_machine="laptop")
    assert titled(old) == ["flaky CI on arm runners"]
    new = part("flaky CI on arm runners", harness="codex", from_machine="laptop")
    new.messages.append(Message("title", "flaky CI on arm runners", byte_offset=9))
    assert titled(new) == ["flaky CI on arm runners"]  # its own title record, not a second one
