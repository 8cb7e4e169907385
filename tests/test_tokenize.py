"""deja.stages.tokenize: the rules, and the three implementations agreeing.

The throughput check is opt-in (it indexes ~50 MB):

    DEJA_BENCH_MB=50 python -m pytest tests/test_tokenize.py -k throughput -s
"""

from __future__ import annotations

import os
import random
import string
import subprocess
import sys
import time
import unicodedata
import zlib
from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deja.stages import tokenize as tk
from deja.stages.tokenize import bucket_column, bucket_of, query_terms, token_counts_batch, tokenize

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")


# --- the rules, one case at a time ------------------------------------------------------

RULES = [
    # runs, lower-casing, separators
    ("Hello, World!", ["hello", "world"]),
    ("bb aa bb", ["bb", "aa", "bb"]),
    ("", []),
    ("   \n\t ", []),
    # NFC: composed and decomposed spellings are one token
    ("cafe\u0301 café", ["café", "café"]),
    ("ÀÉÎ", ["àéî"]),
    # at least 2 bytes, counted in UTF-8
    ("a b c", []),
    ("é", ["é"]),
    ("x² Ⅻ", []),  # superscripts and Roman numerals are not Nd digits
    # leading and trailing hyphens, underscores
    ("--flags", ["flags"]),
    ("--dry-run", ["dry-run", "dry", "run"]),
    ("-x-", []),
    ("a-b-c", ["a-b-c"]),  # parts of one byte are dropped
    ("__init__", ["__init__", "init"]),
    ("_private", ["_private", "private"]),
    ("___ _-_", []),
    ("__-init", ["init"]),
    # numbers
    ("3.14", ["14"]),
    ("1e-9", ["1e-9", "1e"]),
    ("v1.2.3", ["v1"]),
    # compounds: snake, kebab, camel, Pascal, acronyms, digits
    ("snake_case", ["snake_case", "snake", "case"]),
    ("ERROR_CODE", ["error_code", "error", "code"]),
    ("kebab-case-name", ["kebab-case-name", "kebab", "case", "name"]),
    ("camelCase", ["camelcase", "camel", "case"]),
    ("PascalCase", ["pascalcase", "pascal", "case"]),
    ("HTTPServerError", ["httpservererror", "http", "server", "error"]),
    ("XMLHttpRequest", ["xmlhttprequest", "xml", "http", "request"]),
    ("parseJSON2Config", ["parsejson2config", "parse", "json2", "config"]),
    ("utf8ToString", ["utf8tostring", "utf8", "to", "string"]),
    ("K8sClient", ["k8sclient", "k8s", "client"]),
    ("x86_64", ["x86_64", "x86", "64"]),
    ("getX", ["getx", "get"]),
    ("naïve_bayes", ["naïve_bayes", "naïve", "bayes"]),
    ("0xDEADBEEF", ["0xdeadbeef", "0x", "deadbeef"]),
    # dotted and path forms fall apart by the run rule
    ("UserService.login", ["userservice", "user", "service", "login"]),
    ("src/db/pool.go:42", ["src", "db", "pool", "go", "42"]),
    ("file.py:42", ["file", "py", "42"]),
    (
        "https://github.com/org/repo/pull/42?tab=files#L10",
        ["https", "github", "com", "org", "repo", "pull", "42", "tab", "files", "l10"],
    ),
    (
        'File "/usr/lib/python3.11/site-packages/foo_bar.py", line 42, in handle_request',
        [
            "file", "usr", "lib", "python3", "11", "site-packages", "site", "packages", "foo_bar", "foo",
            "bar", "py", "line", "42", "in", "handle_request", "handle", "request",
        ],
    ),
    # CJK: bigrams of each stretch, a lone character by itself
    ("使用pytest运行", ["使用", "pytest", "运行"]),
    ("测试test_case用例", ["测试", "test_case", "test", "case", "用例"]),
    ("中", ["中"]),
    ("日本語のテキスト", ["日本", "本語", "語の", "のテ", "テキ", "キス", "スト"]),
    ("コーヒー", ["コー", "ーヒ", "ヒー"]),
    ("ｶﾀｶﾅ", ["ｶﾀ", "ﾀｶ", "ｶﾅ"]),
    ("〇二四", ["〇二", "二四"]),
    ("中文、日本語。", ["中文", "日本", "本語"]),  # CJK punctuation separates
    # unspaced South-East Asian scripts: bigrams too (of code points)
    ("ภาษาไทย", ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]),
    ("ພາສາ", ["ພາ", "າສ", "ສາ"]),
    # other scripts are ordinary letters
    ("한국어 텍스트", ["한국어", "텍스트"]),
    ("Привет, Мир", ["привет", "мир"]),
    ("ΟΔΟΣ ς", ["οδοσ", "σ"]),  # final sigma folded
    ("مرحبا بالعالم", ["مرحبا", "بالعالم"]),
    ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # vowel signs and virama are marks inside the run
    ("ＡＢＣ", ["ａｂｃ"]),
    ("İstanbul", ["i\u0307stanbul"]),
    # emoji and other symbols separate; variation selectors are not marks
    ("🚀 deploy ✅", ["deploy"]),
    ("❤️", []),
    ("👍🏽ok", ["ok"]),
    # combining marks continue a run but start none
    ("q\u0307", ["q\u0307"]),
    (" \u0301ab", ["ab"]),
    ("a_\u0301bc", ["a_\u0301bc", "bc"]),
]


