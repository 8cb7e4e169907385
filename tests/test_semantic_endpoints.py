"""Real endpoints misbehave: they rate-limit, cap a request's size, refuse one
text they cannot embed, answer NaN, or cut a reply short. `deja embed` keeps
going where it can and keeps what it did where it cannot; a search answers
with its words and one notice; nothing is a traceback.

Each endpoint is tests/embed_server.py started by the test, told how to
misbehave.
"""

from __future__ import annotations

import contextlib
import json

from test_semantic import (CACHE, NEW, PARAPHRASE, POOL, UP, _server, embed, http_env, requests, server,  # noqa: F401
                           session, three_sessions, vector_rows)


@contextlib.contextmanager
def endpoint(tmp_path, *how):
    """The test's embedding server, misbehaving as told: (url base, request log)."""
    gen = _server(tmp_path, *how)
    try:
        yield next(gen)
    finally:
        gen.close()


def test_a_passage_the_model_cannot_embed_is_left_out_and_the_rest_are_kept(home, tmp_path):
    three_sessions(home)
    session(home, "5e000000-0000-4000-8000-0000000000b1", "the poisoned question about quux",
            "quux cannot be embedded by this model", day="2026-03-05")
    home.run("index")
    with endpoint(tmp_path, "--refuse", "quux") as (url, log):
        got = embed(home, http_env(url))
        assert (got["records"], got["refused"], got["coverage"]) == (8, 2, 0.75)  # its two records have none
        assert got["passages"] == 6
        keys = {k for _, k, _ in vector_rows(home)}
        assert {UP, POOL, CACHE} <= {k.split(":", 1)[1] for k in keys}
        before = len(requests(log))
        again = embed(home, http_env(url))  # asked again, refused again: nothing else asked
        assert (again["refused"], again["passages"]) == (2, 0)
        asked = {t for r in requests(log)[before:] for t in r["texts"]}
        assert all("quux" in t for t in asked - {"hello"})  # (and a text any model embeds, to tell)
        assert home.search(*PARAPHRASE.split(), extra_env=http_env(url))["hits"][0]["session"]["id"] == UP


def test_an_endpoint_that_refuses_everything_fails_the_run_and_keeps_what_it_made(home, tmp_path):
    three_sessions(home)
    home.run("index")
    with endpoint(tmp_path, "--fail-after", "0") as (url, _):  # a model that crashed: a 500 for everything
        failed = embed(home, http_env(url), check=False)
        assert failed.returncode == 1 and failed.stderr.count("\n") == 1
        assert "answered 500" in failed.stderr and "0 passages embedded and kept" in failed.stderr


def test_a_rate_limited_endpoint_is_asked_again_after_its_retry_after(home, tmp_path):
    three_sessions(home)
    home.run("index")
    with endpoint(tmp_path, "--busy", "2") as (url, log):
        got = embed(home, http_env(url))
        assert (got["passages"], got["refused"], got["coverage"]) == (6, 0, 1.0)


def test_a_server_that_takes_few_texts_a_request_is_asked_in_requests_it_takes(home, tmp_path):
    for i in range(12):
        session(home, f"5e000000-0000-4000-8000-0000000001{i:02d}", f"question number {i} about widgets",
                f"answer number {i}", day=f"2026-03-{i + 1:02d}")
    home.run("index")
    with endpoint(tmp_path, "--most", "3") as (url, log):
        got = embed(home, http_env(url))
        assert (got["passages"], got["refused"]) == (24, 0)
        sizes = [r["n"] for r in requests(log)]
        assert sum(n > 3 for n in sizes) <= 3  # refused for their size; the rest sized to the server's limit
    before = len(requests(log))
    # DEJA_EMBED_BATCH: never more than the setting (the server logs to the same file)
    with endpoint(tmp_path, "--most", "2") as (url, log):
        got = embed(home, dict(http_env(url), DEJA_EMBED_BATCH="2"), "--rebuild")
        assert got["passages"] == 24 and max(r["n"] for r in requests(log)[before:]) <= 2


def test_a_vector_of_nulls_is_no_vector(home, tmp_path):
    three_sessions(home)
    home.run("index")
    with endpoint(tmp_path, "--nulls", "memcached") as (url, _):
        env = http_env(url)
        got = embed(home, env)
        assert got["refused"] == 1  # the one passage holding the word
        # a question whose own vector comes back null: its words answer, with one notice
        said = home.run("search", "--json", "memcached", "evicting", extra_env=env)
        assert json.loads(said.stdout)["hits"][0]["session"]["id"] == CACHE
        assert said.stderr.count("\n") == 1 and "not one" in said.stderr
        # the vectors themselves hold only numbers: a search by meaning still ranks
        assert home.search(*PARAPHRASE.split(), extra_env=env)["hits"][0]["session"]["id"] == UP


