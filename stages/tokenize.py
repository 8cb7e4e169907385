"""Tokens: the unit of the postings index and of every query.

Three implementations of one rule set live here and must agree exactly, token
for token (``tests/test_tokenize.py`` checks it on a varied sample):

* ``tokenize`` / ``query_terms``: pure Python (``re`` + ``unicodedata``), for
  the search path, which must not pay for importing polars or pyarrow;
* ``token_counts_batch``, for indexing whole batches: in C (``_tokens.c``,
  one pass over the Arrow buffers, fed the tables below), or with polars
  where that extension was not built (a machine without a compiler).

The rules (the CLI contract §5.1, plus compound parts and CJK folding):

1. Text is NFC-normalised.
2. A *run* is a maximal stretch of letters (Unicode L*), decimal digits (Nd),
   combining marks (M*), ``_`` and ``-`` that starts at a letter or digit, or
   at underscores directly before one, and does not end with ``-``
   (``--flags`` → ``flags``, ``__init__`` → ``__init__``). So a mark with no
   base before it starts nothing, ``___`` is no token, and everything else
   separates runs: dotted and path forms split by themselves,
   ``src/db/pool.go:42`` → ``src db pool go 42``. Variation selectors are not
   marks here (``❤️`` yields nothing).
3. The run, lower-cased, is a token. Lower-casing is Python's ``str.lower``
   with final sigma folded to ``σ``: final sigma is the only case mapping that
   depends on context, so after the fold a word lower-cases the same wherever
   it stands, in both engines.
4. A run that is a compound also yields its parts, right after the whole
   token. A run is a compound if it contains ``_``, ``-`` or a camel boundary;
   its parts are its pieces between ``_``, ``-`` and camel boundaries, each
   lower-cased and starting at a letter or digit (leading marks dropped).
   Camel boundaries look at ASCII case only, so the same rule holds in both
   regex engines:
     - lower-case letter or digit → capital: ``parseJson`` → ``parse json``,
       ``Json2Config`` → ``json2 config``;
     - before the last capital of an acronym that runs into a capitalised
       word: ``HTTPServer`` → ``http server``.
   Digits are never split from the letters before them, so version and width
   suffixes stay searchable as written (``utf8``, ``int64``, ``base64``,
   ``sha256``, ``ipv6``): ``parseJSON2Config`` → ``parse json2 config``.
   The rule is mechanical: ``IPv4Address`` → ``i pv4 address`` (the whole
   ``ipv4address`` is still a token).
   Runs longer than ``MAX_COMPOUND_BYTES`` are data (base64, hex dumps), not
   identifiers: they yield no parts.
5. Han, Hiragana, Katakana, and the unspaced Thai, Lao, Khmer and Myanmar
   scripts (``BIGRAM_BLOCKS``) are not run characters: each stretch of them
   yields its overlapping two-character bigrams (a lone character yields
   itself), so ``使用pytest运行`` → ``使用 pytest 运行``. Hangul, Cyrillic,
   Greek, Arabic, Devanagari… are ordinary letters.
6. Every token (whole or part) longer than ``MAX_TOKEN_BYTES`` in UTF-8 is cut
   into pieces of at most that many bytes, on code-point boundaries; tokens
   and pieces shorter than ``MIN_TOKEN_BYTES`` are dropped.

Which characters are letters, digits, marks or bigram characters is pinned in
the tables at the end of this file (Unicode 14.0, as in Python 3.11), not read
from the running Python or polars: tokens are stored in the index, so they
must not change when either library updates its Unicode database.
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
import unicodedata
from collections.abc import Iterable

from deja.stages.store.layout import N_BUCKETS, bucket_column, bucket_of  # noqa: F401  (postings buckets are the store's layout)

TYPE_CHECKING = False  # (not typing's: importing typing would cost the search path)
if TYPE_CHECKING:
    from typing import Any

    import polars as pl
    import pyarrow as pa

MIN_TOKEN_BYTES = 2
MAX_TOKEN_BYTES = 64
MAX_COMPOUND_BYTES = 256

__all__ = [
    "tokenize",
    "query_terms",
    "token_counts_batch",
    "token_counts_lists",
    "bucket_of",
    "bucket_column",
    "BIGRAM_BLOCKS",
    "MIN_TOKEN_BYTES",
    "MAX_TOKEN_BYTES",
    "MAX_COMPOUND_BYTES",
    "N_BUCKETS",
]

# Scripts written without spaces between words: a run would be a whole
# phrase, so they are indexed as character bigrams instead.
BIGRAM_BLOCKS = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer Symbols
    (0xA9E0, 0xA9FF),  # Myanmar Extended-B
    (0xAA60, 0xAA7F),  # Myanmar Extended-A
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # vertical kana repeat marks
    (0x3038, 0x303C),
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),  # halfwidth Katakana
    (0x1B000, 0x1B16F),  # Kana Supplement, Extended-A, Small Kana
    (0x20000, 0x323AF),  # CJK Extension B and later, Compatibility Supplement
)
_VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))

# Camel boundaries as insert-a-space substitutions: polars' regex engine has
# no look-around, and both engines must apply the very same rule.
_CAMEL_LOWER_UPPER = r"([a-z0-9])([A-Z])"
_CAMEL_ACRONYM_END = r"([A-Z])([A-Z][a-z])"
_COMPOUND = r"[_\-]|[a-z0-9][A-Z]|[A-Z][A-Z][a-z]"
_PART = r"[^ _\-]+"

# Python's re walks the non-BMP ranges of a class one by one for every
# character outside the class, which made tokenize many times slower. So the
# Python patterns hold only BMP ranges, and each non-BMP character is first
# replaced by one BMP stand-in for its class (a private-use code point; such
# code points already in the text become separators). One code point for one
# keeps match offsets valid in the original text.
_WORD_STAND_IN, _MARK_STAND_IN, _BIGRAM_STAND_IN = "\ue000", "\ue001", "\ue002"


def tokenize(text: str) -> list[str]:
    """Tokens of ``text`` in text order, repeats kept, parts after their whole."""
    if not text:
        return []
    p = _python_patterns()
    if text.isascii():
        masked, token = text, p.ascii_token
    else:
        text = unicodedata.normalize("NFC", text)
        masked, token = p.outside_bmp.sub(_stand_in, text), p.token
    out: list[str] = []
    for m in token.finditer(masked):
        start, end = m.span()
        if m.lastindex:  # the bigram group
            _emit_bigrams(text[start:end], out)
        else:
            _emit_run(text[start:end].rstrip("-"), out, p)
    return out


def query_terms(text: str) -> list[str]:
    """Tokens of a user query, each once, in first-seen order."""
    return list(dict.fromkeys(tokenize(text)))


def token_counts_batch(
    record_ids: Iterable[int] | Any, texts: Iterable[str | None] | Any, *, buckets: bool = False
) -> pa.Table:
    """Term frequencies of a batch of records.

    One row per distinct (record_id, token): ``record_id`` int64, ``token``
    string, ``tf`` int32, and ``rec_len`` int32 (the record's total token
    count, parts included), and with ``buckets`` the token's postings
    ``bucket`` int32. Records without tokens have no rows; row order is
    unspecified. ``record_ids`` must be unique within the batch; a null text
    counts as empty.
    """
    import pyarrow as pa

    small = _small_batch(record_ids, texts) if ENGINE in (None, "python") else None
    if small is not None:
        # an appended turn or two: the pure-Python rules (identical by test) cost
        # less than importing polars or loading the C tokenizer's tables
        counts = pa.table(token_counts_lists(*small), schema=_counts_schema())
    elif ENGINE != "polars" and (native := _native()) is not None:
        return _native_counts(native, record_ids, texts, buckets)
    else:
        counts = _polars_counts(record_ids, texts)
    if buckets:
        counts = counts.append_column("bucket", bucket_column(counts.column("token")))
    return counts


def _counts_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [("record_id", pa.int64()), ("token", pa.string()), ("tf", pa.int32()), ("rec_len", pa.int32())]
    )


def _polars_counts(record_ids: Any, texts: Any) -> pa.Table:
    import polars as pl

    schema = _counts_schema()
    frame = _batch_frame(pl, record_ids, texts)
    if frame.height == 0:
        return schema.empty_table()

    # Polars runs a string kernel on one core per call, so the batch is cut
    # into one slice of about equal bytes per core, counted side by side.
    n = pl.thread_pool_size() if frame.height >= 64 else 1
    if n > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(n) as pool:
            counts = pl.concat(pool.map(_count_tokens, _slices(frame, n)))
    else:
        counts = _count_tokens(frame)
    counts = _cut_long_tokens(counts)
    return counts.to_arrow(compat_level=pl.CompatLevel.newest()).select(schema.names).cast(schema)


SMALL_BATCH_CHARS = 256 * 1024
# Which implementation counts a batch: None chooses by the batch and by what
# the process has loaded; the tests set "python", "polars" or "native".
ENGINE: str | None = None


def _small_batch(record_ids: Any, texts: Any) -> tuple[list, list] | None:
    choose = ENGINE is None  # (else the tests asked for the Python rules, whatever the batch)
    if choose and ("polars" in sys.modules or _NATIVE_READY):
        # a process that has polars or the C tables loaded already (a big run:
        # its last slice of a flush is small) counts faster with them; the small
        # path is for not loading either
        return None
    ids = record_ids.to_pylist() if hasattr(record_ids, "to_pylist") else list(record_ids)
    if choose and len(ids) > 2000:
        return None
    txt = texts.to_pylist() if hasattr(texts, "to_pylist") else list(texts)
    if len(ids) != len(txt):
        raise ValueError("token_counts_batch: record_ids and texts differ in length")
    if choose and sum(len(t) for t in txt if t) > SMALL_BATCH_CHARS:
        return None
    if len(set(ids)) != len(ids):
        raise ValueError("token_counts_batch: record_ids must be unique within a batch")
    return ids, txt


def token_counts_lists(ids: list, texts: list) -> dict[str, list]:
    """``token_counts_batch``'s rows as plain lists, by the pure-Python rules:
    what small index runs use, with no pyarrow or polars to import. Rows come
    record by record, tokens in first-seen order."""
    out: dict[str, list] = {"record_id": [], "token": [], "tf": [], "rec_len": []}
    for rid, text in zip(ids, texts):
        toks = tokenize(text or "")
        counts: dict[str, int] = {}
        for t in toks:
            counts[t] = counts.get(t, 0) + 1
        for t, n in counts.items():
            out["record_id"].append(rid)
            out["token"].append(t)
            out["tf"].append(n)
            out["rec_len"].append(len(toks))
    return out


# --- the C implementation -----------------------------------------------------------

_NATIVE_READY = False


def _native() -> Any:
    """``deja.stages._tokens``, its tables loaded; None where it was not built."""
    global _NATIVE_READY
    try:
        from deja.stages import _tokens
    except ImportError:
        return None
    if not _NATIVE_READY:
        _tokens.configure(*_native_tables())
        _NATIVE_READY = True
    return _tokens


def _native_tables() -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """The character classes as the C tokenizer reads them, and every folded
    lower case that differs, from this Python's ``str.lower`` (as rule 3 says)."""
    from array import array

    bmp = bytearray(0x10000)
    astral: list[tuple[int, int, int]] = []
    for table, cls in ((_WORD, 1), (_MARK, 2), (_BIGRAM, 3)):
        for lo, hi in table:
            if lo <= 0xFFFF:
                bmp[lo : min(hi, 0xFFFF) + 1] = bytes([cls]) * (min(hi, 0xFFFF) + 1 - lo)
            if hi > 0xFFFF:
                astral.append((max(lo, 0x10000), hi, cls))
    astral.sort()
    lower_cps, lower_offsets, lower_data = array("I"), array("I", [0]), bytearray()
    for cp in sorted(cp for lo, hi in _WORD + _MARK for cp in range(max(lo, 0x80), hi + 1)):
        folded = _fold_case(chr(cp))
        if folded != chr(cp):
            lower_cps.append(cp)
            lower_data += folded.encode("utf-8")
            lower_offsets.append(len(lower_data))
    return (bytes(bmp), array("I", [v for t in astral for v in t]).tobytes(), lower_cps.tobytes(),
            lower_offsets.tobytes(), bytes(lower_data))