@pytest.mark.parametrize(("text", "expected"), RULES)
def test_rule(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_long_ascii_run_is_cut_into_64_byte_pieces() -> None:
    assert tokenize("x" * 130) == ["x" * 64, "x" * 64, "xx"]
    assert tokenize("x" * 129) == ["x" * 64, "x" * 64]  # the 1-byte rest is dropped
    assert tokenize("x" * 64) == ["x" * 64]


def test_long_run_is_cut_on_code_point_boundaries() -> None:
    assert tokenize("é" * 40) == ["é" * 32, "é" * 8]
    text = "a" + "é" * 40  # 81 bytes; a 2-byte é cannot straddle byte 64
    pieces = tokenize(text)
    assert pieces == ["a" + "é" * 31, "é" * 9]
    assert all(len(p.encode()) <= 64 for p in pieces)
    assert "".join(pieces) == text
    cjk_free = "д" * 40 + "𝐀" * 5  # 2- and 4-byte characters
    pieces = tokenize(cjk_free)
    assert "".join(pieces) == cjk_free.lower()
    assert all(len(p.encode()) <= 64 for p in pieces)


def test_long_identifier_keeps_its_parts() -> None:
    name = "test_query_terms_deduplicates_and_keeps_order_for_mixed_scripts_and_flags"
    assert len(name) > 64
    parts = name.split("_")
    assert tokenize(name) == [name[:64], name[64:], *parts]


def test_runs_over_max_compound_bytes_yield_no_parts() -> None:
    blob = "aB" * 200  # 400 bytes of camel case: data, not an identifier
    tokens = tokenize(blob)
    assert tokens == tk._pieces(blob.lower())
    just_fits = "_".join(["word"] * 51)  # 254 bytes
    assert tokenize(just_fits).count("word") == 51


def test_parts_follow_their_whole_in_text_order() -> None:
    assert tokenize("run fooBar then baz_qux") == [
        "run", "foobar", "foo", "bar", "then", "baz_qux", "baz", "qux",
    ]


def test_tokens_are_nfc_and_lowercase() -> None:
    text = "Ça VA? ÉCOLE e\u0301cole ΣΊΣΥΦΟΣ Ⅷ ǅ"
    for token in tokenize(text):
        assert token == unicodedata.normalize("NFC", token)
        assert token == token.lower()


def test_query_terms_deduplicates_and_keeps_order() -> None:
    assert query_terms("Foo foo_bar FOO bar") == ["foo", "foo_bar", "bar"]
    assert query_terms("") == []
    assert query_terms("使用 使用pytest") == ["使用", "pytest"]


def test_search_path_imports_neither_polars_nor_pyarrow() -> None:
    code = (
        "import sys\n"
        "from deja.stages.tokenize import tokenize, query_terms, bucket_of\n"
        "tokenize('HTTPServerError 使用 ภาษา 𝐀𝐁'); query_terms('x_y'); bucket_of('x')\n"
        "assert 'polars' not in sys.modules and 'pyarrow' not in sys.modules, sorted(sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# --- buckets ---------------------------------------------------------------------------------


def test_bucket_of_is_crc32_mod_n() -> None:
    assert bucket_of("hello") == zlib.crc32(b"hello") % 64
    assert bucket_of("使用", 16) == zlib.crc32("使用".encode()) % 16
    assert all(0 <= bucket_of(t) < 64 for t in ("", "a", "ab", "σ" * 30))


@pytest.mark.parametrize("arrow_type", ["string", "large_string", "string_view"])
def test_bucket_column_agrees_with_bucket_of(arrow_type: str) -> None:
    tokens = [t for text in VARIED for t in tokenize(text)] + ["", "hello", "hello"]
    column = pa.array(tokens, type=getattr(pa, arrow_type)())
    for n in (64, 7, 1):
        got = bucket_column(column, n)
        assert got.type == pa.int32()
        assert got.to_pylist() == [bucket_of(t, n) for t in tokens]


def test_bucket_column_keeps_nulls_and_takes_chunked_arrays() -> None:
    chunked = pa.chunked_array([["ab", None], ["cd", "ab"]])
    assert bucket_column(chunked).to_pylist() == [bucket_of("ab"), None, bucket_of("cd"), bucket_of("ab")]
    assert bucket_column(pa.array([], pa.string())).to_pylist() == []


# --- token_counts_batch -------------------------------------------------------------------


@pytest.fixture(autouse=True, params=["native", "polars", "python"])
def batch_path(request, monkeypatch):
    """Every batch test runs on every path: small batches take the pure-Python
    one in production (an appended turn), big ones the C tokenizer, or polars
    where it was not built."""
    import deja.stages.tokenize as tk

    if request.param == "native" and tk._native() is None:
        pytest.fail("the C tokenizer (deja.stages._tokens) was not built: pip install needs a C compiler")
    monkeypatch.setattr(tk, "ENGINE", request.param)
    return request.param


SCHEMA = pa.schema([("record_id", pa.int64()), ("token", pa.string()), ("tf", pa.int32()), ("rec_len", pa.int32())])


def rows(table: pa.Table) -> set[tuple]:
    return {(r["record_id"], r["token"], r["tf"], r["rec_len"]) for r in table.to_pylist()}


def test_counts_of_a_small_batch() -> None:
    table = token_counts_batch([7, 9, 11], ["Foo foo_bar foo", "", "a"])
    assert table.schema == SCHEMA
    assert rows(table) == {(7, "foo", 3, 5), (7, "foo_bar", 1, 5), (7, "bar", 1, 5)}


def test_counts_accept_lists_arrow_and_polars() -> None:
    ids, texts = [1, 2], ["snake_case 使用pytest运行", None]
    expected = rows(token_counts_batch(ids, texts))
    assert expected == {(1, t, 1, 6) for t in ["snake_case", "snake", "case", "使用", "pytest", "运行"]}
    assert rows(token_counts_batch(pa.array(ids), pa.array(texts, pa.large_string()))) == expected
    assert rows(token_counts_batch(pl.Series(ids), pl.Series(texts))) == expected
    assert rows(token_counts_batch(pa.chunked_array([ids]), pa.chunked_array([texts]))) == expected


def test_counts_read_sliced_and_chunked_arrow_where_it_starts() -> None:
    # Arrow arrays that start inside their buffers (a table's slice), several
    # chunks, large offsets, nulls among the texts
    ids = list(range(10, 20))
    texts = [f"word{i} shared_name x{i}Y" if i % 3 else None for i in range(10)]
    expected = rows(token_counts_batch(ids[3:], texts[3:]))
    assert expected and {r[0] for r in expected} <= set(ids[3:])
    sliced = token_counts_batch(pa.array(ids, pa.int64())[3:], pa.array(texts, pa.string())[3:])
    assert rows(sliced) == expected
    chunked = token_counts_batch(
        pa.chunked_array([pa.array(ids[3:6]), pa.array(ids[6:])]),
        pa.chunked_array([pa.array(texts[3:6], pa.large_string()), pa.array(texts[6:], pa.large_string())]),
    )
    assert rows(chunked) == expected


def test_a_record_with_very_many_distinct_tokens_is_counted_whole() -> None:
    words = [f"w{i:06d}" for i in range(60_000)]
    text = " ".join(words + words[:10])
    table = token_counts_batch([1, 2], [text, "w000001 tail"])
    got = {(r["record_id"], r["token"]): (r["tf"], r["rec_len"]) for r in table.to_pylist()}
    assert len(got) == 60_002
    assert got[(1, "w000001")] == (2, 60_010) and got[(1, "w059999")] == (1, 60_010)
    assert got[(2, "w000001")] == (1, 2) and got[(2, "tail")] == (1, 2)


def test_buckets_come_with_the_counts_when_asked() -> None:
    texts = ["parseJSON2Config 使用pytest运行 Привет", "é" * 70, "plain words"]
    table = token_counts_batch([1, 2, 3], texts, buckets=True)
    assert table.column_names == ["record_id", "token", "tf", "rec_len", "bucket"]
    assert table.column("bucket").type == pa.int32()
    assert all(r["bucket"] == bucket_of(r["token"]) for r in table.to_pylist())
    assert rows(table.drop_columns("bucket")) == rows(token_counts_batch([1, 2, 3], texts))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=80), max_size=8))