def test_vectors_an_older_deja_kept_with_nans_do_not_turn_every_cosine_to_nan(home, tmp_path, server):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    env = http_env(server[0])
    three_sessions(home)
    home.run("index")
    embed(home, env)
    meta = json.loads((home.index / "vectors" / "meta.json").read_text())
    path = home.index / "vectors" / meta["parts"][0]["file"]
    t = pq.read_table(path)
    vecs = t.column("vec").to_pylist()
    vecs[0] = [float("nan")] * len(vecs[0])
    t = t.set_column(t.schema.get_field_index("vec"), t.schema.field("vec"),
                     pa.array(vecs, type=t.schema.field("vec").type))
    pq.write_table(t.replace_schema_metadata(t.schema.metadata), path)
    meta["parts"][0]["bytes"] = path.stat().st_size
    (home.index / "vectors" / "meta.json").write_text(json.dumps(meta))
    hits = home.search(*PARAPHRASE.split(), extra_env=env)["hits"]
    assert hits and hits[0]["session"]["id"] == UP
    assert all(np.isfinite(h["score"]) for h in hits)


def test_a_reply_cut_short_is_one_line_and_the_search_answers_with_its_words(home, tmp_path, server):
    three_sessions(home)
    home.run("index")
    embed(home, http_env(server[0]))
    with endpoint(tmp_path, "--cut") as (url, _):
        env = http_env(url)
        said = home.run("search", "--json", "memcached", "evicting", extra_env=env)
        assert said.returncode == 0
        assert json.loads(said.stdout)["hits"][0]["session"]["id"] == CACHE
        assert said.stderr.count("\n") == 1 and "not a whole HTTP reply" in said.stderr
        session(home, "5e000000-0000-4000-8000-0000000000b2", "one more turn", "to embed", day="2026-03-09")
        home.run("index")
        failed = embed(home, env, check=False)
        assert failed.returncode == 1 and failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr
        # the prompt hook says nothing of it, and still recalls by words
        hook = home.run("hook-prompt", extra_env=env, check=False)
        assert hook.returncode == 0 and "Traceback" not in hook.stderr


def test_a_quoted_phrase_a_session_holds_stays_literal(home, server):
    env = http_env(server[0])
    three_sessions(home)
    home.run("index")
    embed(home, env)
    got = home.search('"raised that limit"', extra_env=env)
    assert got["tier"] == "exact" and not got.get("semantic")
    assert [h["session"]["id"] for h in got["hits"]] == [UP]


def test_a_misconfigured_source_is_said_as_such_and_the_vectors_own_model_still_answers(home, server):
    env = http_env(server[0])
    three_sessions(home)
    home.run("index")
    embed(home, env)
    broken = {"DEJA_EMBED_URL": server[0] + "/api/embed"}  # no model named
    doc = home.run("doctor", extra_env=broken, check=False)
    assert "misconfigured: DEJA_EMBED_URL is set but DEJA_EMBED_MODEL is not" in doc.stdout + doc.stderr
    assert "will embed anew" not in doc.stdout + doc.stderr
    said = home.run("search", "--json", *PARAPHRASE.split(), extra_env=broken)
    assert "DEJA_EMBED_MODEL is not" in said.stderr  # the notice names what is wrong


def test_a_session_with_no_evidence_of_meaning_is_not_served_by_it(home, server):
    """A session only the vectors found is served when it is above the
    question's centre or nearer than the store's average passage; one that is
    neither (no nearer than anything else) is not."""
    env = http_env(server[0])
    three_sessions(home)
    home.run("index")
    embed(home, env)
    for q in (("memcached", "evicting"), ("zzqx", "vvbnm"), PARAPHRASE.split()):
        for h in home.search(*q, extra_env=env)["hits"]:
            if h["tier"] == "semantic":
                assert h["score"] > 0 or float(h["tier_detail"].split()[-1]) > 0, (q, h)


def test_sessions_shown_by_meaning_alone_are_marked_so(home, server):
    from test_mcp import Client, _text

    env = http_env(server[0])
    three_sessions(home)
    session(home, NEW, "our reverse gateway began rejecting huge bodies after the upgrade",
            "Lifted the gateway's limit for bodies.", day="2026-03-06")
    home.run("index")
    embed(home, env)
    said = home.run("search", "nginx", "client_max_body_size", extra_env=env)
    hits = home.search("nginx", "client_max_body_size", extra_env=env)["hits"]
    semantic = [h for h in hits if h["tier"] == "semantic"]
    assert hits[0]["session"]["id"] == UP and NEW in [h["session"]["id"] for h in semantic]
    assert f"{len(semantic)} shown by meaning alone" in said.stderr.splitlines()[0]
    assert said.stdout.count("(by meaning)") == len(semantic)
    mcp = Client(dict(home.env, **env))
    try:
        mcp.initialize()
        text = _text(mcp.call(1, "recall", {"query": "nginx client_max_body_size", "limit": 10}))
    finally:
        mcp.close()
    assert text.count("by meaning") == len(semantic)
