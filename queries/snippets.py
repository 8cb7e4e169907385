"""Snippets: the lines of a served session's best records that hold the query
words, a quoted phrase or a ``--re`` match, elided around them. Records are
read only here, for the hits a search serves.
"""

from __future__ import annotations

import bisect
import re

from deja.stages.shown import shown
from deja.stages.store import duck
from deja.stages.store.read import LiveStore
from deja.stages.tokenize import bucket_of

from .query_parse import ROLE_CODE, role_name
from .sqlfiles import load as load_sql


def snippets(store: LiveStore, roles: tuple[int, ...], ords: list[int], groups: list[list[str]],
             phrases: list[str], regex: str | None, keys: list[str],
             best: list[tuple[int, int, int]] | None = None) -> dict[int, list[str]]:
    """The matched lines of each session's best records (``best``: the
    (ord, record id, role) the ranking chose, else chosen here among
    ``roles``); ``keys``: the sessions' keys, in the order of ``ords``."""
    if not ords or not store.has("records"):
        return {}
    needles = [p.lower() for p in phrases] or sorted({t for g in groups for t in g})
    source = store.records_of(keys)
    if regex:
        # RE2 finds the match and the text before it (a lazy prefix, so the
        # leftmost match): the line around it is cut here without a second,
        # backtracking engine. A few records a session are enough for 3 lines.
        rows = store.con.execute(
            "SELECT ord, text, regexp_extract(text, ?, ['pre', 'hit']) FROM ("
            f"SELECT s.ord, r.record_id, r.text FROM {source} r JOIN sessions s ON r.session_key = s.session_key "
            "WHERE s.ord IN (SELECT unnest(?)) AND regexp_matches(r.text, ?) "
            "QUALIFY row_number() OVER (PARTITION BY s.ord ORDER BY r.record_id DESC) <= 8) "
            "ORDER BY record_id DESC",
            ["^((?s:.*?))(" + regex + ")", ords, regex],
        ).fetchall()
        return _collect([(o, (text, m)) for o, text, m in rows], lambda tm: _line_of_match(*tm))
    if best is None:
        tokens, gids = [], []
        for gid, g in enumerate(groups):
            for t in g:
                tokens.append(t)
                gids.append(gid)
        if not tokens:
            return {}
        best = [(r[0], r[1], None) for r in store.con.execute(
            load_sql("best_records"),
            {"files": store.postings_for_buckets({bucket_of(t) for t in tokens}), "tokens": tokens,
             "gids": gids, "ords": ords, "roles": list(roles), "per_session": 3},
        ).fetchall()]
    if not best:
        return {}
    order = {rid: (o, i) for i, (o, rid, _) in enumerate(best)}
    texts: list = []
    if store.hot:  # a warm process holds the texts a search shows (store/hot.py)
        texts, best = _held_texts(store, best, keys, ords)
    if best:
        texts += store.con.execute(_texts_sql(store, best, keys, ords)).fetchall()
    texts.sort(key=lambda r: order[r[0]])
    return _collect([(order[rid][0], text) for rid, text in texts], lambda text: best_line(text, needles))


def _held_texts(store: LiveStore, best: list[tuple[int, int, int | None]], keys: list[str],
                ords: list[int]) -> tuple[list[tuple[int, str]], list[tuple[int, int, int | None]]]:
    """The best records' texts a warm process holds (store/hot.py: from the
    parts holding their sessions), and the records left to fetch from Parquet."""
    from deja.stages.store import hot

    held_roles = {ROLE_CODE[r] for r in hot.HELD_ROLES}
    key_of = dict(zip(ords, keys))
    sets = store.memo.setdefault("part_key_sets", {})  # records part → its sessions, as a set
    found, rest = [], []
    for o, rid, role in best:
        text = None
        if role in held_roles:
            key = key_of.get(o)
            for part in store.files.get("records", []):
                held = store.part_keys.get(part)
                if held is not None:
                    if part not in sets:
                        sets[part] = set(held)
                    if key not in sets[part]:
                        continue
                texts = hot.texts(store.con, part)
                if texts is not None and (text := texts.get(rid)) is not None:
                    break
        if text is None:
            rest.append((o, rid, role))
        else:
            found.append((rid, text))
    return found, rest