def test_batches_agree_with_python_on_any_text(texts: list[str]) -> None:
    assert_same_as_python(texts)


def test_counts_of_an_empty_batch() -> None:
    assert token_counts_batch([], []) == SCHEMA.empty_table()
    assert token_counts_batch([1], [None]) == SCHEMA.empty_table()


def test_counts_reject_repeated_ids_and_ragged_input() -> None:
    with pytest.raises(ValueError, match="unique"):
        token_counts_batch([1, 1], ["a", "b"])
    with pytest.raises(ValueError, match="length"):
        token_counts_batch([1, 2], ["a"])


def test_counts_leave_the_callers_data_alone() -> None:
    texts = pl.Series(["cafe\u0301 au lait", "plain"])
    token_counts_batch(pl.Series([1, 2]), texts)
    assert texts.to_list() == ["cafe\u0301 au lait", "plain"]


def test_counts_of_a_lopsided_batch() -> None:
    # All the text in one record: one core's slice is empty.
    texts = ["hello world foo_bar " * 100] + [""] * 99 + ["使用pytest运行 " * 10]
    table = token_counts_batch(range(len(texts)), texts)
    assert rows(table) == {
        (0, "hello", 100, 500), (0, "world", 100, 500), (0, "foo_bar", 100, 500), (0, "foo", 100, 500),
        (0, "bar", 100, 500), (100, "使用", 10, 30), (100, "pytest", 10, 30), (100, "运行", 10, 30),
    }


