"""Search through the real `deja` command: tiers, AND and phrase semantics,
filters, the schema_version 2 envelope, identifiers and non-Latin text."""

from __future__ import annotations

import json
import time

import pytest

from conftest import Home, at_one_moment, claude_session, sid, write_jsonl


def codex_session(home: Home, session: str, cwd: str, turns: list[tuple[str, str]], ts: str = "2026-03-05T09:00:00") -> None:
    p = home.codex_file(session, stamp=ts.replace(":", "-"))
    rows = [{"timestamp": ts + ".000Z", "type": "session_meta",
             "payload": {"id": session, "cwd": cwd, "cli_version": "0.118.0", "git": {"branch": "main"}}}]
    for i, (role, text) in enumerate(turns):
        kind = "input_text" if role == "user" else "output_text"
        rows.append({"timestamp": f"{ts[:-2]}{10 + i:02d}.000Z", "type": "response_item",
                     "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}})
    write_jsonl(p, rows)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("search"))
    claude_session(home, 1, [
        ("user", "checkout returns 500 when the connection pool is exhausted under load"),
        ("assistant", "I looked at app/db.py. The root cause was pool_size=5; we raised it to 20 and added a timeout."),
    ])
    claude_session(home, 2, [
        ("user", "the connection to redis drops every night"),
        ("assistant", "The pool of workers restarts at midnight; the redis client reconnects fine."),
    ], cwd="/home/dev/src/cache")
    claude_session(home, 3, [
        ("user", "where is parse_config defined and why does UserService.login fail?"),
        ("assistant", "parse_config lives in src/config.py; UserService.login fails at main.go:42 on a nil session."),
    ], cwd="/home/dev/src/auth")
    claude_session(home, 4, [
        ("user", "почему падает сборка после обновления зависимостей?"),
        ("assistant", "Сборка падает из-за несовместимой версии библиотеки protobuf."),
    ], cwd="/home/dev/src/build")
    claude_session(home, 5, [
        ("user", "数据库连接超时怎么办"),
        ("assistant", "把连接池的超时时间调大到30秒。"),
    ], cwd="/home/dev/src/db")
    claude_session(home, 6, [
        ("user", "run the test suite"),
        ("bash", "pytest -x tests/test_orders.py -k totals_regression"),
        ("output", "Traceback (most recent call last):\n  File \"/tmp/pytest-31/test_orders.py\", line 88, in test_total\nKeyError: 'discount_code'"),
        ("assistant", "The fix was to default discount_code to None in orders/total.py."),
    ], cwd="/home/dev/src/orders")
    claude_session(home, 7, [
        ("user", "rotating the signing keys for the webhook service"),
        ("assistant", "Key rotation is done; the old keys are revoked."),
    ], cwd="/home/dev/src/hooks")
    codex_session(home, "019c0000-0000-7000-8000-000000000001", "/home/dev/src/api", [
        ("user", "the integration tests are flaky on CI"),
        ("assistant", "The flaky test shared a temp dir; it now uses t.TempDir and passes 50 runs in a row."),
    ])
    home.run("index")
    return home


def ids(env):
    return [h["session"]["id"] for h in env["hits"]]


def test_exact_and_is_per_record(corpus):
    res = corpus.search("connection", "pool", "exhausted")
    assert res["tier"] == "exact" and ids(res) == [sid(1)]
    # "connection" and "pool" both occur in session 2, but never in one message
    assert sid(2) not in ids(corpus.search("connection", "pool"))


def test_quoted_phrase_must_be_contiguous(corpus):
    assert ids(corpus.search('"connection pool is exhausted"')) == [sid(1)]
    assert ids(corpus.search('"pool connection"')) == []


def test_envelope_matches_the_contract_field_by_field(corpus):
    res = corpus.search("connection", "pool", "exhausted")
    assert set(res) >= {"schema_version", "tier", "total", "hits"}
    assert res["schema_version"] == 2 and res["total"] == 1 and "capped" not in res
    hit = res["hits"][0]
    assert set(hit) == {"session", "count", "snippets", "score", "tier"}
    assert hit["tier"] == "exact" and isinstance(hit["score"], float) and hit["count"] == 1
    s = hit["session"]
    assert s["harness"] == "claude" and s["id"] == sid(1) and s["project"] == "src/shop"
    assert s["source"] == {"origin": "local"}
    assert s["started"] == "2026-03-02T10:00:00Z" and s["updated"] == "2026-03-02T10:01:00Z"
    assert s["path"].endswith(f"{sid(1)}.jsonl") and s["title"].startswith("checkout returns 500")
    # the decision line leads the snippets (§5.3)
    assert hit["snippets"][0].startswith("The root cause was pool_size=5")
    assert any("connection pool is exhausted" in x for x in hit["snippets"])


def test_limit_caps_and_all_lifts_the_cap(corpus):
    res = corpus.search("the", "--limit", "1")
    assert len(res["hits"]) == 1 and res.get("capped") is True and res["total"] > 1
    assert len(corpus.search("the", "--all")["hits"]) == res["total"]


def test_filters(corpus):
    assert ids(corpus.search("flaky", "--harness", "codex")) == ["019c0000-0000-7000-8000-000000000001"]
    assert ids(corpus.search("flaky", "--harness", "claude")) == []
    assert ids(corpus.search("connection", "--project", "CACHE")) == [sid(2)]
    assert ids(corpus.search("connection", "--since", "1d")) == []  # all sessions are older
    assert set(ids(corpus.search("connection", "--since", "100000d"))) >= {sid(1), sid(2)}
    assert ids(corpus.search("connection", "--session", sid(2))) == [sid(2)]


def test_work_roles_only_when_asked(corpus):
    assert ids(corpus.search("totals_regression")) == []  # the command is not speech
    assert ids(corpus.search("totals_regression", "--role", "command")) == [sid(6)]
    assert ids(corpus.search("keyerror", "--role", "tool")) == [sid(6)]


def test_identifier_queries(corpus):
    assert ids(corpus.search("parse_config")) == [sid(3)]
    assert ids(corpus.search("UserService.login")) == [sid(3)]
    assert ids(corpus.search("main.go:42")) == [sid(3)]
    assert ids(corpus.search("userservice")) == [sid(3)]


def test_non_latin_queries(corpus):
    assert ids(corpus.search("сборка", "protobuf")) == [sid(4)]
    assert ids(corpus.search("连接池")) == [sid(5)]


def test_stemmed_tier_finds_other_word_forms(corpus):
    res = corpus.search("rotated", "signing", "key")
    assert res["tier"] == "stemmed" and ids(res)[0] == sid(7)


def test_close_tier_for_a_misspelling(corpus):
    res = corpus.search("exhuasted")
    assert res["tier"] == "close" and ids(res) == [sid(1)]
    # the spelling it was found by, as the JSON contract gives it
    assert res["fuzzy"] is True and res["variants"] == ["exhausted"]
    assert res["hits"][0]["tier_detail"] == "exhuasted → exhausted"


def test_close_tier_for_a_substring(corpus):
    res = corpus.search("tempdi")
    assert res["tier"] == "close" and ids(res) == ["019c0000-0000-7000-8000-000000000001"]


def test_error_tier_matches_a_pasted_error_with_other_numbers(corpus):
    res = corpus.search('File "/tmp/pytest-77/test_orders.py", line 91, in test_total KeyError: discount_code')
    assert res["tier"] == "error" and ids(res)[0] == sid(6)


def test_relevance_tier_for_a_natural_question(corpus):
    res = corpus.search("why", "were", "integration", "runs", "flaky", "on", "ci?")
    assert res["tier"] == "relevance" and ids(res)[0] == "019c0000-0000-7000-8000-000000000001"


def test_regex_scan(corpus):
    res = corpus.search("--re", r"pool_size=\d+")
    assert ids(res) == [sid(1)] and "pool_size=5" in res["hits"][0]["snippets"][0]


def test_a_regex_search_keeps_every_filter(corpus):
    """--since and --session narrow a --re search as they narrow any other."""
    everywhere = ids(corpus.search("--re", r"(?i)pool"))
    assert sid(1) in everywhere and len(everywhere) > 1
    assert ids(corpus.search("--re", r"(?i)pool", "--session", sid(1))) == [sid(1)]
    assert ids(corpus.search("--re", r"(?i)pool", "--since", "100000d")) == everywhere
    assert corpus.search("--re", r"(?i)pool", "--since", "1h")["hits"] == []


# Lines of 40 characters on which a backtracking engine takes exponential time
# (25 already take seconds in Python's `re`): RE2 answers in linear time.
_XS = "\n".join("x" * 40 for _ in range(100))
_AS = "\n".join("a" * 40 + "!" for _ in range(100))


@pytest.fixture(scope="module")
def long_lines(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("regex"))
    claude_session(home, 21, [("user", "the build log"), ("assistant", _XS + "\nthe tail: xxy")])
    claude_session(home, 22, [("user", "the test log"), ("assistant", _AS + "\n" + "a" * 50)])
    claude_session(home, 23, [("user", "the lint log"), ("assistant", _XS)])
    home.run("index")
    return home


@pytest.mark.parametrize("pattern,plain", [("(.*)*y", "y"), ("(a+)+$", "a$"), ("(x+x+)+y", "xxy")])
def test_pathological_regex_answers_within_a_second_with_the_plain_regexs_hits(long_lines, pattern, plain):
    # the issue asks for "within a second"; 3 s (a whole `deja` process on a
    # shared CI machine) keeps it from flaking while a backtracking engine
    # would take minutes on these lines
    t0 = time.monotonic()
    res = long_lines.search("--re", pattern, timeout=10)
    assert time.monotonic() - t0 < 3
    want = long_lines.search("--re", plain)
    assert ids(res) == ids(want) and ids(res)
    assert [h["snippets"] for h in res["hits"]] == [h["snippets"] for h in want["hits"]]


def test_regex_snippet_is_the_line_of_the_match(long_lines):
    res = long_lines.search("--re", r"tail: x+y")
    assert ids(res) == [sid(21)] and res["hits"][0]["snippets"] == ["the tail: xxy"]
    res = long_lines.search("--re", r"(?i)THE (?:BUILD|LINT) LOG")
    assert sorted(ids(res)) == [sid(21), sid(23)]
    assert all(h["snippets"][0].startswith("the ") for h in res["hits"])


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=x)", "(?<!x)a", "(unclosed"])
def test_regex_re2_rejects_is_one_line_error(corpus, pattern):
    for fmt in ([], ["--json"]):
        proc = corpus.run("search", *fmt, "--re", pattern, check=False)
        assert proc.returncode == 1 and proc.stdout == ""
        assert proc.stderr.startswith("deja: --re: ") and proc.stderr.count("\n") == 1, proc.stderr


def test_empty_result_and_bad_flags(corpus):
    proc = corpus.run("search", "--json", "zzzqqqxxx")
    assert proc.returncode == 0 and json.loads(proc.stdout)["hits"] == [] and "no session matches" in proc.stderr
    for args in (["--harness", "vim"], ["--role", "nope"], ["--limit", "101"], ["--since", "yesterday"], ["--re", "("]):
        proc = corpus.run("search", *args, "pool", check=False)
        assert proc.returncode == 1 and proc.stderr.startswith("deja: ") and "Traceback" not in proc.stderr


def test_bare_words_search_and_text_output(corpus):
    proc = corpus.run("connection", "pool", "exhausted")
    assert sid(1)[:12] in proc.stdout and "root cause" in proc.stdout
    assert "1 session (exact)" in proc.stderr


# ---- ranking ------------------------------------------------------------------

def _day(days_ago: int) -> str:
    import datetime as dt

    return (dt.date.today() - dt.timedelta(days=days_ago)).isoformat()


@pytest.fixture(scope="module")
def ranking(tmp_path_factory):
    """Sessions that tell the ranking rules apart; ids from sid(100) on."""
    home = Home(tmp_path_factory.mktemp("ranking"))
    # the same story twice: one told about 75 days ago, one last week
    claude_session(home, 100, [
        ("user", "the nightly avatar export crashed on unicode filenames"),
        ("assistant", "The avatar export now normalises unicode filenames to NFC before zipping."),
    ], cwd="/home/dev/src/media", day=_day(75))
    claude_session(home, 101, [
        ("user", "the nightly avatar export crashed on unicode filenames again"),
        ("assistant", "Retried the avatar export with unicode filenames; it passed."),
    ], cwd="/home/dev/src/media", day=_day(6))
    # a person names the problem; elsewhere a long log repeats its words
    claude_session(home, 102, [
        ("user", "the thumbnail worker leaks memory until the kernel kills it"),
        ("assistant", "Capped the thumbnail worker pool at four and freed the decoder buffers; memory is flat now."),
    ], cwd="/home/dev/src/media", day=_day(30))
    log = "\n".join(f"{i:05d} INFO thumbnail worker {i % 7} memory rss={200 + i}MB queue=ok heartbeat sent"
                    for i in range(400))
    claude_session(home, 103, [
        ("user", "tail the service logs"),
        ("bash", "kubectl logs deploy/media --tail 400"),
        ("output", log),
        ("assistant", "Logs look normal."),
    ], cwd="/home/dev/src/media", day=_day(30))
    # the rarest word is the one to keep when words must go
    claude_session(home, 104, [
        ("user", "the ledger csv export dies after sixty seconds on big accounts"),
        ("assistant", "Streamed the csv export in pages instead of building it in memory."),
    ], cwd="/home/dev/src/ledger", day=_day(40))
    for n in (105, 106, 107):
        claude_session(home, n, [
            ("user", f"ledger export job {n} hit a timeout"),
            ("assistant", "Raised the limit to five minutes; no timeout since."),
            ("user", "any timeout overnight?"),
            ("assistant", "No timeout overnight."),
        ], cwd="/home/dev/src/ledger", day=_day(40))
    # every word in one session, though no message holds them all
    claude_session(home, 108, [
        ("user", "product pages log a hydration error on first load"),
        ("assistant", "The server renders the date in UTC and the browser in local time; "
                      "formatting it on the client fixed it."),
    ], cwd="/home/dev/src/shop-web", day=_day(50))
    claude_session(home, 109, [
        ("user", "hydrate the dashboard error data from the cache"),
        ("assistant", "Done."),
    ], cwd="/home/dev/src/shop-web", day=_day(50))
    home.run("index")
    return home


def test_time_words_rank_and_do_not_filter(ranking):
    import calendar
    import datetime as dt

    month = calendar.month_name[(dt.date.today() - dt.timedelta(days=75)).month]
    # without a time, the newer telling leads; naming the month lifts the one told then
    assert ids(ranking.search("avatar", "export", "unicode", "filenames"))[:2] == [sid(101), sid(100)]
    res = ranking.search(f"in {month} the avatar export crashed on unicode filenames, what did we do?")
    assert ids(res)[:2] == [sid(100), sid(101)]
    # the month's name is no word the sessions must hold
    assert month.lower() not in " ".join(res["hits"][0]["snippets"]).lower()


def test_a_long_log_does_not_outrank_people_saying_it(ranking):
    res = ranking.search("thumbnail", "worker", "memory")
    assert ids(res)[0] == sid(102) and sid(103) in ids(res)


def test_the_commonest_word_is_dropped_first(ranking):
    proc = ranking.run("search", "--json", "ledger", "csv", "export", "timeout")
    assert ids(json.loads(proc.stdout))[0] == sid(104)
    assert "ignoring timeout" in proc.stderr


def test_every_word_in_one_session_beats_a_guessed_spelling(ranking):
    # no message holds all three; session 108 holds them all, session 109 only
    # a close spelling (data for date) in one message
    res = ranking.search("hydration", "error", "date")
    assert res["tier"] == "relevance" and ids(res)[0] == sid(108)


@pytest.fixture(scope="module")
def thin(tmp_path_factory):
    """A store of more than 50 sessions where two hold every word of a
    question in one message and many hold some of them."""
    home = Home(tmp_path_factory.mktemp("thin"))
    claude_session(home, 200, [("user", "why does the cart total show NaN after removing the last item?"),
                               ("assistant", "The reduce had no initial value; fixed.")], cwd="/home/dev/src/storefront")
    claude_session(home, 201, [("user", "cart total shows NaN after removing a coupon"),
                               ("assistant", "Guarded the missing percent.")], cwd="/home/dev/src/webshop")
    for n in range(202, 256):
        claude_session(home, n, [("user", f"the cart page {n} renders slowly" if n % 2 else f"the order total {n} is off by a cent"),
                                 ("assistant", "Memoised the selector." if n % 2 else "Rounded once, at the end.")],
                       cwd=f"/home/dev/src/app{n % 5}")
    home.run("index")
    return home


def test_a_few_sessions_holding_every_word_lead_and_say_so(thin):
    # cli-contract §5.2 (thin AND): the merged list is labelled relevance; the
    # sessions that hold every word lead it, and their own tier says exact
    res = thin.search("cart", "total", "NaN")
    assert res["tier"] == "relevance"
    assert sorted(ids(res)[:2]) == [sid(200), sid(201)]
    assert [h["tier"] for h in res["hits"][:2]] == ["exact", "exact"]
    assert all(h["tier"] == "relevance" for h in res["hits"][2:])
    # the person is not told that nothing matched
    proc = thin.run("cart", "total", "NaN")
    assert "nothing matched" not in proc.stderr and "2 hold every word" in proc.stderr.splitlines()[0]
    # a question nothing holds whole still says so
    proc = thin.run("cart", "cent", "coupon")
    assert "nothing matched every word" in proc.stderr


def test_an_agents_recall_is_told_which_sessions_hold_every_word(thin):
    from test_mcp import Client

    c = Client(thin.env)
    try:
        c.initialize()
        text = c.call(1, "recall", {"query": "cart total NaN", "limit": 5})["result"]["content"][0]["text"]
        assert "(2 of these hold every word; then the nearest sessions)" in text
        text = c.call(2, "recall", {"query": "cart cent coupon"})["result"]["content"][0]["text"]
        assert "(no session holds every word; nearest sessions)" in text
    finally:
        c.close()


def days(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The words time_windows leaves of ``text`` and the days its windows
    span, on 2026-11-30."""
    import datetime as dt

    from deja.queries.search import time_windows

    now = dt.datetime(2026, 11, 30, 12, tzinfo=dt.timezone.utc).timestamp() * 1000
    rest, windows = time_windows(text, now)
    return " ".join(rest.split()), [
        tuple(dt.datetime.fromtimestamp(x / 1000, dt.timezone.utc).date().isoformat() for x in w) for w in windows]


def test_time_windows_read_dates_and_leave_words():
    assert days("in August the cart broke") == ("the cart broke", [("2026-08-01", "2026-09-01")])
    assert days("back in December we pinned it") == ("we pinned it", [("2025-12-01", "2026-01-01")])
    assert days("last month we moved") == ("we moved", [("2026-09-24", "2026-11-08")])
    assert days("a couple of weeks ago the build") == ("the build", [("2026-11-09", "2026-11-23")])
    assert days("over the summer we cut it")[1] == [("2026-06-01", "2026-09-01")]
    assert days("early this year we")[1] == [("2026-01-01", "2026-05-02")]
    # words first: a bare "may", "march" or "fall", "spring boot", "fall back"
    for text in ("may the pool grow", "march the migration", "spring boot upgrade", "the fall back path"):
        assert days(text) == (text, [])
    assert days("in may we")[1] == [("2026-05-01", "2026-06-01")]


def test_a_day_named_with_its_month_is_that_day_not_the_month():
    # the day, a day either side for the person's time zone; its number and year are no words to find
    assert days("what did Gina find on 1 February, 2023?") == ("what did Gina find ?", [("2023-01-31", "2023-02-03")])
    assert days("the painting shown on October 13, 2023")[1] == [("2023-10-12", "2023-10-15")]
    assert days("the 1st of February 2023 deploy") == ("deploy", [("2023-01-31", "2023-02-03")])
    # no year: the latest such day not after today
    assert days("what broke on Dec 24")[1] == [("2025-12-23", "2025-12-26")]
    assert days("on 13 October we")[1] == [("2026-10-12", "2026-10-15")]
    # a month with a year is still the month
    assert days("in July 2023 we")[1] == [("2023-07-01", "2023-08-01")]
    # words first: "may" and "mar" name a day only after a preposition or with a year; no such day, no date
    for text in ("step 2 may fail", "may 5 things", "February 30, 2023 broke"):
        assert days(text) == (text, [])
    assert days("on May 5 we")[1] == [("2026-05-04", "2026-05-07")]
    assert days("May 5, 2023")[1] == [("2023-05-04", "2023-05-07")]


def test_unspaced_scripts_count_words_by_character_pair():
    from deja.queries.search import typed_words

    assert typed_words("handle_stripe_event") == 1
    assert typed_words("镜像") == 1
    assert typed_words("镜像体积是怎么减小的") > 2


def test_question_words_are_not_informative():
    from deja.queries.search import FILLER

    assert {"after", "only", "still", "why", "didn", "couldn", "remind"} <= FILLER
    assert not {"never", "timeout", "people", "windows"} & FILLER


def test_a_pasted_page_of_words_ranks_without_overflow(corpus):
    """More query words than a 64-bit set holds: the ranking still counts a
    record's groups right (a bit set past 62 groups would overflow)."""
    from deja.queries.search import Query, Searcher
    from deja.stages.store.read import open_live

    live = open_live(corpus.index)
    try:
        words = [t for (t,) in live.con.execute("SELECT DISTINCT token FROM vocab ORDER BY token").fetchall()]
        assert len(words) > 64
        s = Searcher(live, Query(" ".join(words)))
        s.vocab_for(words)
        ranked = s.rank([[w] for w in words], need_and=False)
        assert ranked and all(0 < r.matched <= len(words) for r in ranked)
        assert all(r.best for r in ranked)
    finally:
        live.close()


def test_a_warm_stores_vocabulary_finds_every_word_by_its_marks(tmp_path, monkeypatch):
    """A warm server's vocabulary is a table in stem order with every n-th
    stem kept aside; a lookup reads only the rows between two marks. Looked
    up with marks every four rows (so stems span marks), every word and its
    forms come back as a plain scan finds them."""
    from conftest import Home, claude_assistant, claude_user, write_jsonl
    from deja.queries.vocab import Vocabulary
    from deja.stages.store import duck, read

    home = Home(tmp_path)
    words = ("retry retries retried retrying pool pooled pools pooling exhausted exhaust exhausting "
             "migrate migration migrations index indexes indexed indexing tenant tenants scope scoped").split()
    for i in range(6):
        sid = f"{i:04d}0000-0000-4000-8000-00000000000{i}"
        ts = f"2026-03-0{i + 1}T10:00:00.000Z"
        write_jsonl(home.claude_file(sid), [
            claude_user(sid, " ".join(words[i::2]) + f" word{i}x", ts, f"u{i}"),
            claude_assistant(sid, [{"type": "text", "text": " ".join(words[i % 3::3])}], ts.replace(":00.000Z", ":30.000Z"),
                             f"a{i}", msg_id=f"msg_{i}"),
        ])
    home.run("index")
    monkeypatch.setattr(read, "VOCAB_MARK", 4)
    plain = read.open_live(home.index)
    assert plain.vocab_marks is None
    read.keep_open(True)
    try:
        warm = read.open_live(home.index, con=duck.shared())
        assert warm.hot and warm.vocab_marks and len(warm.vocab_marks[0]) > 5
        def found(store, terms) -> dict:  # (a stem's words come in no particular order)
            v = Vocabulary(store).lookup(terms)
            return dict(v, stems={k: sorted(w) for k, w in v["stems"].items()})

        asked = words + ["word3x", "nowhere", "a", "zzzz"]
        for i in range(0, len(asked), 3):
            assert found(warm, asked[i:i + 3]) == found(plain, asked[i:i + 3])
        got = found(warm, asked)
        assert got == found(plain, asked) and got["exact"]["retried"] >= 1
        assert got["stems"]["retri"] == ["retried", "retries", "retry", "retrying"]
    finally:
        read.keep_open(False)


def test_a_warm_store_takes_a_runs_new_parts_into_its_tables_as_a_fresh_open_reads_them(tmp_path):
    """After an appended turn's run, a warm server's store adds the run's new
    parts to the tables it holds instead of reading every part again: the
    tables then hold what a fresh open of the same catalog holds, and the new
    words are found (they follow the vocabulary's marked rows)."""
    from conftest import Home, claude_assistant, claude_user, write_jsonl
    from deja.queries.vocab import Vocabulary
    from deja.stages.store import duck, read

    home = Home(tmp_path)
    sid = "dddd0000-0000-4000-8000-00000000000d"
    path = home.claude_file(sid)
    write_jsonl(path, [claude_user(sid, "the invoice export retries forever", "2026-03-04T10:00:00.000Z", "u1")])
    home.run("index")

    def tables(con) -> dict:
        return {t: sorted(map(str, con.execute(f"SELECT * FROM {t}").fetchall()))
                for t in ("sessions", "deletes", "docs", "vocab")}

    read.keep_open(True)
    try:
        first = read.open_live(home.index, con=duck.shared())
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(__import__("json").dumps(claude_assistant(
                sid, [{"type": "text", "text": "capped the quokkabackoff at five attempts"}],
                "2026-03-04T10:00:30.000Z", "a1", msg_id="msg_a1")) + "\n")
        home.run("index")
        grown = read.open_live(home.index, con=duck.shared())
        assert grown is not first and grown.hot
        assert set(grown.files["docs"]) > set(first.files["docs"])  # the run added parts (not a rewrite)
        got = tables(grown.con)
        assert Vocabulary(grown).lookup(["quokkabackoff"])["exact"] == {"quokkabackoff": 1}
        read.keep_open(True)  # forget the kept store; a new connection: a fresh open
        duck._warm.pop("shared", None)
        fresh = read.open_live(home.index, con=duck.shared())
        assert tables(fresh.con) == got
        assert home.search("quokkabackoff")["hits"]
    finally:
        read.keep_open(False)


def test_a_warm_vocabulary_swaps_merged_small_parts_without_reading_its_large_part_again(tmp_path):
    """Appended turns' runs add small vocabulary parts, and compaction merges
    them: a warm store deletes their rows and adds the merged part's, keeping
    the large part's rows (and marks) as they were, and holds what a fresh open
    of the same catalog holds."""
    from conftest import Home, claude_assistant, claude_user, write_jsonl
    from deja.queries.vocab import Vocabulary
    from deja.stages.store import duck, read

    home = Home(tmp_path)
    sid = "eeee0000-0000-4000-8000-00000000000e"
    path = home.claude_file(sid)
    write_jsonl(path, [claude_user(sid, " ".join(f"lexeme{i}q" for i in range(3000)), "2026-03-04T10:00:00.000Z", "u1")])
    home.run("index")

    def vocab(con) -> list:
        return sorted(con.execute("SELECT token, stem, n FROM vocab").fetchall())

    read.keep_open(True)
    try:
        live = read.open_live(home.index, con=duck.shared())
        marks, merged = live.vocab_marks, False
        assert marks
        for i in range(12):
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(__import__("json").dumps(claude_assistant(
                    sid, [{"type": "text", "text": f"the okapi{i}x importer drops rows"}],
                    f"2026-03-04T10:{i + 1:02d}:00.000Z", f"a{i}", msg_id=f"msg_{i}")) + "\n")
            home.run("index")
            parts = set(live.files["vocab"])
            live = read.open_live(home.index, con=duck.shared())
            merged |= bool(parts - set(live.files["vocab"]))
            assert live.vocab_marks is marks  # the large part was not read again
            assert Vocabulary(live).lookup([f"okapi{i}x"])["exact"] == {f"okapi{i}x": 1}
        assert merged  # compaction merged the small parts along the way
        got = vocab(live.con)
        read.keep_open(True)  # forget the kept store; a new connection: a fresh open
        duck._warm.pop("shared", None)
        assert vocab(read.open_live(home.index, con=duck.shared()).con) == got
    finally:
        read.keep_open(False)


def test_a_connection_that_held_the_stores_views_can_keep_it_open(tmp_path):
    """A process that answered with views on its shared connection and then
    keeps the store open (tables under the same names) must not trip over
    the views, nor the other way round."""
    from conftest import Home, claude_user, write_jsonl
    from deja.stages.store import duck, read

    home = Home(tmp_path)
    sid = "eeee0000-0000-4000-8000-00000000000e"
    write_jsonl(home.claude_file(sid), [claude_user(sid, "the flaky quokkatest again", "2026-03-04T10:00:00.000Z", "u1")])
    home.run("index")
    duck._warm.pop("shared", None)
    try:
        viewed = read.open_live(home.index, con=duck.shared())  # views
        assert not viewed.hot
        read.keep_open(True)
        warm = read.open_live(home.index, con=duck.shared())  # tables under the same names
        assert warm.hot and warm.con.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1
        read.keep_open(False)
        again = read.open_live(home.index, con=duck.shared())  # and views again
        assert not again.hot and again.con.execute("SELECT count(*) FROM vocab WHERE token = 'quokkatest'").fetchone()[0]
    finally:
        read.keep_open(False)
        duck._warm.pop("shared", None)


@pytest.mark.parametrize("filters", [
    {}, {"harness": "codex"}, {"project": "/home/dev/src/shop"}, {"role": "tool"}, {"role": "user"},
    {"since": "3650d"}, {"show_all": True, "limit": 3},
])
def test_a_warm_process_ranks_as_a_cold_one(corpus, filters, monkeypatch):
    """A warm process ranks from arrays (queries/score_arrays.py) where a cold
    one runs score_groups.sql: every answer of the ladder is the same, filters
    and roles included."""
    from deja.pipeline import api
    from deja.queries import score_arrays
    from deja.stages.store import read

    ranked = []
    score_rows = score_arrays.score_rows
    monkeypatch.setattr(score_arrays, "score_rows", lambda *a: ranked.append(a) or score_rows(*a))

    queries = ["connection pool exhausted", "pool", "parse_config UserService.login", "flaky test CI",
               "KeyError discount_code", "why does the redis connection drop at night", "сборка падает",
               "连接超时", "pytest totals_regression", "signing keys rotation", "zzz nothing here"]
    env = dict(corpus.env, DEJA_NO_REFRESH="1")
    at_one_moment(monkeypatch)
    cold = [api.search(q, env=env, **filters) for q in queries]
    assert not ranked
    read.keep_open(True)
    try:
        for _ in range(2):  # and again, from what the warm store kept
            assert [api.search(q, env=env, **filters) for q in queries] == cold
    finally:
        read.keep_open(False)
    assert ranked and any(answer["hits"] for answer in cold)


def test_a_session_named_for_what_was_asked_ranks_above_one_that_only_says_it(tmp_path):
    """The title signal (cli-contract §5.3): × (1 + 0.4 · title hits / query
    words). A person renamed the older session for what it was about; asked
    in those words, it leads the newer one that says them as often."""
    home = Home(tmp_path)
    turns = [("user", "can you look into this again, it happened after the deploy"),
             ("assistant", "The payment webhook retries piled up; they now back off exponentially. Decision: "
                           "cap the webhook retries at five.")]
    named = claude_session(home, 1, turns, day="2026-03-01")
    other = claude_session(home, 2, turns, cwd="/home/dev/src/billing", day="2026-03-02")
    write_jsonl(home.claude_file(named), [{"type": "custom-title", "customTitle": "payment webhook retries",
                                           "sessionId": named}], mode="a")
    home.run("index")
    assert [h["session"]["id"] for h in home.search("webhook", "retries")["hits"]] == [named, other]
    # a title holding none of the words lifts nothing: the newer session leads
    assert [h["session"]["id"] for h in home.search("exponentially", "five")["hits"]] == [other, named]