def _native_counts(native: Any, record_ids: Any, texts: Any, buckets: bool) -> pa.Table:
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = _arrow_array(record_ids, pa.int64())
    texts = _arrow_array(texts, pa.string())
    if len(ids) != len(texts):
        raise ValueError("token_counts_batch: record_ids and texts differ in length")
    if ids.null_count:
        raise ValueError("token_counts_batch: a record_id is null")
    if pc.count_distinct(ids).as_py() != len(ids):
        raise ValueError("token_counts_batch: record_ids must be unique within a batch")
    texts = _nfc(texts.fill_null("") if texts.null_count else texts)
    large = pa.types.is_large_string(texts.type)
    offsets, data = texts.buffers()[1:3]
    rows, rid, offs, chars, tf, rec_len, bucket = native.count(
        ids.buffers()[1].slice(ids.offset * 8, len(ids) * 8), offsets, data if data is not None else b"",
        texts.offset, len(texts), large, MIN_TOKEN_BYTES, MAX_TOKEN_BYTES, MAX_COMPOUND_BYTES, N_BUCKETS,
    )
    columns = {
        "record_id": pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(rid)]),
        "token": pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(offs), pa.py_buffer(chars)]),
        "tf": pa.Array.from_buffers(pa.int32(), rows, [None, pa.py_buffer(tf)]),
        "rec_len": pa.Array.from_buffers(pa.int32(), rows, [None, pa.py_buffer(rec_len)]),
    }
    if buckets:
        columns["bucket"] = pa.Array.from_buffers(pa.int32(), rows, [None, pa.py_buffer(bucket)])
    return pa.table(columns)