def test_pieces_of_long_tokens_are_counted_with_the_rest() -> None:
    table = token_counts_batch([1, 2], ["x" * 130 + " " + "x" * 64, "é" * 40 + " " + "é" * 8])
    assert rows(table) == {
        (1, "x" * 64, 3, 4), (1, "xx", 1, 4),
        (2, "é" * 32, 1, 3), (2, "é" * 8, 2, 3),
    }


# --- the two implementations agree -----------------------------------------------------------

VARIED = [
    "",
    " ",
    "def parseJSON2Config(self, raw_input: str) -> HTTPServerError:",
    "UserService.login(userId=42) -> src/db/pool.go:42 and file.py:42",
    "https://example.com/api/v1/users?id=42&sort=created_at#section-2",
    "C:\\Users\\dev\\AppData\\Local\\Temp\\pip-build-xyz\\setup.py",
    'Traceback (most recent call last):\n  File "/app/main.py", line 12, in <module>\n    main()\n'
    "ZeroDivisionError: division by zero",
    "    at com.example.UserService.findById(UserService.java:87)\n    at java.base/java.lang.Thread.run",
    "error[E0308]: mismatched types --> src/main.rs:4:5 | expected `u32`, found `&str`",
    "npm ERR! code ERESOLVE --legacy-peer-deps --no-verify -- --watch",
    "a-b-c __init__ __-x _-_ ___ -- --- - _ a_ _a a- -a",
    "3.14 1e-9 -0.5 +1 0xFF 1_000_000 2024-01-15T10:30:00.123Z v1.2.3-rc.1",
    "Привет, мир! Это тест поискового индекса. ПРИВЕТ_МИР",
    "Γειά σου Κόσμε ΟΔΟΣ ΣΑΣ.ΣΑΣ",
    "مرحبا بالعالم، هذا اختبار",
    "हिन्दी में परीक्षण क्षत्रिय",
    "한국어 텍스트 검색 테스트",
    "使用pytest运行测试，然后检查日志。",
    "日本語のテキストとカタカナ・ひらがな、ｶﾀｶﾅ",
    "ภาษาไทยไม่มีช่องว่าง ພາສາລາວ ភាសាខ្មែរ မြန်မာ",
    "emoji 🚀 deploy ✅ ❤️ 👍🏽 👨‍👩‍👧 1️⃣ 🇯🇵 flags",
    "combining: cafe\u0301 q\u0307 \u0301orphan a\u0301\u0302b e\u0301\u0301",
    "İstanbul ǅemal ΣΊΣΥΦΟΣ Straße STRASSE ẞ K(kelvin \u212a) Å(angstrom \u212b)",
    "ＡＢＣ全角ｄｅｆ１２３",
    "x" * 200 + " " + "é" * 70 + " " + "aB" * 150 + " " + "_".join(["word"] * 60),
    "supercalifragilisticexpialidocious_" * 5,
    "𝐀𝐁𝐂 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \U00020000\U00020001 \U0001F600x \ue000\ue001\ue002 private",
    "zero\u200bwidth\u200djoiner\u2060word soft\u00adhyphen",
    "tab\tseparated\nnew\r\nlines\x00nul\x1bescape",
    "\ua7cb\ua7dc letters newer than Unicode 14",
    "🙂" * 30,
    "ς σ Σ ΑΣ ΑΣ. ΑΣ.Β",
    "a\u0345\u0399",
]