def _texts_sql(store: LiveStore, best: list[tuple[int, int, int | None]], keys: list[str], ords: list[int]) -> str:
    """The query for the best records' texts: one scan of the parts of the
    sessions that hold them (each part opened costs a reader's start, which
    at a dozen parts is most of the fetch). Parts keep each role in row
    groups of their own: with the records' roles (the ranking returns them),
    the row groups of the other roles are skipped by their statistics, so a
    part whose best records were said does not decompress its tool output."""
    ids = [rid for _, rid, _ in best]
    if any(role is None for _, _, role in best):
        return duck.inline(f"SELECT record_id, text FROM {store.records_of(keys, hive=False)} "
                           "WHERE record_id IN (SELECT unnest($ids))", ids=ids)
    key_of = dict(zip(ords, keys))
    holding = {key_of.get(o, "") for o, _, _ in best}
    roles = sorted({role_name(role) for _, _, role in best})
    # the roles as a literal list: a filter the Parquet scan applies itself
    # (~1 ms less than a semi join); the ids stay a join (as a literal list
    # they cost more than they prune)
    return duck.inline(f"SELECT record_id, text FROM {store.records_of(holding, hive=False)} "
                       f"WHERE role IN ({duck.sql_list(roles)[1:-1]}) AND record_id IN (SELECT unnest($ids))",
                       ids=ids)


def _collect(rows, pick) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for ord_, text in rows:
        lines = out.setdefault(ord_, [])
        if len(lines) >= 3:
            continue
        line = pick(text)
        if line and line not in lines:
            lines.append(line)
    return out


def best_line(text: str, needles: list[str], width: int = 220) -> str:
    """The line of a record holding the most query words (the first of
    equals), elided around them."""
    low = text.lower()
    if len(low) != len(text):  # (lower-casing moved offsets: a rare letter like İ)
        return _elide_around(" ".join(_best_line_by_line(text, needles).split()), needles, width)
    # Each needle's occurrences in the whole text, counted on the lines they
    # fall in: a record of a thousand lines is not lower-cased line by line.
    if _RARE_BREAK.search(text):  # breaks other than \n: the lines, listed
        ends = [m.start() for m in _LINE_BREAK.finditer(text)]
        ends.append(len(text))

        def line_of(at: int) -> tuple[int, int]:
            line = bisect.bisect_right(ends, at)
            return _line_start(text, ends, line), ends[line]
    else:  # the common case: a line is what lies between two \n around a hit
        def line_of(at: int) -> tuple[int, int]:
            end = low.find("\n", at)
            return low.rfind("\n", 0, at) + 1, end if end >= 0 else len(low)
    found: dict[tuple[int, int], int] = {}  # line (start, end) → the needles on it, as bits
    for bit, needle in enumerate(needles):
        if not needle:
            continue
        at = low.find(needle)
        while at >= 0:
            line = line_of(at)
            if at + len(needle) <= line[1]:  # (not across a line break)
                found[line] = found.get(line, 0) | 1 << bit
                at = low.find(needle, line[1])  # the next line: once a line is enough
            else:
                at = low.find(needle, at + 1)
    if found:
        start, end = min(found, key=lambda line: (-found[line].bit_count(), line[0]))
    else:  # no needle: the first line
        start, end = 0, next((m.start() for m in _LINE_BREAK.finditer(text)), len(text))
    return _elide_around(" ".join(text[start:end].split()), needles, width)


# what str.splitlines breaks at (\r\n is one break)
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_RARE_BREAK = re.compile("[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _line_start(text: str, ends: list[int], line: int) -> int:
    if not line:
        return 0
    prev = ends[line - 1]
    return prev + (2 if text.startswith("\r\n", prev) else 1)


def _best_line_by_line(text: str, needles: list[str]) -> str:
    best, best_hits = "", -1
    for line in text.splitlines():
        low = line.lower()
        hits = sum(1 for n in needles if n in low)
        if hits > best_hits:
            best, best_hits = line, hits
            if hits == len(needles):
                break
    return best


def _line_of_match(text: str, found: dict) -> str:
    """The line where RE2's leftmost match starts (``found``: the text before
    it, and the match), elided around the match."""
    pre, hit = found["pre"], found["hit"]
    start = pre.rfind("\n") + 1
    end = text.find("\n", len(pre))
    line = text[start: end if end >= 0 else len(text)]
    return _elide_around(" ".join(line.split()), [" ".join(hit.split()).lower()], 220)


def _elide_around(line: str, needles: list[str], width: int) -> str:
    """The line (redacted under today's rules before it is cut: deja.stages.shown)
    at most ``width`` characters, around the first needle it holds."""
    line = shown(line)
    if len(line) <= width:
        return line
    low = line.lower()
    pos = min((low.find(n) for n in needles if n and n in low), default=0)
    start = max(0, pos - width // 3)
    return ("…" if start else "") + line[start : start + width].rstrip() + "…"