def _arrow_array(values: Any, type: pa.DataType) -> pa.Array:
    """One Arrow array of ``type`` (strings may stay large) from whatever a caller holds."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    elif not isinstance(values, pa.Array):
        if hasattr(values, "to_arrow"):  # a polars Series
            values = values.to_arrow()
        else:
            values = pa.array(list(values), type)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
    if values.type != type and not (pa.types.is_string(type) and pa.types.is_large_string(values.type)):
        values = values.cast(pa.large_string() if pa.types.is_string(type) else type)
    return values


def _nfc(texts: pa.Array) -> pa.Array:
    """Rule 1: the texts, NFC. Only non-ASCII texts can differ, and normalize's
    quick check passes the (many) that are NFC already."""
    import pyarrow as pa
    import pyarrow.compute as pc

    non_ascii = pc.not_equal(pc.binary_length(texts), pc.utf8_length(texts))
    if not pc.any(non_ascii).as_py():
        return texts
    at = pc.indices_nonzero(non_ascii)
    changed = {}
    for i, text in zip(at.to_pylist(), pc.take(texts, at).to_pylist(), strict=True):
        if not unicodedata.is_normalized("NFC", text):
            changed[i] = unicodedata.normalize("NFC", text)
    if not changed:
        return texts
    mask = pa.array([i in changed for i in range(len(texts))])
    return pc.replace_with_mask(texts, mask, pa.array(list(changed.values()), texts.type))


# --- the polars implementation ------------------------------------------------------


def _batch_frame(pl: Any, record_ids: Any, texts: Any) -> pl.DataFrame:
    """record_id; text, NFC; runs_text, the text to find whole runs in; has_bigrams.

    Rows come out in no particular order (counting does not care).
    """
    record_ids, texts = _to_series(pl, record_ids, pl.Int64), _to_series(pl, texts, pl.String)
    if len(record_ids) != len(texts):
        raise ValueError("token_counts_batch: record_ids and texts differ in length")
    frame = pl.DataFrame({"record_id": record_ids, "text": texts})
    if frame["record_id"].is_duplicated().any():
        raise ValueError("token_counts_batch: record_ids must be unique within a batch")
    frame = frame.with_columns(pl.col("text").fill_null(""))
    # Only non-ASCII rows need the steps below, so only they pay for them.
    non_ascii = pl.col("text").str.len_bytes() != pl.col("text").str.len_chars()
    plain = frame.filter(~non_ascii).with_columns(runs_text="text", has_bigrams=False)
    other = frame.filter(non_ascii)
    if other.height == 0:
        return plain
    pat = _polars_patterns()
    # NFC with Python's own tables, so both implementations normalise alike;
    # normalize() hands already-NFC text back after a fast check.
    nfc = pl.Series([unicodedata.normalize("NFC", t) for t in other["text"]], dtype=pl.String)
    other = other.with_columns(
        text=nfc,
        # Polars' Unicode is newer than the tables, and it lower-cases some
        # letters they do not know into letters they do: characters outside
        # the classes are blanked before runs_text is lower-cased.
        runs_text=nfc.str.replace_all(pat.non_ascii_separators, " "),
        has_bigrams=nfc.str.contains(pat.bigram_run),
    )
    return pl.concat([plain, other])


def _slices(frame: pl.DataFrame, n: int) -> list[pl.DataFrame]:
    ends = frame["text"].str.len_bytes().cum_sum()
    total = ends[-1]
    cuts = [0, *(int(ends.search_sorted(total * i // n)) for i in range(1, n)), frame.height]
    return [frame.slice(start, stop - start) for start, stop in zip(cuts, cuts[1:], strict=False)]


def _count_tokens(frame: pl.DataFrame) -> pl.DataFrame:
    """(record_id, token, tf, rec_len) of a batch, long tokens still whole."""
    import polars as pl

    pat = _polars_patterns()
    text = pl.col("text")
    # Every compound run, spaced at its part boundaries: extracting runs from
    # this text gives exactly the parts, in the same pass as the wholes.
    parts_text = (
        text.str.extract_all(pat.compound_run)
        .list.eval(pl.element().filter(pl.element().str.len_bytes() <= MAX_COMPOUND_BYTES))
        .list.join(" ")
        .str.replace_many(pat.camel_pairs, pat.camel_pairs_spaced)
        .str.replace_all(_CAMEL_ACRONYM_END, "${1} ${2}")
        .str.replace_many(["_", "-"], [" ", " "])
    )
    # Lower-casing the text before extracting runs gives the runs of the
    # original, lower-cased: the test suite checks that case folding never
    # moves a character in or out of a class.
    words = pl.concat_str(
        _fold_case_expr(pl.col("runs_text")), pl.lit(" "), _fold_case_expr(parts_text)
    ).str.extract_all(pat.run_of_two_bytes)

    tokens = [frame.filter(~pl.col("has_bigrams")).select("record_id", tokens=words)]
    cjk = frame.filter("has_bigrams")
    if cjk.height:
        chars = pl.col("run").str.split("")
        bigrams = (
            cjk.select("record_id", run=text.str.extract_all(pat.bigram_run))
            .explode("run")
            .select(
                "record_id",
                bigrams=pl.when(chars.list.len() == 1)
                .then(chars)
                .otherwise(chars.list.eval(pl.element() + pl.element().shift(-1)).list.drop_nulls()),
            )
            .explode("bigrams")
            .group_by("record_id")
            .agg("bigrams")
        )
        tokens.append(
            cjk.select("record_id", words=words)
            .join(bigrams, on="record_id")
            .select("record_id", tokens=pl.concat_list("words", "bigrams"))
        )

    # Both lists are in order of first appearance, so they line up (and this
    # is faster than value_counts).
    return (
        pl.concat(tokens)
        .select(
            "record_id",
            token=pl.col("tokens").list.unique(maintain_order=True),
            tf=pl.col("tokens").list.eval(pl.element().unique_counts().cast(pl.Int32)),
            rec_len=pl.col("tokens").list.len().cast(pl.Int32),
        )
        .explode("token", "tf")
        .drop_nulls("token")
    )


def _cut_long_tokens(counts: pl.DataFrame) -> pl.DataFrame:
    """Rule 6 for the few records with a token over MAX_TOKEN_BYTES.

    Pieces may repeat each other or other tokens of the record, so those
    records are counted again.
    """
    import polars as pl

    n_bytes = pl.col("token").str.len_bytes()
    long_ids = counts.filter(n_bytes > MAX_TOKEN_BYTES)["record_id"].unique()
    if long_ids.is_empty():
        return counts
    affected = pl.col("record_id").is_in(long_ids.implode())
    redo = counts.filter(affected)
    long = redo.filter(n_bytes > MAX_TOKEN_BYTES)
    is_ascii = n_bytes == pl.col("token").str.len_chars()
    ascii_pieces = long.filter(is_ascii).with_columns(
        token=pl.col("token").str.extract_all(f".{{1,{MAX_TOKEN_BYTES}}}")
    )
    # Pieces bounded in bytes are no regular language outside ASCII; such
    # tokens are rare, so Python cuts them.
    other = long.filter(~is_ascii)
    other_pieces = other.with_columns(
        token=pl.Series([_pieces(t) for t in other["token"]], dtype=pl.List(pl.String))
    )
    pieces = pl.concat([ascii_pieces, other_pieces]).explode("token").filter(n_bytes >= MIN_TOKEN_BYTES)
    recounted = (
        pl.concat([redo.filter(n_bytes <= MAX_TOKEN_BYTES), pieces])
        .group_by("record_id", "token")
        .agg(pl.col("tf").sum())
        .with_columns(rec_len=pl.col("tf").sum().over("record_id"))
        .select(counts.columns)
        .cast(dict(counts.schema))
    )
    return pl.concat([counts.filter(~affected), recounted])


def _fold_case_expr(expr: Any) -> Any:
    return expr.str.to_lowercase().str.replace_all("ς", "σ", literal=True)


def _to_series(pl: Any, values: Any, dtype: Any) -> pl.Series:
    if isinstance(values, pl.Series):
        return values.cast(dtype)
    if hasattr(values, "__arrow_c_array__") or hasattr(values, "__arrow_c_stream__"):
        return pl.Series(values=values).cast(dtype)
    return pl.Series(values=list(values), dtype=dtype)


# --- the Python implementation --------------------------------------------------------


def _fold_case(s: str) -> str:
    return s.lower().replace("ς", "σ")


def _pieces(token: str) -> list[str]:
    """``token`` cut to at most MAX_TOKEN_BYTES, without pieces under MIN_TOKEN_BYTES."""
    if token.isascii():
        if len(token) <= MAX_TOKEN_BYTES:
            return [token] if len(token) >= MIN_TOKEN_BYTES else []
        pieces = [token[i : i + MAX_TOKEN_BYTES] for i in range(0, len(token), MAX_TOKEN_BYTES)]
        return [p for p in pieces if len(p) >= MIN_TOKEN_BYTES]
    data = token.encode("utf-8")
    out = []
    start = 0
    while start < len(data):
        end = min(start + MAX_TOKEN_BYTES, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:  # inside a code point
            end -= 1
        if end - start >= MIN_TOKEN_BYTES:
            out.append(data[start:end].decode("utf-8"))
        start = end
    return out


def _emit_run(run: str, out: list[str], p: _PythonPatterns) -> None:
    out.extend(_pieces(_fold_case(run)))
    if p.compound.search(run) and len(run.encode("utf-8")) <= MAX_COMPOUND_BYTES:
        spaced = p.acronym_end.sub(r"\1 \2", p.lower_upper.sub(r"\1 \2", run))
        for part in p.part.findall(spaced):
            part = _without_leading_marks(part)
            if part:
                out.extend(_pieces(_fold_case(part)))


def _emit_bigrams(run: str, out: list[str]) -> None:
    # Every bigram character takes 3 or 4 bytes: no length rule applies.
    if len(run) == 1:
        out.append(run)
    else:
        out.extend(run[i : i + 2] for i in range(len(run) - 1))


def _without_leading_marks(part: str) -> str:
    i = 0
    while i < len(part) and part[i] >= "\u0300" and _in_table(ord(part[i]), _MARK):
        i += 1
    return part[i:]


def _in_table(cp: int, table: list[tuple[int, int]]) -> bool:
    i = bisect.bisect_right(table, (cp, 0x10FFFF)) - 1
    return i >= 0 and cp <= table[i][1]


def _stand_in(m: re.Match[str]) -> str:
    cp = ord(m.group())
    if cp > 0xFFFF:
        for table, stand_in in (
            (_WORD, _WORD_STAND_IN),
            (_MARK, _MARK_STAND_IN),
            (_BIGRAM, _BIGRAM_STAND_IN),
        ):
            if _in_table(cp, table):
                return stand_in
    return " "  # an unclassed character, or a stand-in already in the text


# --- patterns -------------------------------------------------------------------------


def _parse_table(table: str) -> list[tuple[int, int]]:
    ranges = []
    for item in table.split():
        lo, _, hi = item.partition("-")
        ranges.append((int(lo, 16), int(hi or lo, 16)))
    return ranges


def _class_body(ranges: Iterable[tuple[int, int]]) -> str:
    """Ranges as the inside of a regex class, in syntax both engines read."""

    def esc(cp: int) -> str:
        return f"\\u{cp:04X}" if cp <= 0xFFFF else f"\\U{cp:08X}"

    return "".join(esc(lo) if lo == hi else f"{esc(lo)}-{esc(hi)}" for lo, hi in ranges)


def _compound_run_pattern(word: str, mark: str) -> str:
    """The runs that ``_COMPOUND`` finds something in, and only those.

    Each branch, once it matches at the start of a run, runs on to its end;
    and it cannot match inside a run that is not a compound.
    """
    letter, run_char, run_end = f"[{word}]", f"[{word}{mark}_\\-]", f"[{word}{mark}_]"
    rest = f"(?:{run_char}*{run_end})?"
    return "|".join(
        [
            f"_+{letter}{rest}",  # starts with underscores
            f"{letter}[{word}{mark}]*(?:[_\\-]{run_char}*{run_end}|_)",  # first _ or - inside
            f"(?:{letter}[{word}{mark}]*)?(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z]){rest}",  # camel, no _ or -
        ]
    )


class _PythonPatterns:
    def __init__(self) -> None:
        # Rule 2 for ASCII text, where the word characters are letters and digits
        # and there are no marks or bigram scripts (the tables say so): a class
        # of three ranges compiles in a small fraction of the full one's time,
        # which an appended turn or a query in English need not pay.
        ascii_word = _class_body((lo, min(hi, 0x7F)) for lo, hi in _WORD if lo <= 0x7F)
        self.ascii_token = re.compile(f"_*[{ascii_word}][{ascii_word}_\\-]*")
        self.lower_upper = re.compile(_CAMEL_LOWER_UPPER)
        self.acronym_end = re.compile(_CAMEL_ACRONYM_END)
        self.compound = re.compile(_COMPOUND)
        self.part = re.compile(_PART)

    @functools.cached_property
    def token(self) -> re.Pattern[str]:
        def bmp(ranges: list[tuple[int, int]]) -> str:
            return _class_body((lo, min(hi, 0xFFFF)) for lo, hi in ranges if lo <= 0xFFFF)

        word = bmp(_WORD) + _WORD_STAND_IN
        mark = bmp(_MARK) + _MARK_STAND_IN
        bigram = bmp(_BIGRAM) + _BIGRAM_STAND_IN
        # Rule 2, except that a run's trailing hyphens are stripped after the
        # match: a class fewer to compile on every process's first query.
        return re.compile(f"([{bigram}]+)|_*[{word}][{word}{mark}_\\-]*")

    @functools.cached_property
    def outside_bmp(self) -> re.Pattern[str]:
        return re.compile(f"[\\U00010000-\\U0010FFFF{_WORD_STAND_IN}{_MARK_STAND_IN}{_BIGRAM_STAND_IN}]")


class _PolarsPatterns:
    def __init__(self) -> None:
        word, mark = _class_body(_WORD), _class_body(_MARK)
        non_ascii_word = _class_body((max(lo, 0x80), hi) for lo, hi in _WORD if hi >= 0x80)
        # Rule 2 with MIN_TOKEN_BYTES built in, for lower-cased text, where a
        # run is under 2 bytes only if it is one ASCII letter or digit. Each
        # branch matches a whole run: one with a tail after its first letter,
        # underscores and one letter, or a single non-ASCII letter.
        assert MIN_TOKEN_BYTES == 2
        self.run_of_two_bytes = "|".join(
            [
                f"_*[{word}][{word}{mark}_\\-]*[{word}{mark}_]",
                f"_+[{word}]",
                f"[{non_ascii_word}]",
            ]
        )
        self.compound_run = _compound_run_pattern(word, mark)
        # _CAMEL_LOWER_UPPER as literal pairs: polars substitutes those in one
        # Aho-Corasick pass, faster than with a capturing regex.
        lower_or_digit, upper = "abcdefghijklmnopqrstuvwxyz0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        self.camel_pairs = [a + b for a in lower_or_digit for b in upper]
        self.camel_pairs_spaced = [f"{pair[0]} {pair[1]}" for pair in self.camel_pairs]
        self.non_ascii_separators = f"[^\\x00-\\x7F{word}{mark}]+"
        self.bigram_run = f"[{_class_body(_BIGRAM)}]+"


@functools.cache
def _python_patterns() -> _PythonPatterns:
    # Compiled on first use, not at import; the Unicode classes only for non-ASCII text.
    return _PythonPatterns()


@functools.cache
def _polars_patterns() -> _PolarsPatterns:
    return _PolarsPatterns()


# --- character tables -----------------------------------------------------------------


def _derive_tables() -> dict[str, str]:
    """Recompute the tables below from this Python's ``unicodedata``.

    Under Python 3.11 (Unicode 14.0) this checks them; under a newer Python
    it moves the index to a newer Unicode, which changes tokens: a reindex.
    """

    def inside(cp: int, blocks: Iterable[tuple[int, int]]) -> bool:
        return any(lo <= cp <= hi for lo, hi in blocks)

    word, mark, bigram = [], [], []
    for cp in range(0x110000):
        cat = unicodedata.category(chr(cp))
        if cat[0] not in "LMN" or inside(cp, _VARIATION_SELECTORS):
            continue
        if inside(cp, BIGRAM_BLOCKS):
            if cat[0] in "LM" or cat in ("Nd", "Nl"):
                bigram.append(cp)
        elif cat[0] == "L" or cat == "Nd":
            word.append(cp)
        elif cat[0] == "M":
            mark.append(cp)

    def fmt(cps: list[int]) -> str:
        ranges: list[list[int]] = []
        for cp in cps:
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
        items = [f"{lo:x}" if lo == hi else f"{lo:x}-{hi:x}" for lo, hi in ranges]
        lines, line = [], ""
        for item in items:
            if len(line) + len(item) + 1 > 96:
                lines.append(line)
                line = ""
            line = f"{line} {item}" if line else item
        return "\n".join([*lines, line])

    return {"word": fmt(word), "mark": fmt(mark), "bigram": fmt(bigram)}


# Generated by _derive_tables() under Unicode 14.0.0. Hex code points; "a-b" is a
# range. WORD: letters and decimal digits; MARK: combining marks (no variation
# selectors); BIGRAM: letters, marks and numbers of BIGRAM_BLOCKS.
_WORD_TABLE = """
30-39 41-5a 61-7a aa b5 ba c0-d6 d8-f6 f8-2c1 2c6-2d1 2e0-2e4 2ec 2ee 370-374 376-377 37a-37d
37f 386 388-38a 38c 38e-3a1 3a3-3f5 3f7-481 48a-52f 531-556 559 560-588 5d0-5ea 5ef-5f2 620-64a
660-669 66e-66f 671-6d3 6d5 6e5-6e6 6ee-6fc 6ff 710 712-72f 74d-7a5 7b1 7c0-7ea 7f4-7f5 7fa
800-815 81a 824 828 840-858 860-86a 870-887 889-88e 8a0-8c9 904-939 93d 950 958-961 966-96f
971-980 985-98c 98f-990 993-9a8 9aa-9b0 9b2 9b6-9b9 9bd 9ce 9dc-9dd 9df-9e1 9e6-9f1 9fc a05-a0a
a0f-a10 a13-a28 a2a-a30 a32-a33 a35-a36 a38-a39 a59-a5c a5e a66-a6f a72-a74 a85-a8d a8f-a91
a93-aa8 aaa-ab0 ab2-ab3 ab5-ab9 abd ad0 ae0-ae1 ae6-aef af9 b05-b0c b0f-b10 b13-b28 b2a-b30
b32-b33 b35-b39 b3d b5c-b5d b5f-b61 b66-b6f b71 b83 b85-b8a b8e-b90 b92-b95 b99-b9a b9c b9e-b9f
ba3-ba4 ba8-baa bae-bb9 bd0 be6-bef c05-c0c c0e-c10 c12-c28 c2a-c39 c3d c58-c5a c5d c60-c61
c66-c6f c80 c85-c8c c8e-c90 c92-ca8 caa-cb3 cb5-cb9 cbd cdd-cde ce0-ce1 ce6-cef cf1-cf2 d04-d0c
d0e-d10 d12-d3a d3d d4e d54-d56 d5f-d61 d66-d6f d7a-d7f d85-d96 d9a-db1 db3-dbb dbd dc0-dc6
de6-def f00 f20-f29 f40-f47 f49-f6c f88-f8c 10a0-10c5 10c7 10cd 10d0-10fa 10fc-1248 124a-124d
1250-1256 1258 125a-125d 1260-1288 128a-128d 1290-12b0 12b2-12b5 12b8-12be 12c0 12c2-12c5
12c8-12d6 12d8-1310 1312-1315 1318-135a 1380-138f 13a0-13f5 13f8-13fd 1401-166c 166f-167f
1681-169a 16a0-16ea 16f1-16f8 1700-1711 171f-1731 1740-1751 1760-176c 176e-1770 1810-1819
1820-1878 1880-1884 1887-18a8 18aa 18b0-18f5 1900-191e 1946-196d 1970-1974 1980-19ab 19b0-19c9
19d0-19d9 1a00-1a16 1a20-1a54 1a80-1a89 1a90-1a99 1aa7 1b05-1b33 1b45-1b4c 1b50-1b59 1b83-1ba0
1bae-1be5 1c00-1c23 1c40-1c49 1c4d-1c7d 1c80-1c88 1c90-1cba 1cbd-1cbf 1ce9-1cec 1cee-1cf3
1cf5-1cf6 1cfa 1d00-1dbf 1e00-1f15 1f18-1f1d 1f20-1f45 1f48-1f4d 1f50-1f57 1f59 1f5b 1f5d
1f5f-1f7d 1f80-1fb4 1fb6-1fbc 1fbe 1fc2-1fc4 1fc6-1fcc 1fd0-1fd3 1fd6-1fdb 1fe0-1fec 1ff2-1ff4
1ff6-1ffc 2071 207f 2090-209c 2102 2107 210a-2113 2115 2119-211d 2124 2126 2128 212a-212d
212f-2139 213c-213f 2145-2149 214e 2183-2184 2c00-2ce4 2ceb-2cee 2cf2-2cf3 2d00-2d25 2d27 2d2d
2d30-2d67 2d6f 2d80-2d96 2da0-2da6 2da8-2dae 2db0-2db6 2db8-2dbe 2dc0-2dc6 2dc8-2dce 2dd0-2dd6
2dd8-2dde 2e2f 3105-312f 3131-318e 31a0-31bf a000-a48c a4d0-a4fd a500-a60c a610-a62b a640-a66e
a67f-a69d a6a0-a6e5 a717-a71f a722-a788 a78b-a7ca a7d0-a7d1 a7d3 a7d5-a7d9 a7f2-a801 a803-a805
a807-a80a a80c-a822 a840-a873 a882-a8b3 a8d0-a8d9 a8f2-a8f7 a8fb a8fd-a8fe a900-a925 a930-a946
a960-a97c a984-a9b2 a9cf-a9d9 aa00-aa28 aa40-aa42 aa44-aa4b aa50-aa59 aa80-aaaf aab1 aab5-aab6
aab9-aabd aac0 aac2 aadb-aadd aae0-aaea aaf2-aaf4 ab01-ab06 ab09-ab0e ab11-ab16 ab20-ab26
ab28-ab2e ab30-ab5a ab5c-ab69 ab70-abe2 abf0-abf9 ac00-d7a3 d7b0-d7c6 d7cb-d7fb fb00-fb06
fb13-fb17 fb1d fb1f-fb28 fb2a-fb36 fb38-fb3c fb3e fb40-fb41 fb43-fb44 fb46-fbb1 fbd3-fd3d
fd50-fd8f fd92-fdc7 fdf0-fdfb fe70-fe74 fe76-fefc ff10-ff19 ff21-ff3a ff41-ff5a ffa0-ffbe
ffc2-ffc7 ffca-ffcf ffd2-ffd7 ffda-ffdc 10000-1000b 1000d-10026 10028-1003a 1003c-1003d
1003f-1004d 10050-1005d 10080-100fa 10280-1029c 102a0-102d0 10300-1031f 1032d-10340 10342-10349
10350-10375 10380-1039d 103a0-103c3 103c8-103cf 10400-1049d 104a0-104a9 104b0-104d3 104d8-104fb
10500-10527 10530-10563 10570-1057a 1057c-1058a 1058c-10592 10594-10595 10597-105a1 105a3-105b1
105b3-105b9 105bb-105bc 10600-10736 10740-10755 10760-10767 10780-10785 10787-107b0 107b2-107ba
10800-10805 10808 1080a-10835 10837-10838 1083c 1083f-10855 10860-10876 10880-1089e 108e0-108f2
108f4-108f5 10900-10915 10920-10939 10980-109b7 109be-109bf 10a00 10a10-10a13 10a15-10a17
10a19-10a35 10a60-10a7c 10a80-10a9c 10ac0-10ac7 10ac9-10ae4 10b00-10b35 10b40-10b55 10b60-10b72
10b80-10b91 10c00-10c48 10c80-10cb2 10cc0-10cf2 10d00-10d23 10d30-10d39 10e80-10ea9 10eb0-10eb1
10f00-10f1c 10f27 10f30-10f45 10f70-10f81 10fb0-10fc4 10fe0-10ff6 11003-11037 11066-1106f
11071-11072 11075 11083-110af 110d0-110e8 110f0-110f9 11103-11126 11136-1113f 11144 11147
11150-11172 11176 11183-111b2 111c1-111c4 111d0-111da 111dc 11200-11211 11213-1122b 11280-11286
11288 1128a-1128d 1128f-1129d 1129f-112a8 112b0-112de 112f0-112f9 11305-1130c 1130f-11310
11313-11328 1132a-11330 11332-11333 11335-11339 1133d 11350 1135d-11361 11400-11434 11447-1144a
11450-11459 1145f-11461 11480-114af 114c4-114c5 114c7 114d0-114d9 11580-115ae 115d8-115db
11600-1162f 11644 11650-11659 11680-116aa 116b8 116c0-116c9 11700-1171a 11730-11739 11740-11746
11800-1182b 118a0-118e9 118ff-11906 11909 1190c-11913 11915-11916 11918-1192f 1193f 11941
11950-11959 119a0-119a7 119aa-119d0 119e1 119e3 11a00 11a0b-11a32 11a3a 11a50 11a5c-11a89 11a9d
11ab0-11af8 11c00-11c08 11c0a-11c2e 11c40 11c50-11c59 11c72-11c8f 11d00-11d06 11d08-11d09
11d0b-11d30 11d46 11d50-11d59 11d60-11d65 11d67-11d68 11d6a-11d89 11d98 11da0-11da9 11ee0-11ef2
11fb0 12000-12399 12480-12543 12f90-12ff0 13000-1342e 14400-14646 16800-16a38 16a40-16a5e
16a60-16a69 16a70-16abe 16ac0-16ac9 16ad0-16aed 16b00-16b2f 16b40-16b43 16b50-16b59 16b63-16b77
16b7d-16b8f 16e40-16e7f 16f00-16f4a 16f50 16f93-16f9f 16fe0-16fe1 16fe3 17000-187f7 18800-18cd5
18d00-18d08 1aff0-1aff3 1aff5-1affb 1affd-1affe 1b170-1b2fb 1bc00-1bc6a 1bc70-1bc7c 1bc80-1bc88
1bc90-1bc99 1d400-1d454 1d456-1d49c 1d49e-1d49f 1d4a2 1d4a5-1d4a6 1d4a9-1d4ac 1d4ae-1d4b9 1d4bb
1d4bd-1d4c3 1d4c5-1d505 1d507-1d50a 1d50d-1d514 1d516-1d51c 1d51e-1d539 1d53b-1d53e 1d540-1d544
1d546 1d54a-1d550 1d552-1d6a5 1d6a8-1d6c0 1d6c2-1d6da 1d6dc-1d6fa 1d6fc-1d714 1d716-1d734
1d736-1d74e 1d750-1d76e 1d770-1d788 1d78a-1d7a8 1d7aa-1d7c2 1d7c4-1d7cb 1d7ce-1d7ff 1df00-1df1e
1e100-1e12c 1e137-1e13d 1e140-1e149 1e14e 1e290-1e2ad 1e2c0-1e2eb 1e2f0-1e2f9 1e7e0-1e7e6
1e7e8-1e7eb 1e7ed-1e7ee 1e7f0-1e7fe 1e800-1e8c4 1e900-1e943 1e94b 1e950-1e959 1ee00-1ee03
1ee05-1ee1f 1ee21-1ee22 1ee24 1ee27 1ee29-1ee32 1ee34-1ee37 1ee39 1ee3b 1ee42 1ee47 1ee49 1ee4b
1ee4d-1ee4f 1ee51-1ee52 1ee54 1ee57 1ee59 1ee5b 1ee5d 1ee5f 1ee61-1ee62 1ee64 1ee67-1ee6a
1ee6c-1ee72 1ee74-1ee77 1ee79-1ee7c 1ee7e 1ee80-1ee89 1ee8b-1ee9b 1eea1-1eea3 1eea5-1eea9
1eeab-1eebb 1fbf0-1fbf9
"""

_MARK_TABLE = """
300-36f 483-489 591-5bd 5bf 5c1-5c2 5c4-5c5 5c7 610-61a 64b-65f 670 6d6-6dc 6df-6e4 6e7-6e8
6ea-6ed 711 730-74a 7a6-7b0 7eb-7f3 7fd 816-819 81b-823 825-827 829-82d 859-85b 898-89f 8ca-8e1
8e3-903 93a-93c 93e-94f 951-957 962-963 981-983 9bc 9be-9c4 9c7-9c8 9cb-9cd 9d7 9e2-9e3 9fe
a01-a03 a3c a3e-a42 a47-a48 a4b-a4d a51 a70-a71 a75 a81-a83 abc abe-ac5 ac7-ac9 acb-acd ae2-ae3
afa-aff b01-b03 b3c b3e-b44 b47-b48 b4b-b4d b55-b57 b62-b63 b82 bbe-bc2 bc6-bc8 bca-bcd bd7
c00-c04 c3c c3e-c44 c46-c48 c4a-c4d c55-c56 c62-c63 c81-c83 cbc cbe-cc4 cc6-cc8 cca-ccd cd5-cd6
ce2-ce3 d00-d03 d3b-d3c d3e-d44 d46-d48 d4a-d4d d57 d62-d63 d81-d83 dca dcf-dd4 dd6 dd8-ddf
df2-df3 f18-f19 f35 f37 f39 f3e-f3f f71-f84 f86-f87 f8d-f97 f99-fbc fc6 135d-135f 1712-1715
1732-1734 1752-1753 1772-1773 180b-180d 180f 1885-1886 18a9 1920-192b 1930-193b 1a17-1a1b
1a55-1a5e 1a60-1a7c 1a7f 1ab0-1ace 1b00-1b04 1b34-1b44 1b6b-1b73 1b80-1b82 1ba1-1bad 1be6-1bf3
1c24-1c37 1cd0-1cd2 1cd4-1ce8 1ced 1cf4 1cf7-1cf9 1dc0-1dff 20d0-20f0 2cef-2cf1 2d7f 2de0-2dff
302a-302f a66f-a672 a674-a67d a69e-a69f a6f0-a6f1 a802 a806 a80b a823-a827 a82c a880-a881
a8b4-a8c5 a8e0-a8f1 a8ff a926-a92d a947-a953 a980-a983 a9b3-a9c0 aa29-aa36 aa43 aa4c-aa4d aab0
aab2-aab4 aab7-aab8 aabe-aabf aac1 aaeb-aaef aaf5-aaf6 abe3-abea abec-abed fb1e fe20-fe2f 101fd
102e0 10376-1037a 10a01-10a03 10a05-10a06 10a0c-10a0f 10a38-10a3a 10a3f 10ae5-10ae6 10d24-10d27
10eab-10eac 10f46-10f50 10f82-10f85 11000-11002 11038-11046 11070 11073-11074 1107f-11082
110b0-110ba 110c2 11100-11102 11127-11134 11145-11146 11173 11180-11182 111b3-111c0 111c9-111cc
111ce-111cf 1122c-11237 1123e 112df-112ea 11300-11303 1133b-1133c 1133e-11344 11347-11348
1134b-1134d 11357 11362-11363 11366-1136c 11370-11374 11435-11446 1145e 114b0-114c3 115af-115b5
115b8-115c0 115dc-115dd 11630-11640 116ab-116b7 1171d-1172b 1182c-1183a 11930-11935 11937-11938
1193b-1193e 11940 11942-11943 119d1-119d7 119da-119e0 119e4 11a01-11a0a 11a33-11a39 11a3b-11a3e
11a47 11a51-11a5b 11a8a-11a99 11c2f-11c36 11c38-11c3f 11c92-11ca7 11ca9-11cb6 11d31-11d36 11d3a
11d3c-11d3d 11d3f-11d45 11d47 11d8a-11d8e 11d90-11d91 11d93-11d97 11ef3-11ef6 16af0-16af4
16b30-16b36 16f4f 16f51-16f87 16f8f-16f92 16fe4 16ff0-16ff1 1bc9d-1bc9e 1cf00-1cf2d 1cf30-1cf46
1d165-1d169 1d16d-1d172 1d17b-1d182 1d185-1d18b 1d1aa-1d1ad 1d242-1d244 1da00-1da36 1da3b-1da6c
1da75 1da84 1da9b-1da9f 1daa1-1daaf 1e000-1e006 1e008-1e018 1e01b-1e021 1e023-1e024 1e026-1e02a
1e130-1e136 1e2ae 1e2ec-1e2ef 1e8d0-1e8d6 1e944-1e94a
"""

_BIGRAM_TABLE = """
e01-e3a e40-e4e e50-e59 e81-e82 e84 e86-e8a e8c-ea3 ea5 ea7-ebd ec0-ec4 ec6 ec8-ecd ed0-ed9
edc-edf 1000-1049 1050-109d 1780-17d3 17d7 17dc-17dd 17e0-17e9 3005-3007 3021-3029 3031-3035
3038-303c 3041-3096 3099-309a 309d-309f 30a1-30fa 30fc-30ff 31f0-31ff 3400-4dbf 4e00-9fff
a9e0-a9fe aa60-aa76 aa7a-aa7f f900-fa6d fa70-fad9 ff66-ff9f 1b000-1b122 1b150-1b152 1b164-1b167
20000-2a6df 2a700-2b738 2b740-2b81d 2b820-2cea1 2ceb0-2ebe0 2f800-2fa1d 30000-3134a
"""

_WORD = _parse_table(_WORD_TABLE)
_MARK = _parse_table(_MARK_TABLE)
_BIGRAM = _parse_table(_BIGRAM_TABLE)