def random_texts(n: int, seed: int) -> list[str]:
    """Strings glued from pieces that sit on the rules' edges."""
    pieces = list("aAbBzZ09_-_-. /:'\"\n\t") + [
        "HT", "TPS", "Xy", "xY", "HTTP", "Server", "JSON2", "snake_case", "camelCase", "a-b-c", "__", "--", "---",
        "0x", "1e", "é", "É", "e\u0301", "q\u0307", "\u0301", "\u0345", "İ", "Σ", "ΣΑΣ", "ς", "ß", "ẞ", "\u212a",
        "ǅ", "ﬀ", "ŉ", "Ａ", "ｂ", "д", "Привет", "Ωμέγα", "مرحبا", "हिन्दी", "ि", "한국어", "中文", "日本語", "テスト",
        "ー", "・", "ภาษา", "\u0e34", "\u3007", "々", "😀", "❤️", "\ufe0f", "\U000e0100", "\u200d", "👍🏽", "1️⃣",
        "𝐀𝐁", "\U0001d41a", "\U00020000", "\ue000", "\ue001", "\ue002", "\ua7cb", "\u1c89", "²", "Ⅻ", "\u0660",
        "x" * 30, "x" * 70, "é" * 15, "é" * 35, "Ab" * 20, "a_" * 30, "A-" * 20,
    ]
    rng = random.Random(seed)
    return [
        "".join(rng.choice(pieces) for _ in range(rng.randint(0, rng.choice([5, 30, 120])))) for _ in range(n)
    ]


