"""Semantic recall: the store's vectors (stages/store/vectors.py) next to the
lexical ladder, so a question that shares no word with its session still
finds it.

The candidate pool is the lexical ranking's first ``POOL`` sessions plus the
``POOL`` sessions nearest the query's vector (a session's nearest passage by
cosine, one matrix product over every passage: tens of thousands of rows of
256 floats take a few milliseconds, which no vector index beats at this
size). Each session in the pool scores

    LEXICAL_WEIGHT × lexical / best lexical  +  meaning's share × cosine / best cosine

where ``cosine`` is the session's nearest passage (the pool's best counts 1,
as the best lexical score does), and meaning's share is 1 − LEXICAL_WEIGHT
when the words found nothing of the question, less as they account for more
of it: (1 − LEXICAL_WEIGHT) × (MEANING_FLOOR + (1 − MEANING_FLOOR) ×
√(1 − coverage)), ``coverage`` being the share of the question's words the
best lexical session holds. A question whose words a session holds every one
of is answered by words first; meaning still breaks near-ties. (At a fixed
half, the vectors of a static model cost a public benchmark of long
conversations, LoCoMo, 2 points of R@1 against words alone: its questions
name people and things the words find, and every session of a conversation
reads alike to the model. Gated, it is even with words there, and the
quality set keeps most of its gain: bench/README.md.) The bounded lifts and
damps (a decision, a note, giving up, recency) apply once per session: a
lexical score carries them, and a session only the vectors found has them on
its cosine. (Applied to every cosine as well, they counted twice for the
lexical candidates, and cost the quality set's keyword questions 6 points of
R@1.) A session only the vectors found is served with tier ``semantic``. A
pasted error line stays lexical: its signature (query_parse.error_words) is
literal evidence, and a line of a stack trace means little to a model of
words; so does a pasted row of a command's aligned output (a pod's name, its
status, its restarts).

Each model's cosines are read by its ``Calibration``: the static model's as
above; a transformer's (e5) less the store's mean passage, from the
question's own 75th percentile, alone where the words found under a third of
the question, with a session's second-nearest passage counted too, and with
meaning's whole share where the vectors' first session leads their second
by far.

A warm process (``deja serve``, ``deja mcp``) keeps the vectors and the model
in memory, reloaded when `deja embed` commits new ones.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from deja.stages import embedders
from deja.stages.store import vectors

POOL = 64
LEXICAL_WEIGHT = 0.5
# meaning's share when the best lexical session holds every word of the question
MEANING_FLOOR = 0.2
# A hook's recall keeps a session only the vectors found when it is at least
# this near (DEJA_EMBED_MIN_COSINE): with the local model, the quality set's
# answers sit at a median cosine of 0.42 and the other sessions at 0.16 (99th
# percentile 0.39). A search and MCP recall, asked, rank by meaning without it.
HOOK_MIN_COSINE = 0.5
# Role codes (stages/roles.py) of the records that are embedded: what was said
SPEECH_CODES = (0, 1, 3, 4, 8)


class Calibration(NamedTuple):
    """How one model's cosines are read. ``centred``: measured from the
    store's mean passage (the vectors less their common part); ``centre``:
    the quantile of the sessions' cosines (for this question) that counts as
    no likeness, None for 0; ``low_coverage``: below this share of the
    question's words found, the words' best session is chance and meaning
    alone ranks the pool; ``second``: the weight of a
    session's second-nearest passage in its likeness (the nearest has the
    rest); ``lead``: a lead of the vectors' first session over their second
    (in cosine) at which meaning takes its whole share, whatever the words
    found (a share of it below), None for never."""
    centred: bool = False
    centre: float | None = None
    low_coverage: float = 0.0
    second: float = 0.0
    lead: float | None = None


# The static model's cosines spread from about 0 to 1, and its idea of a
# question a third of whose words the store holds is no better than the words'
# (a German or Chinese question, most of all). A transformer's vectors share a
# large common part: e5's cosines all sit between 0.75 and 0.92, and a short
# passage of code can be the nearest to every question. Less the store's mean
# passage they spread (the quality sets' answers at a median of 0.39, the
# other sessions 0.14); read from the
# question's own 75th percentile up, and trusted where few words were found,
# they rank the three quality sets far better than the static model and no
# kind worse than the words alone by more than one question (bench/README.md).
# A session that two passages answer is nearer than one a single passage does
# (the vectors alone: the generated set's natural questions 0.69 → 0.82 R@1),
# and e5's first session is right when it leads the second by far: a median
# lead of 0.05–0.14 where it is, 0.02 where it is not, on all three sets, so a
# lead of 0.05 gives meaning its whole share. (The static model's second
# passage and lead told little, and cost LoCoMo 1–2 points.)
# e5 asks a question in 20-30 ms on one core. After the words it took the prompt
# hook, warm, to 47 ms at the median (18 without), past its 40 ms; asked beside
# them (Asked), 33 ms on a busy machine, so the hook asks it too.
# An endpoint's model is read as e5 is, but for the lead: centring (little
# change for a model whose cosines already spread), the second passage and
# the low-coverage rule say of any model that reads a passage whole what they
# say of e5. all-MiniLM-L6-v2 served over HTTP (an English model), R@1 / R@5
# read as the static model and read so: the generated set 0.711 / 0.843 and
# 0.762 / 0.900 (paraphrases 0.104 / 0.433 and 0.313 / 0.642), the real
# transcripts 0.522 / 0.611 and 0.511 / 0.667, LoCoMo 0.691 / 0.915 and
# 0.685 / 0.911. The lead is e5's own: it cost MiniLM 2.4 points of LoCoMo
# more (bench/README.md). Only a model named as static embeddings keeps the
# static reading.
STATIC = Calibration()
CONTEXTUAL = Calibration(centred=True, centre=0.75, low_coverage=1 / 3, second=0.3)
E5 = CONTEXTUAL._replace(lead=0.05)
STATIC_NAMES = r"wordllama|model2vec|potion-|static-|glove|fasttext|word2vec"


def calibration(model: str) -> Calibration:
    """The calibration of a vectors dataset's model (its stamp): the static
    model's for WordLlama and an endpoint's static embeddings, e5's for e5
    (local or served), the contextual reading for every other endpoint."""
    import re

    if model == embedders.LOCAL_MODEL or re.search(STATIC_NAMES, model.lower()):
        return STATIC
    if model == embedders.E5_MODEL or re.search(embedders.E5_NAMES, model.lower()):
        return E5
    return CONTEXTUAL


_VECTORS: dict = {}  # store root → (stamp, Vectors): a warm process's, across catalogs


class Unavailable(Exception):
    """Semantic recall cannot answer this query (the query's vector failed):
    said once, and the lexical order stands."""


class Space:
    """A store's vectors in memory, with each passage's session ordinal and
    the passages grouped by session (for each session's nearest passage)."""

    def __init__(self, vecs: vectors.Vectors, ords, stamp):
        import numpy as np

        self.vecs, self.stamp = vecs, stamp
        self.model = vecs.model
        self.calib = calibration(vecs.model)
        self.unread = vecs.unread
        self.ords = np.asarray(ords, np.int64)  # -1: a record no longer live
        total = vecs.matrix.sum(axis=0, dtype=np.float64) if len(vecs) else None
        if total is not None and not np.isfinite(total).all():
            # a row that is no vector (a NaN an endpoint gave, which deja kept
            # before it refused them) would make every cosine NaN: no passage
            bad = ~np.isfinite(vecs.matrix).all(axis=1)
            vecs.matrix = np.where(bad[:, None], np.float32(0), vecs.matrix)
            self.ords = np.where(bad, -1, self.ords)
            total = vecs.matrix.sum(axis=0, dtype=np.float64)
        self.order = np.argsort(self.ords, kind="stable")
        sorted_ords = self.ords[self.order]
        self.session_ords, self.starts = np.unique(sorted_ords, return_index=True)
        self.ends = np.append(self.starts[1:], len(sorted_ords)).astype(np.int64)
        self.group = np.repeat(np.arange(len(self.starts)), self.ends - self.starts)  # each sorted passage's session
        self.mean = None
        if self.calib.centred and len(vecs):
            # cosines less the mean passage, without a second matrix: for unit
            # rows p and q, (p-m)·(q-m) = p·q - p·m - q·m + m·m, |p-m|² = 1 - 2p·m + m·m
            self.mean = (total / len(vecs)).astype(np.float32)
            self.mm = float(self.mean @ self.mean)
            self.pm = vecs.matrix @ self.mean
            self.pn = np.sqrt(np.maximum(1.0 - 2.0 * self.pm + self.mm, 1e-12)).astype(np.float32)

    def cosines(self, qv):
        """Every passage's cosine to the query's vector (less the mean passage
        when the model's calibration says so)."""
        import numpy as np

        sims = self.vecs.matrix @ qv
        if self.mean is None:
            return sims
        qm = float(qv @ self.mean)
        qn = max(1.0 - 2.0 * qm + self.mm, 1e-12) ** 0.5
        return (sims - self.pm - qm + self.mm) / (self.pn * qn)

    def nearest(self, qv, roles: tuple[int, ...], admitted: set[int] | None, k: int = POOL):
        """(each session's likeness by ord, the k nearest sessions in order
        with their nearest passage (record id, role)). A session's likeness
        is its nearest passage's cosine, with the calibration's ``second``
        share given to its second-nearest."""
        import numpy as np

        sims = self.cosines(qv)
        ok = self.ords >= 0
        if set(roles) != set(SPEECH_CODES):
            ok &= np.isin(self.vecs.roles, np.asarray(roles, np.int8))
        if admitted is not None:
            ok &= np.isin(self.ords, np.fromiter(admitted, np.int64, len(admitted)))
        masked = np.where(ok, sims, -2.0).astype(np.float32)[self.order]
        if not len(masked):
            return {}, []
        best = np.maximum.reduceat(masked, self.starts)
        like = best
        if self.calib.second:
            at_best = masked == best[self.group]
            rest = np.maximum.reduceat(np.where(at_best, -2.0, masked), self.starts)
            # two passages equally near: the second is as near as the first
            rest = np.where(np.add.reduceat(at_best, self.starts) > 1, best, rest)
            like = np.where(rest > -2.0, (1 - self.calib.second) * best + self.calib.second * rest, best)
        live = np.flatnonzero(best > -2.0)
        cos = {int(o): float(c) for o, c in zip(self.session_ords[live], like[live])}
        top = live[np.argpartition(-like[live], k)[:k]] if len(live) > k else live
        top = top[np.argsort(-like[top], kind="stable")]
        found: list[tuple[int, int, int]] = []
        for g in top:
            lo, hi = self.starts[g], self.ends[g]
            i = self.order[lo + int(np.argmax(masked[lo:hi]))]
            found.append((int(self.ords[i]), int(self.vecs.ids[i]), int(self.vecs.roles[i])))
        return cos, found


def preload(root) -> None:
    """A warm process's vectors read as it starts (``space`` takes them from
    here): its first request then measures its memory with them, and no
    search pays the read."""
    st = vectors.stamp(root)
    if st is not None and not embedders.disabled():
        _kept_vectors(root, st, keep=True)


def _kept_vectors(root, st, keep: bool):
    """The committed vectors (stamped ``st``): a warm process's kept ones while
    the stamp stands, else read (and kept, with ``keep``); None when unsound."""
    kept = _VECTORS.get(str(root))
    if kept is not None and kept[0] == st:
        return kept[1]
    vecs = vectors.load(root, sessions=False)
    if vecs is None or not len(vecs):
        return None
    if keep:
        _VECTORS[str(root)] = (st, vecs)
    return vecs


def space(store) -> Space | None:
    """The store's vectors as a Space, or None when it has none (or none
    sound). A warm process keeps the vectors until `deja embed` commits
    again, and their sessions' places while the store's catalog is the same
    (a new generation may have replaced records or dropped sessions)."""
    import numpy as np

    st = vectors.stamp(store.root)
    if st is None:
        return None
    hot = getattr(store, "hot", False)
    if hot:
        got = store.memo.get("semantic_space")
        if got is not None and got.stamp == st:
            return got
    vecs = _kept_vectors(store.root, st, keep=hot)
    if vecs is None:
        return None
    # each passage's session, from the store's docs (a live record's session
    # ordinal; a record replaced or forgotten since the last `deja embed` has none)
    from .score_arrays import Docs, docs_of

    docs = docs_of(store) if hot else Docs(store.con)
    at, found = docs.find(vecs.ids)
    alive = found & docs.alive[at] if len(at) else found
    ords = np.where(alive, docs.session[at] if len(at) else -1, -1)
    sp = Space(vecs, ords, st)
    if hot:
        store.memo["semantic_space"] = sp
    return sp


def hook_min_cosine() -> float:
    import os

    try:
        return float(os.environ.get("DEJA_EMBED_MIN_COSINE") or HOOK_MIN_COSINE)
    except ValueError:
        return HOOK_MIN_COSINE


def query_vector(sp: Space, text: str, env=None, timeout: float = embedders.QUERY_TIMEOUT_S):
    """The query's vector from the model the store's vectors came from
    (``timeout``: how long an HTTP source may take); Unavailable when it
    cannot be had."""
    return _checked(_embed_query(sp.model, text, env, timeout), sp)


def _embed_query(model: str, text: str, env, timeout: float):
    try:
        emb = embedders.for_model(model, env)
    except embedders.EmbedError as exc:  # a source misconfigured, and the vectors' own model not here
        raise Unavailable(str(exc)) from None
    if emb is None:
        raise Unavailable(f"the vectors were made by {model}, which this environment cannot run "
                          "(set DEJA_EMBED_URL and DEJA_EMBED_MODEL to it, or run `deja embed` again)")
    try:
        return emb.embed_query(text, timeout=timeout)
    except embedders.EmbedError as exc:
        raise Unavailable(str(exc)) from None


def _checked(m, sp: Space):
    if m.shape != (1, sp.vecs.dim):
        raise Unavailable(f"the query's vector has {m.shape[-1]} dimensions, the store's {sp.vecs.dim}")
    return m[0]


class Asked:
    """A question's vector, asked for before the words are ranked: the model
    runs in a thread while DuckDB ranks (both leave the GIL, so on two cores
    the vector costs a search about what it costs beyond the words, not its
    whole 20-30 ms). ``vector`` waits for it; an error is raised there, as
    ``query_vector`` raises it."""

    def __init__(self, model: str, text: str, timeout: float):
        import threading

        self.model, self.text = model, text
        self._got: tuple = ()
        # (a daemon: a search that ends without fusing does not wait for it)
        self._thread = threading.Thread(target=self._ask, args=(timeout,), daemon=True)
        self._thread.start()

    def _ask(self, timeout: float) -> None:
        try:
            self._got = (_embed_query(self.model, self.text, None, timeout), None)
        except BaseException as exc:  # (raised again, in the search's own thread)
            self._got = (None, exc)

    def vector(self, sp: Space, wait: float):
        """The vector, waited for at most ``wait`` seconds (a local model has
        no timeout of its own: on a machine too busy to run it, a hook goes
        on with its words)."""
        self._thread.join(wait)
        if self._thread.is_alive():
            raise Unavailable(f"{self.model} took longer than {wait:g} s")
        m, exc = self._got
        if exc is not None:
            raise exc
        return _checked(m, sp)


def meaning_share(coverage: float, weight: float = LEXICAL_WEIGHT) -> float:
    """Meaning's weight in the fusion when the best lexical session holds
    ``coverage`` (0..1) of the question's words (see the module's doc)."""
    import math

    missing = min(1.0, max(0.0, 1.0 - coverage))
    return (1.0 - weight) * (MEANING_FLOOR + (1.0 - MEANING_FLOOR) * math.sqrt(missing))


def fuse(lexical: list[tuple[int, float]], cos: dict[int, float], found: list[int],
         signal: dict[int, float] | None = None, weight: float = LEXICAL_WEIGHT,
         coverage: float = 0.0, calib: Calibration = STATIC) -> list[tuple[int, float, bool]]:
    """The pool ranked: (ord, fused score, found only by vector), best first.
    ``lexical``: (ord, normalised lexical score in 0..1) in lexical order;
    ``cos``: each session's likeness (Space.nearest); ``found``: the ords
    of the nearest sessions; ``signal``: a session's bounded lifts and
    damps (1 when absent); ``coverage``: the share of the question's words
    the best lexical session holds (0: meaning takes its whole share);
    ``calib``: how the model's cosines are read."""
    import numpy as np

    signal = signal or {}
    share = meaning_share(coverage, weight)
    if coverage < calib.low_coverage:
        weight, share = 0.0, 1.0
    elif calib.lead and len(cos) > 1:
        import heapq

        first, second = heapq.nlargest(2, cos.values())
        share = min(1.0 - weight, share + (1.0 - weight) * min(1.0, (first - second) / calib.lead))
    pool = [o for o, _ in lexical] + [o for o in found]
    # the pool's nearest session counts 1, as the best lexical score does; no
    # likeness counts 0: a cosine of 0, or the model's centre for this question
    top = max((cos.get(o, 0.0) for o in pool), default=0.0)
    low = float(np.quantile(np.fromiter(cos.values(), np.float64, len(cos)), calib.centre)) \
        if calib.centre is not None and cos else 0.0
    scale = 1.0 / (top - low) if top > low else 0.0

    def meaning(o: int) -> float:
        return max(0.0, cos.get(o, low) - low) * scale * signal.get(o, 1.0)

    out: dict[int, tuple[float, bool]] = {}
    for o, lex in lexical:
        out[o] = (weight * lex + share * meaning(o), False)
    for o in found:
        # (a session neither above the question's centre nor nearer it than the
        # store's average passage, or than nothing for a model read raw, is no
        # evidence: not served. Either alone is: where every session of a
        # conversation reads alike, the answer may be nearer than most yet below
        # the average passage; in a store of a few sessions the centre is the second.)
        near = meaning(o)
        if o not in out and (near > 0.0 or cos.get(o, 0.0) > 0.0):
            out[o] = (share * near, True)
    lex_pos = {o: i for i, (o, _) in enumerate(lexical)}
    return sorted(((o, s, only) for o, (s, only) in out.items()),
                  key=lambda t: (-t[1], lex_pos.get(t[0], len(lex_pos)), t[0]))


# what a pasted line has and a question does not: punctuation of code and
# paths, a dotted name, a number
_PASTE = r"[:/\\()\[\]\"=]|\w\.\w|\d"


# columns a terminal aligned (a `kubectl get pods` or `ps` row): nobody types them
_COLUMNS = r"\S(?: {3,}|\t)\S"


def pasted_error(text: str) -> bool:
    """A pasted error line or stack frame (not a question that says "failed"),
    or a row of a command's aligned output: it reads like an error
    (query_parse.error_words) or spaces its fields into columns, and carries
    code's punctuation, a dotted name or a number."""
    import re

    from .query_parse import error_words

    return bool(re.search(_PASTE, text)) and (bool(re.search(_COLUMNS, text)) or bool(error_words(text)))


def trace(path: str, con, text: str, lexical: list[tuple[int, float]], cos: dict[int, float], found: list[int],
          coverage: float, calib: Calibration) -> None:
    """One line of JSON per fused search, appended to ``path`` (DEJA_FUSE_TRACE,
    set by the quality bench's ``score.py --trace``): the pool as the fusion saw
    it, by session id, so its ``replay.py`` can rank it again another way
    without searching again. Every session's likeness and its lifts and
    damps, not only the pool's."""
    import json

    ids = dict(con.execute("SELECT ord, session_id FROM sessions").fetchall())
    signal = session_signals(con, sorted(cos))
    line = {"q": text, "coverage": coverage, "calib": calib._asdict(),
            "lexical": [[ids[o], score] for o, score in lexical],
            "found": [ids[o] for o in found],
            "likeness": {ids[o]: c for o, c in cos.items()},
            "signal": {ids[o]: v for o, v in signal.items()}}
    import os

    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:  # one write a line: two searches at once do not interleave theirs
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def session_signals(con, ords: list[int]) -> dict[int, float]:
    """The bounded lifts and damps of rank.py for these sessions (a decision,
    a note, giving up; recency), from the search's session table
    (sql/search_tables.sql: the one place they are read from the sessions)."""
    from .rank import freshness, signals

    if not ords:
        return {}
    from deja.stages.store.duck import sql_list

    now = time.time() * 1000
    rows = con.execute("SELECT ord, decided, gave_up, note, updated FROM q_sessions "
                       f"WHERE ord IN (SELECT unnest({sql_list(ords)}))").fetchall()
    return {o: signals(d, g, n) * freshness(u, now) for o, d, g, n, u in rows}
