"""A local embedding server for the tests (tests/test_semantic.py), started as
a subprocess: Ollama's ``POST /api/embed`` and the OpenAI-compatible
``POST /v1/embeddings``, with deterministic vectors.

A text's vector counts its words by *concept*: words that mean the same thing
here (``upload``, ``body``, ``size``, ``large`` …) share a dimension, so a
paraphrase that shares no word with a session still lands next to it, as it
would with a real model. Other words go to hashed dimensions at a third of
the weight.

    python tests/embed_server.py [--dim N] [--fail-after N] [--log FILE] [--delay S]

prints ``PORT <n>`` when it listens on 127.0.0.1. ``--fail-after N``:
requests after the Nth answer 500. ``--log``: one line per request (the
model asked for, how many texts, the texts). ``--delay S``: S seconds a
text before answering (a model on a slow CPU).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONCEPTS = [
    # 0: too large a request body
    {"upload", "uploads", "uploaded", "uploading", "file", "files", "body", "size", "large", "big", "huge",
     "bytes", "413", "limit", "max", "refused", "rejected", "rejects", "entity"},
    # 1: the proxy in front
    {"proxy", "nginx", "reverse", "gateway", "ingress", "front"},
    # 2: a cache throwing entries out
    {"cache", "memcached", "evict", "evicted", "evicting", "eviction", "thrown", "lru", "slabs"},
    # 3: signing in
    {"login", "logged", "signed", "sign", "session", "sessions", "bounced", "auth"},
    # 4: database connections
    {"connection", "connections", "pool", "exhausted", "database", "postgres", "db", "pgbouncer"},
    # 5: flaky tests
    {"flaky", "intermittent", "test", "tests", "random", "sometimes", "ci"},
]
CONCEPT_OF = {w: i for i, ws in enumerate(CONCEPTS) for w in ws}


def vector(text: str, dim: int) -> list[float]:
    v = [0.0] * dim
    for w in re.findall(r"[a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower()):
        if w in CONCEPT_OF and CONCEPT_OF[w] < dim // 2:
            v[CONCEPT_OF[w]] += 1.0
        else:
            half = dim - dim // 2
            v[dim // 2 + zlib.crc32(w.encode()) % half] += 0.33
    if not any(v):
        v[-1] = 1e-3
    return v


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--fail-after", type=int, default=-1)
    ap.add_argument("--log")
    ap.add_argument("--delay", type=float, default=0.0)
    # misbehaviours of real endpoints
    ap.add_argument("--refuse", help="a 500 for any request holding a text with this word (a model that cannot "
                                     "embed a text: Ollama's 'unsupported value: NaN')")
    ap.add_argument("--nulls", help="a vector of nulls for a text with this word (a C++ server's NaN)")
    ap.add_argument("--busy", type=int, default=0, help="answer the first N requests 429 with Retry-After: 0")
    ap.add_argument("--most", type=int, default=0, help="a 413 for a request of more texts than this")
    ap.add_argument("--cut", action="store_true", help="every reply cut short of its Content-Length")
    args = ap.parse_args()
    served = [0]
    busy = [args.busy]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            if args.log:
                with open(args.log, "a") as fh:
                    fh.write(json.dumps({"path": self.path, "model": body.get("model"), "n": len(texts or []),
                                         "texts": texts if isinstance(texts, list) else []}) + "\n")
            if 0 <= args.fail_after <= served[0]:
                return self.reply(500, {"error": "model crashed"})
            if not isinstance(texts, list) or not body.get("model"):
                return self.reply(400, {"error": "input and model are required"})
            if busy[0] > 0:
                busy[0] -= 1
                return self.reply(429, {"error": "rate limited"}, {"Retry-After": "0"})
            if args.most and len(texts) > args.most:
                return self.reply(413, {"error": f"batch size {len(texts)} > maximum allowed batch size {args.most}"})
            if args.refuse and any(args.refuse in t for t in texts):
                return self.reply(500, {"error": "failed to encode response: json: unsupported value: NaN"})
            served[0] += 1
            time.sleep(args.delay * len(texts))
            vecs = [[None] * args.dim if args.nulls and args.nulls in t else vector(t, args.dim) for t in texts]
            if self.path == "/api/embed":
                return self.reply(200, {"model": body["model"], "embeddings": vecs})
            if self.path == "/v1/embeddings":
                return self.reply(200, {"object": "list", "model": body["model"],
                                        "data": [{"object": "embedding", "index": i, "embedding": v}
                                                 for i, v in enumerate(vecs)]})
            return self.reply(404, {"error": f"no route {self.path}"})

        def reply(self, code: int, obj: dict, headers: dict | None = None) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) + (100 if args.cut else 0)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            if args.cut:
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