def assert_same_as_python(texts: list[str | None]) -> None:
    table = token_counts_batch(list(range(len(texts))), texts)
    assert table.schema == SCHEMA
    counts: dict[int, Counter] = defaultdict(Counter)
    rec_lens: dict[int, set[int]] = defaultdict(set)
    seen = set()
    for r in table.to_pylist():
        key = (r["record_id"], r["token"])
        assert key not in seen, key
        seen.add(key)
        counts[r["record_id"]][r["token"]] += r["tf"]
        rec_lens[r["record_id"]].add(r["rec_len"])
    for i, text in enumerate(texts):
        expected = Counter(tokenize(text or ""))
        assert counts.get(i, Counter()) == expected, repr(text)
        if expected:
            assert rec_lens[i] == {expected.total()}, repr(text)


def test_batches_agree_with_python_on_varied_text() -> None:
    assert_same_as_python([*VARIED, *(text for text, _ in RULES), None])


def test_batches_agree_with_python_on_each_text_alone() -> None:
    for text in VARIED:
        assert_same_as_python([text])


@pytest.mark.parametrize("seed", range(3))
def test_batches_agree_with_python_on_random_text(seed: int) -> None:
    assert_same_as_python(random_texts(1500, seed))


def test_batches_agree_with_python_on_realistic_text() -> None:
    assert_same_as_python(realistic_corpus(2_000_000, seed=1))


# --- the Unicode tables ------------------------------------------------------------------------


@pytest.mark.skipif(unicodedata.unidata_version != "14.0.0", reason="the tables are pinned to Unicode 14.0")
def test_tables_are_what_unicodedata_says() -> None:
    derived = tk._derive_tables()
    assert derived["word"] == tk._WORD_TABLE.strip()
    assert derived["mark"] == tk._MARK_TABLE.strip()
    assert derived["bigram"] == tk._BIGRAM_TABLE.strip()


def char_class(ch: str) -> str:
    cp = ord(ch)
    for name, table in (("word", tk._WORD), ("mark", tk._MARK), ("bigram", tk._BIGRAM)):
        if tk._in_table(cp, table):
            return name
    return ch if ch in "_-" else "separator"


def test_case_folding_never_moves_a_character_between_classes() -> None:
    # This is what lets the polars path lower-case whole texts before it
    # finds runs, where Python finds runs and then lower-cases them.
    for cp in range(0x110000):
        ch = chr(cp)
        folded = tk._fold_case(ch)
        if folded == ch:
            continue
        before, after = char_class(ch), [char_class(c) for c in folded]
        if before == "word":
            assert after[0] == "word" and set(after[1:]) <= {"word", "mark"}, hex(cp)
        elif before == "mark":
            assert after and set(after) == {"mark"}, hex(cp)
        else:
            assert set(after) <= {"separator", "bigram"}, hex(cp)


def test_polars_lowercases_every_class_character_like_python() -> None:
    chars = [chr(cp) for table in (tk._WORD, tk._MARK, tk._BIGRAM) for lo, hi in table for cp in range(lo, hi + 1)]
    chars += list(string.printable)
    folded = pl.Series(chars).str.to_lowercase().str.replace_all("ς", "σ", literal=True).to_list()
    assert [c for c, f in zip(chars, folded, strict=True) if f != tk._fold_case(c)] == []


def test_stand_ins_classify_every_non_bmp_character() -> None:
    mask = tk._python_patterns().outside_bmp
    classes = [(tk._WORD, tk._WORD_STAND_IN), (tk._MARK, tk._MARK_STAND_IN), (tk._BIGRAM, tk._BIGRAM_STAND_IN)]
    for table, stand_in in classes:
        for lo, hi in table:
            for cp in {max(lo, 0x10000), hi} if hi > 0xFFFF else ():
                assert mask.sub(tk._stand_in, chr(cp)) == stand_in
    assert mask.sub(tk._stand_in, "\U0001F600\ue000") == "  "


# --- realistic text, and the throughput check ------------------------------------------------------

WORDS = (
    "the of and to in is that it for was on are as with they at be this from have or by one had not but what all "
    "were when we there can an your which their said if do will each about how up out them then she many some so "
    "these would other into has more two like see time could make than first been its who now people made over "
    "did down only way find use may water long little very after words called just where most know get through "
    "back much before go good new write our used man any day same right look think also around another came come "
    "work three word must because does part even place well such here take why things help put years different "
    "away again off went old number great tell men say small every found still between name should home big give "
    "line set own under read last never left end along while might next sound below saw something thought both "
    "few those always show large often together asked house world going want school important until form food keep "
    "children feet land side without once life enough took sometimes four head above kind began almost live page"
).split()
RUSSIAN = (
    "привет мир проект файл ошибка функция данные сервер запрос ответ пользователь система работа настройка модуль "
    "тест сборка версия обновление поиск индекс запись строка значение результат список время ключ таблица база"
).split()
CHINESE = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好"
    "都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法"
    "使用运行测试代码文件函数变量错误日志数据库服务器"
)


def realistic_corpus(n_bytes: int, seed: int = 0) -> list[str]:
    """Agent-transcript-like records: code, logs, prose, some Russian and Chinese."""
    rng = random.Random(seed)
    choice, randint = rng.choice, rng.randint

    def ident() -> str:
        parts = [choice(WORDS) for _ in range(randint(1, 4))]
        style = rng.random()
        if style < 0.3:
            return "_".join(parts)
        if style < 0.6:
            return parts[0] + "".join(p.title() for p in parts[1:])
        if style < 0.75:
            return "".join(p.title() for p in parts)
        if style < 0.85:
            return "-".join(parts)
        if style < 0.9:
            return parts[0].upper() + "".join(p.title() for p in parts[1:]) + str(randint(0, 99))
        return parts[0]

    def path() -> str:
        dirs = [choice(["src", "lib", "tests", "pkg", "internal", "app"])] + [ident() for _ in range(randint(1, 3))]
        return "/".join(dirs) + choice([".py", ".go", ".ts", ".rs", ".js", ".md"])

    def sentence(vocab: list[str], n: int) -> str:
        return " ".join(choice(vocab) for _ in range(n))

    def code_line() -> str:
        return choice(
            [
                f"def {ident()}(self, {ident()}: {ident()} = None) -> {ident()}:",
                f'    {ident()} = {ident()}.{ident()}({ident()}, {randint(0, 1000)}, "{sentence(WORDS, 2)}")',
                f"    if {ident()} is not None and len({ident()}) > {randint(0, 64)}:",
                f"func ({ident()[:1]} *{ident()}) {ident()}(ctx context.Context, {ident()} string) error {{",
                f"const {ident()} = await {ident()}.{ident()}({{ {ident()}: '{path()}' }});",
                f"    return {ident()}[{randint(0, 9)}] + {rng.random():.4f}  # {sentence(WORDS, 6)}",
                f"import {ident()}.{ident()} as {ident()}",
                f'    raise {ident()}Error(f"{sentence(WORDS, 3)} {{{ident()}}}")',
            ]
        )

    def log_line() -> str:
        ts = f"2024-{randint(1, 12):02d}-{randint(1, 28):02d}T{randint(0, 23):02d}:{randint(0, 59):02d}:00Z"
        return choice(
            [
                f"{ts} {choice(['INFO', 'WARN', 'ERROR'])} [{ident()}] {sentence(WORDS, randint(3, 12))} "
                f"id={rng.getrandbits(128):032x} took={randint(1, 5000)}ms",
                f'  File "{path()}", line {randint(1, 2000)}, in {ident()}',
                f"    at {ident()}.{ident()}.{ident()}({ident()}.java:{randint(1, 900)})",
                f"{path()}:{randint(1, 500)}:{randint(1, 80)}: error: {sentence(WORDS, 6)} `{ident()}`",
                f"PASSED tests/test_{ident()}.py::test_{'_'.join(choice(WORDS) for _ in range(randint(2, 8)))}",
                f'$ git commit -m "{sentence(WORDS, 5)}" --no-verify && npm run {ident()} -- --watch',
                f"-rw-r--r-- 1 user staff {randint(100, 99999)} {path()} sha256:{rng.getrandbits(256):064x}",
            ]
        )

    def prose() -> str:
        return " ".join(
            sentence(WORDS, randint(5, 20)).capitalize() + choice([".", "?", ":", f" `{ident()}`."])
            for _ in range(randint(2, 8))
        )

    def russian() -> str:
        return " ".join(sentence(RUSSIAN, randint(5, 15)).capitalize() + "." for _ in range(randint(2, 6)))

    def chinese() -> str:
        out = []
        for _ in range(randint(2, 6)):
            s = "".join(choice(CHINESE) for _ in range(randint(8, 30)))
            out.append((s[:5] + ident() + s[5:] if rng.random() < 0.5 else s) + "。")
        return "".join(out)

    texts, total = [], 0
    while total < n_bytes:
        kind = rng.random()
        if kind < 0.35:
            text = "\n".join(code_line() for _ in range(randint(3, 60)))
        elif kind < 0.6:
            text = "\n".join(log_line() for _ in range(randint(3, 60)))
        elif kind < 0.9:
            text = "\n\n".join(prose() for _ in range(randint(1, 6)))
        elif kind < 0.95:
            text = russian() + f" `{ident()}`"
        else:
            text = chinese()
        texts.append(text)
        total += len(text.encode())
    return texts


@pytest.mark.skipif(not os.environ.get("DEJA_BENCH_MB"), reason="set DEJA_BENCH_MB to measure throughput")
def test_throughput() -> None:
    texts = realistic_corpus(int(float(os.environ["DEJA_BENCH_MB"]) * 1e6))
    n_bytes = sum(len(t.encode()) for t in texts)
    ids, column = pa.array(range(len(texts)), pa.int64()), pa.array(texts, pa.large_string())
    token_counts_batch(ids[:100], column[:100])  # warm up: pattern compilation
    runs = []
    for _ in range(int(os.environ.get("DEJA_BENCH_RUNS", "3"))):
        wall, cpu = time.perf_counter(), time.process_time()
        table = token_counts_batch(ids, column)
        runs.append((time.perf_counter() - wall, time.process_time() - cpu))
    mb = n_bytes / 1e6
    best_wall, best_cpu = min(w for w, _ in runs), min(c for _, c in runs)
    print(
        f"\n{mb:.1f} MB, {len(texts)} records, {table.num_rows} rows; "
        + "; ".join(f"wall {w:.2f}s cpu {c:.2f}s" for w, c in runs)
        + f"; best {mb / best_wall:.1f} MB/s wall, {mb / best_cpu:.1f} MB/s per CPU-second"
    )
