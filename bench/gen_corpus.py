#!/usr/bin/env python3
"""Synthetic Claude Code + Codex CLI transcript store for benchmarking deja.

    python bench/gen_corpus.py --out /tmp/deja-bench --mb 200 --seed 1

writes, laid out exactly like the real stores:

    OUT/claude/projects/<encoded-cwd>/<session-uuid>.jsonl                 (~60 % of sessions)
    OUT/codex/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl  (~40 %)
    OUT/codex/history.jsonl                                                 (Codex prompt history)

Line shapes follow /work/shared/reference/harness-formats.md (sections 3, 4 and "Seen in
real published transcripts"). Content is built from templates and vocabulary with one
seeded random.Random, so the same --seed and --mb give byte-identical output.

`append_turn(path, harness)` appends one complete user+assistant turn to an existing
transcript and returns a unique marker word it contains; the benchmark uses it to time
"append -> searchable".
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import re
import sys
import time
import uuid
from dataclasses import dataclass, field

try:
    import orjson

    def dumps(obj) -> bytes:
        return orjson.dumps(obj)

except ImportError:  # pragma: no cover - orjson is a project dependency
    import json

    def dumps(obj) -> bytes:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


# --------------------------------------------------------------------------- constants

HOME = "/home/dev"
SESSIONS_PER_MB = 2.5                      # 200 MB -> 500 sessions
CLAUDE_SHARE = 0.6
WINDOW_END_MS = 1_793_491_200_000          # 2026-11-01T00:00:00Z (fixed: output must not depend on "now")
WINDOW_MS = 365 * 86_400_000               # sessions start within the 12 months before that

# Versions in release order; a session picks the one matching its position in the window.
CLAUDE_VERSIONS = ["2.0.53", "2.0.55", "2.0.76", "2.1.7", "2.1.31", "2.1.62", "2.1.81",
                   "2.1.92", "2.1.128", "2.1.170", "2.1.217", "2.1.231"]
CODEX_VERSIONS = ["0.63.0", "0.77.0", "0.87.0", "0.98.0", "0.106.0", "0.112.0", "0.118.0", "0.121.0"]
CLAUDE_MODELS = ["claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101", "claude-sonnet-4-6",
                 "claude-opus-4-6", "claude-haiku-4-5-20251001"]
CODEX_MODELS = ["gpt-5-codex", "gpt-5.1-codex", "gpt-5.2-codex", "gpt-5.4"]

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

# --------------------------------------------------------------------------- vocabulary

NOUNS = """account address adapter alert allocation amount archive artifact asset attempt audit
backend backoff balance batch bucket budget buffer build bundle cache callback campaign catalog
certificate channel charge checkpoint chunk claim client cluster column comment config connection
consumer container context contract cursor customer dashboard dataset deadline delivery dependency
deployment device digest dispatch document domain draft endpoint entry event export feature feed
fetcher field filter fixture flag gateway grant handler header health hook identity image import
index item job journal key label lease limit listener loader lock log manifest mapping merchant
message metric migration model module monitor namespace node notification offset owner package page
parser partition patch payload permission pipeline plan policy pool price probe profile project
provider queue quota rate receipt record region registry release replica report request reservation
resolver resource response retry role route rule runner sample schedule schema scope secret segment
selector session shard signal snapshot source span spec state status store stream subscription
summary table tag task template tenant thread ticket timeout token topic trace transaction transform
trigger upload user validator value vault version volume webhook window worker workspace""".split()

VERBS = """apply build check collect compute create decode delete dispatch emit encode ensure enqueue
expire fetch filter find flush format handle hydrate index ingest load lookup map merge migrate
normalize open parse persist poll prepare process publish purge read rebuild reconcile refresh
register reload render replay resolve restore retry rotate route sanitize save schedule scan
serialize sign snapshot split start stop store sync track transform trim update upsert validate
verify watch write""".split()

ADJS = """active async batched cached canonical cold current default dirty empty expired external
failed global hot idle inbound internal invalid last latest legacy local max min missing nested
next outbound partial pending primary raw remote shared signed stale strict temp total unique
upstream valid""".split()

ORGS = ["acme", "northwind", "globex", "initech", "hooli", "umbrella", "stark-labs", "wayne-ent",
        "tyrell", "cyberdyne", "vandelay", "soylent", "aperture", "blackmesa", "oscorp"]
PEOPLE = ["ann", "sam", "priya", "tomas", "mei", "lars", "dev", "ola", "kenji", "ruth"]

# One entry per project kind: language, plausible repo names, source dirs, domain nouns.
KINDS = {
    "py-web": dict(
        lang="python",
        names=["shop-api", "orders-service", "billing-api", "auth-server", "notifications",
               "inventory_svc", "support-portal", "payments-gw", "booking-api", "crm-backend"],
        dirs=["app/api", "app/services", "app/models", "app/db", "app/workers", "app/core"],
        nouns=["cart", "order", "checkout", "refund", "sku", "customer", "invoice", "coupon",
               "shipment", "payment", "tenant", "webhook", "session", "product", "discount"]),
    "go-svc": dict(
        lang="go",
        names=["ledger", "billing", "gateway", "rate-limiter", "scheduler", "edge-proxy",
               "event-router", "metering", "authz", "blob-store"],
        dirs=["internal/store", "internal/http", "internal/billing", "pkg/retry", "internal/queue",
              "internal/auth", "cmd/server"],
        nouns=["ledger", "entry", "account", "transfer", "balance", "bucket", "lease", "quota",
               "tenant", "invoice", "span", "shard", "lock", "route", "upstream"]),
    "ts-web": dict(
        lang="ts",
        names=["shop-web", "admin-dashboard", "docs-site", "checkout-ui", "status-page",
               "analytics-console", "design-system", "landing"],
        dirs=["src/components", "src/pages", "src/hooks", "src/lib", "src/api", "src/store"],
        nouns=["modal", "form", "table", "route", "theme", "toast", "cart", "filter", "chart",
               "session", "drawer", "tooltip", "pagination", "avatar", "layout"]),
    "rust-cli": dict(
        lang="rust",
        names=["logfmt", "tq", "pkgsync", "snapshotter", "fastgrep", "ledger-cli", "dotsync",
               "rdump"],
        dirs=["src", "src/cmd", "src/parser", "src/io", "src/config"],
        nouns=["lexer", "token", "span", "parser", "flag", "reader", "writer", "buffer", "cursor",
               "snapshot", "glob", "manifest", "arg", "diagnostic", "chunk"]),
    "py-data": dict(
        lang="python",
        names=["ingest-pipeline", "etl-jobs", "feature-store", "events-warehouse", "churn_model",
               "metrics-rollup", "clickstream", "recsys-train"],
        dirs=["pipelines", "pipelines/transforms", "dags", "jobs", "features", "io"],
        nouns=["partition", "watermark", "batch", "parquet", "schema", "row", "column", "backfill",
               "dag", "feature", "embedding", "checkpoint", "event", "sink", "window"]),
    "infra": dict(
        lang="hcl",
        names=["infra-live", "platform-terraform", "k8s-manifests", "cluster-config",
               "network-baseline", "observability"],
        dirs=["modules/vpc", "modules/eks", "modules/rds", "envs/prod", "envs/staging",
              "modules/iam"],
        nouns=["vpc", "subnet", "cluster", "nodegroup", "ingress", "bucket", "role", "policy",
               "module", "release", "alarm", "dashboard", "secret", "zone", "listener"]),
}

EXT = {"python": ".py", "go": ".go", "ts": ".ts", "rust": ".rs", "hcl": ".tf"}

SENTENCES = [
    "Return the {adj} {noun} for the given {noun2}.",
    "{Verb} every {noun} whose {noun2} has expired.",
    "Keep this in sync with the {noun} schema in {path}.",
    "NOTE: {noun} ids are not unique across tenants, always scope by tenant.",
    "Retries up to {n} times with exponential backoff and full jitter.",
    "The {noun} is {adj} until the {noun2} worker picks it up.",
    "TODO({person}): drop the {adj} {noun} path once the migration has run everywhere.",
    "Callers must hold the {noun} lock; see {path} for why.",
    "This is hot: called once per {noun} on every request.",
    "{Verb} the {noun2} before writing, otherwise the {noun} cache goes stale.",
    "Used by the nightly {noun} job and by the admin {noun2} endpoint.",
    "We cap {noun}s at {n} per {noun2} to protect the database.",
]


# --------------------------------------------------------------------------- random helpers

class Gen(random.Random):
    """random.Random plus the handful of generators every section needs."""

    def __init__(self, seed):
        super().__init__(seed)
        # A pool of opaque base64 (signatures, encrypted reasoning); sliced, never regenerated.
        self._blob = base64.b64encode(self.randbytes(1 << 18)).decode()

    def hexs(self, n: int) -> str:
        return f"{self.getrandbits(4 * n):0{n}x}"

    def b58(self, n: int) -> str:
        return "".join(self.choices(B58, k=n))

    def alnum(self, n: int) -> str:
        return "".join(self.choices(ALNUM, k=n))

    def uuid4(self) -> str:
        return str(uuid.UUID(int=self.getrandbits(128), version=4))

    def uuid7(self, ms: int) -> str:
        """Time-ordered id like Codex thread ids (019b55c1-d022-7061-...)."""
        r = self.getrandbits(74)
        v = (ms << 80) | (0x7 << 76) | ((r >> 62) << 64) | (0b10 << 62) | (r & ((1 << 62) - 1))
        return str(uuid.UUID(int=v))

    def blob(self, n: int) -> str:
        start = self.randrange(0, len(self._blob) - n)
        return self._blob[start:start + n]

    def size(self, median: float, sigma: float, lo: int, hi: int) -> int:
        return int(min(hi, max(lo, self.lognormvariate(0, sigma) * median)))

    def chance(self, p: float) -> bool:
        return self.random() < p


def camel(s: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[_\-\s]+", s) if w)


def lower_camel(s: str) -> str:
    c = camel(s)
    return c[:1].lower() + c[1:]


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def encode_cwd(path: str) -> str:
    """Claude Code's project directory name: every non-alphanumeric becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def fake_secret(g: Gen) -> str:
    """Something redaction must catch. All values are random and fake."""
    kind = g.randrange(8)
    if kind == 0:
        return "AKIA" + "".join(g.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", k=16))
    if kind == 1:
        return f"api_key={g.alnum(32)}"
    if kind == 2:
        return (f"postgres://{g.choice(['app', 'svc', 'admin', 'etl'])}:{g.alnum(14)}"
                f"@db-{g.hexs(4)}.internal:5432/{g.choice(['shop', 'ledger', 'events', 'app'])}")
    if kind == 3:
        return "ghp_" + g.alnum(36)
    if kind == 4:
        return f"xoxb-{g.randrange(10**10, 10**11)}-{g.randrange(10**12, 10**13)}-{g.alnum(24)}"
    if kind == 5:
        return "sk_live_" + g.alnum(28)
    if kind == 6:
        return "sk-proj-" + g.alnum(48)
    return f"aws_secret_access_key={g.alnum(40)}"


# --------------------------------------------------------------------------- projects

class Project:
    """A synthetic repository: a root path, files whose contents are generated on first use."""

    def __init__(self, g: Gen, kind: str, name: str, root: str, org: str):
        self.kind, self.name, self.root, self.org = kind, name, root, org
        spec = KINDS[kind]
        self.lang, self.dirs, self.dnouns = spec["lang"], spec["dirs"], spec["nouns"]
        self.version = f"{g.randrange(0, 4)}.{g.randrange(0, 30)}.{g.randrange(0, 12)}"
        self.module = f"github.com/{org}/{name}"
        self.branches = ["main"] + [self._branch(g) for _ in range(g.randrange(3, 9))]
        self.src_files: list[str] = []
        self.test_files: list[str] = []
        for _ in range(g.randrange(25, 70)):
            self.src_files.append(self._src_path(g))
        for _ in range(g.randrange(6, 20)):
            self.test_files.append(self._test_path(g))
        self.src_files = sorted(set(self.src_files))
        self.test_files = sorted(set(self.test_files))
        self.config_files = {"python": ["pyproject.toml", "docker-compose.yml", "Makefile", ".env"],
                             "go": ["go.mod", "Makefile", "docker-compose.yml", ".env"],
                             "ts": ["package.json", "vite.config.ts", "tsconfig.json", ".env.local"],
                             "rust": ["Cargo.toml", "README.md"],
                             "hcl": ["envs/prod/terraform.tfvars", "README.md", ".envrc"]}[self.lang]
        self._text: dict[str, str] = {}
        self._lines: dict[str, list[str]] = {}
        self._tests: list[tuple[str, str]] | None = None

    # -- names
    def noun(self, g: Gen) -> str:
        return g.choice(self.dnouns) if g.random() < 0.55 else g.choice(NOUNS)

    def fn(self, g: Gen) -> str:
        base = f"{g.choice(VERBS)}_{self.noun(g)}"
        return {"python": base, "rust": base, "hcl": base, "go": camel(base), "ts": lower_camel(base)}[self.lang]

    def _branch(self, g: Gen) -> str:
        pre = g.choice(["fix", "feat", "chore", "refactor", g.choice(PEOPLE)])
        return f"{pre}/{self.noun(g)}-{g.choice(VERBS)}"

    def _src_path(self, g: Gen) -> str:
        d = g.choice(self.dirs)
        stem = f"{self.noun(g)}_{g.choice(NOUNS)}" if g.random() < 0.4 else self.noun(g)
        if self.lang == "ts":
            return f"{d}/{camel(stem)}.tsx" if "components" in d or "pages" in d else f"{d}/{lower_camel(stem)}.ts"
        if self.lang == "hcl":
            return f"{d}/{g.choice(['main', 'variables', 'outputs', stem])}.tf"
        return f"{d}/{stem}{EXT[self.lang]}"

    def _test_path(self, g: Gen) -> str:
        stem = self.noun(g)
        if self.lang == "python":
            return f"tests/{g.choice(['', 'unit/', 'integration/'])}test_{stem}.py"
        if self.lang == "go":
            return f"{g.choice(self.dirs)}/{stem}_test.go"
        if self.lang == "ts":
            return f"{g.choice(self.dirs)}/{lower_camel(stem)}.test.ts"
        if self.lang == "rust":
            return f"tests/{stem}.rs"
        return f"tests/{stem}.tftest.hcl"

    def abs(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    # -- contents (cached; generated with the session's Gen on first use)
    def text(self, g: Gen, rel: str) -> str:
        t = self._text.get(rel)
        if t is None:
            t = make_file(g, self, rel)
            self._text[rel] = t
        return t

    def lines(self, g: Gen, rel: str) -> list[str]:
        ls = self._lines.get(rel)
        if ls is None:
            ls = self.text(g, rel).split("\n")
            self._lines[rel] = ls
        return ls

    def tests(self, g: Gen) -> list[tuple[str, str]]:
        """(file, test name) pairs used by test-runner output."""
        if self._tests is None:
            self._tests = [(f, self.test_name(g)) for f in self.test_files for _ in range(g.randrange(4, 30))]
        return self._tests

    def test_name(self, g: Gen) -> str:
        case = g.choice(["empty", "happy_path", "invalid", "expired", "duplicate", "concurrent",
                         "missing_" + g.choice(NOUNS), "large", "unicode", "retry", "timeout", "zero"])
        base = f"{g.choice(VERBS)}_{self.noun(g)}_{case}"
        if self.lang == "go":
            return "Test" + camel(base)
        if self.lang == "ts":
            return base.replace("_", " ")
        return "test_" + base if self.lang == "python" else base


def make_projects(g: Gen, n: int) -> list[Project]:
    kinds = list(KINDS)
    used: set[str] = set()
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)] if i < len(kinds) else g.choice(kinds)
        org = g.choice(ORGS)
        name = g.choice(KINDS[kind]["names"])
        if name in used:
            name = f"{name}-{g.choice(['v2', 'next', 'legacy', org, g.choice(NOUNS)])}"
        used.add(name)
        style = g.randrange(6)
        if style == 0 and kind == "go-svc":
            root = f"{HOME}/go/src/github.com/{org}/{name}"
        elif style == 1:
            root = f"{HOME}/work/{org}/{name}"
        elif style == 2:
            root = f"{HOME}/code/{org}.io/{name}"
        else:
            root = f"{HOME}/src/{name}"
        out.append(Project(g, kind, name, root, org))
    return out


# --------------------------------------------------------------------------- source text

def sentence(g: Gen, p: Project) -> str:
    t = g.choice(SENTENCES)
    verb = g.choice(VERBS)
    return t.format(adj=g.choice(ADJS), noun=p.noun(g), noun2=p.noun(g), n=g.choice([3, 5, 10, 50, 100, 500]),
                    Verb=verb.capitalize(), path=g.choice(p.src_files), person=g.choice(PEOPLE))


def py_chunk(g: Gen, p: Project) -> str:
    fn, a, b = p.fn(g), p.noun(g), p.noun(g)
    attr, attr2 = f"{g.choice(ADJS)}_{b}", f"{b}_{g.choice(['id', 'count', 'at', 'total', 'ref'])}"
    T = camel(a)
    r = g.randrange(4)
    if r == 0:
        return f'''def {fn}({a}: {T}, *, limit: int = {g.choice([10, 50, 100, 1000])}) -> list[{camel(b)}]:
    """{sentence(g, p)}"""
    items = {a}.{attr}
    if not items:
        logger.warning("{fn}: empty {attr} for %s", {a}.id)
        return []
    for item in items[:limit]:
        item.{attr2} = {g.choice(VERBS)}_{b}(item, tenant_id={a}.tenant_id)
    return items
'''
    if r == 1:
        dep, dep2 = g.choice(["db", "repo", "session", "pool"]), g.choice(["bus", "cache", "queue", "client"])
        return f'''class {T}{g.choice(["Service", "Repository", "Client", "Handler", "Manager"])}:
    """{sentence(g, p)}"""

    def __init__(self, {dep}: {camel(dep)}, {dep2}: {camel(dep2)}) -> None:
        self._{dep} = {dep}
        self._{dep2} = {dep2}

    async def get_{a}(self, {a}_id: str) -> {T} | None:
        row = await self._{dep}.fetch_one(
            "SELECT * FROM {a}s WHERE id = :id AND deleted_at IS NULL", {{"id": {a}_id}}
        )
        return {T}.from_row(row) if row else None

    def {fn}(self, {a}: {T}) -> None:
        if {a}.{attr2} is None:
            raise ValueError(f"{attr2} must be set, got {{{a}!r}}")
        self._{dep2}.publish("{a}.{g.choice(VERBS)}d", {a}.to_dict())
'''
    if r == 2:
        return f'''@router.{g.choice(["get", "post", "put", "delete"])}("/{a}s/{{{a}_id}}/{b}s")
async def {fn}_endpoint({a}_id: str, request: Request, svc: {T}Service = Depends(get_{a}_service)):
    # {sentence(g, p)}
    {a} = await svc.get_{a}({a}_id)
    if {a} is None:
        raise HTTPException(status_code=404, detail="{a} not found")
    payload = await request.json()
    result = await svc.{fn}({a}, **payload)
    return {{"{a}_id": {a}_id, "{b}s": [x.to_dict() for x in result], "count": len(result)}}
'''
    return f'''def test_{fn}_{g.choice(["empty", "invalid", "happy_path", "retry"])}({g.choice(["client", "db", "tmp_path", "monkeypatch"])}):
    {a} = make_{a}({attr2}={g.randrange(0, 500)})
    result = {fn}({a})
    assert result.{attr2} == {g.randrange(0, 500)}
    assert len(result.items) == {g.randrange(0, 12)}
'''


def go_chunk(g: Gen, p: Project) -> str:
    fn, a, b = p.fn(g), p.noun(g), p.noun(g)
    T, F, F2 = camel(a), camel(b) + "ID", camel(g.choice(ADJS) + "_" + b)
    r = g.randrange(3)
    if r == 0:
        return f'''// {fn} {sentence(g, p).lower()}
func (s *{T}Service) {fn}(ctx context.Context, in {T}) (*{camel(b)}, error) {{
	if in.{F} == "" {{
		return nil, fmt.Errorf("{fn.lower()}: missing {b} id: %w", Err{T}Invalid)
	}}
	v, err := s.store.Get{camel(b)}(ctx, in.{F})
	if err != nil {{
		return nil, fmt.Errorf("get {b} %s: %w", in.{F}, err)
	}}
	for _, it := range v.Items {{
		it.{F2} = s.{lower_camel(g.choice(VERBS) + "_" + b)}(it)
	}}
	return v, nil
}}
'''
    if r == 1:
        return f'''type {T}{g.choice(["Store", "Client", "Config", "Options"])} struct {{
	mu       sync.Mutex
	{lower_camel(b)}s map[string]*{camel(b)}
	timeout  time.Duration
	maxRetry int // {sentence(g, p)}
	log      *slog.Logger
}}

func New{T}(db *sql.DB, log *slog.Logger) *{T}Service {{
	return &{T}Service{{db: db, log: log.With("component", "{a}"), timeout: {g.choice([5, 10, 30])} * time.Second}}
}}
'''
    return f'''func Test{fn}_{camel(g.choice(["empty", "invalid", "happy_path", "retry", "concurrent"]))}(t *testing.T) {{
	t.Parallel()
	svc := newTest{T}Service(t)
	got, err := svc.{fn}(context.Background(), {T}{{{F}: "{a}_{g.hexs(6)}"}})
	if err != nil {{
		t.Fatalf("{fn}() error = %v", err)
	}}
	if got.{F2} != {g.randrange(0, 100)} {{
		t.Errorf("{fn}() {F2} = %v, want %v", got.{F2}, {g.randrange(0, 100)})
	}}
}}
'''


def ts_chunk(g: Gen, p: Project) -> str:
    fn, a, b = p.fn(g), p.noun(g), p.noun(g)
    T = camel(a)
    r = g.randrange(3)
    if r == 0:
        return f'''export async function {fn}({a}: {T}, opts: {{ {lower_camel(b)}Limit?: number }} = {{}}): Promise<{camel(b)}[]> {{
  // {sentence(g, p)}
  const res = await fetch(`/api/{a}s/${{{a}.id}}/{b}s`, {{ method: "POST", body: JSON.stringify({a}) }});
  if (!res.ok) {{
    throw new ApiError(res.status, `{fn} failed: ${{res.statusText}}`);
  }}
  const data = (await res.json()) as {camel(b)}[];
  return data.slice(0, opts.{lower_camel(b)}Limit ?? {g.choice([10, 20, 50])});
}}
'''
    if r == 1:
        st = lower_camel(g.choice(ADJS) + "_" + b)
        return f'''export function {T}{camel(g.choice(["panel", "list", "card", "view", "row"]))}({{ {a}, on{camel(g.choice(VERBS))} }}: {T}Props) {{
  const [{st}, set{camel(st)}] = useState<{camel(b)} | null>(null);
  useEffect(() => {{
    let cancelled = false;
    load{camel(b)}({a}.id).then((v) => !cancelled && set{camel(st)}(v));
    return () => {{ cancelled = true; }};
  }}, [{a}.id]);
  if (!{st}) return <Spinner label="Loading {b}" />;
  return (
    <div className="{a}-{b} flex items-center gap-2">
      <span className="text-sm text-muted">{{{st}.label}}</span>
    </div>
  );
}}
'''
    return f'''describe("{fn}", () => {{
  it("{g.choice(VERBS)}s the {b} when {a} is {g.choice(ADJS)}", async () => {{
    const {a} = make{T}({{ id: "{g.hexs(8)}" }});
    const out = await {fn}({a});
    expect(out).toHaveLength({g.randrange(0, 9)});
  }});
}});
'''


def rust_chunk(g: Gen, p: Project) -> str:
    fn, a, b = p.fn(g), p.noun(g), p.noun(g)
    T, E = camel(a), camel(b) + "Error"
    if g.random() < 0.7:
        return f'''/// {sentence(g, p)}
pub fn {fn}(&mut self, {a}: &{T}) -> Result<{camel(b)}, {E}> {{
    let v = self.{b}s.get(&{a}.id).ok_or_else(|| {E}::NotFound({a}.id.clone()))?;
    if v.len() > self.max_{b}s {{
        return Err({E}::Limit {{ max: self.max_{b}s, got: v.len() }});
    }}
    Ok({camel(b)}::from(v))
}}
'''
    return f'''#[test]
fn {fn}_{g.choice(["empty", "unicode", "large_input", "roundtrip"])}() {{
    let mut st = {T}::default();
    let out = st.{fn}(&{T}::new("{g.hexs(6)}")).unwrap();
    assert_eq!(out.len(), {g.randrange(0, 40)});
}}
'''


def hcl_chunk(g: Gen, p: Project) -> str:
    a, b = p.noun(g), p.noun(g)
    res = g.choice(["aws_security_group", "aws_iam_role", "aws_s3_bucket", "aws_db_instance",
                    "aws_lb_listener", "aws_eks_node_group", "aws_cloudwatch_metric_alarm"])
    if g.random() < 0.6:
        return f'''resource "{res}" "{a}_{b}" {{
  name        = "${{var.env}}-{a}-{b}"
  description = "{sentence(g, p)}"
  {b}_id      = var.{b}_id
  tags = merge(local.common_tags, {{
    Component = "{a}"
  }})
}}
'''
    return f'''variable "{a}_{b}" {{
  type        = {g.choice(["string", "number", "list(string)", "bool"])}
  description = "{sentence(g, p)}"
  default     = {g.choice(['"' + a + '"', "3", "[]", "false"])}
}}
'''


CHUNKS = {"python": py_chunk, "go": go_chunk, "ts": ts_chunk, "rust": rust_chunk, "hcl": hcl_chunk}


def file_header(g: Gen, p: Project, rel: str) -> str:
    if p.lang == "python":
        return ('"""' + sentence(g, p) + '"""\nfrom __future__ import annotations\n\nimport logging\n'
                "from datetime import datetime, timezone\n\nfrom app.core.db import Database\n\n"
                "logger = logging.getLogger(__name__)\n\n")
    if p.lang == "go":
        pkg = rel.split("/")[-2] if "/" in rel else "main"
        return (f"package {pkg.replace('-', '')}\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"log/slog\"\n"
                f"\t\"sync\"\n\t\"time\"\n\n\t\"{p.module}/internal/store\"\n)\n\n")
    if p.lang == "ts":
        return 'import { useEffect, useState } from "react";\nimport { ApiError } from "@/lib/api";\n\n'
    if p.lang == "rust":
        return "use std::collections::HashMap;\nuse anyhow::Context;\n\nuse crate::error::Error;\n\n"
    return f"# {sentence(g, p)}\n\n"


def config_file(g: Gen, p: Project, rel: str) -> str:
    if rel.startswith(".env") or rel == ".envrc" or rel.endswith(".tfvars"):
        lines = [f"APP_ENV={g.choice(['development', 'staging'])}",
                 f"DATABASE_URL={fake_secret_of(g, 2)}",
                 f"REDIS_URL=redis://localhost:6379/{g.randrange(0, 8)}",
                 f"AWS_ACCESS_KEY_ID={fake_secret_of(g, 0)}",
                 f"AWS_SECRET_ACCESS_KEY={g.alnum(40)}",
                 f"STRIPE_SECRET_KEY={fake_secret_of(g, 5)}",
                 f"LOG_LEVEL={g.choice(['debug', 'info'])}",
                 f"FEATURE_{p.noun(g).upper()}_ENABLED=true"]
        return "\n".join(lines) + "\n"
    if rel == "docker-compose.yml":
        return (f"services:\n  api:\n    build: .\n    ports: [\"8000:8000\"]\n    environment:\n"
                f"      DATABASE_URL: {fake_secret_of(g, 2)}\n    depends_on: [db, redis]\n"
                "  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: postgres\n"
                "  redis:\n    image: redis:7-alpine\n")
    body = [f"# {p.name} {p.version}", ""]
    body += [sentence(g, p) for _ in range(g.randrange(8, 40))]
    return "\n".join(body) + "\n"


def fake_secret_of(g: Gen, kind: int) -> str:
    while True:
        s = fake_secret(g)
        if (kind == 0 and s.startswith("AKIA")) or (kind == 2 and s.startswith("postgres")) or \
           (kind == 5 and s.startswith("sk_live")):
            return s


def make_file(g: Gen, p: Project, rel: str) -> str:
    if rel in p.config_files:
        return config_file(g, p, rel)
    target = g.size(5500, 0.85, 1200, 50_000)
    parts = [file_header(g, p, rel)]
    n = len(parts[0])
    chunk = CHUNKS[p.lang]
    while n < target:
        c = chunk(g, p)
        parts.append(c)
        parts.append("\n")
        n += len(c) + 1
    return "".join(parts)


# --------------------------------------------------------------------------- tool output

def py_traceback(g: Gen, p: Project) -> tuple[str, str]:
    frames = []
    for _ in range(g.randrange(2, 7)):
        f = g.choice(p.src_files)
        frames.append(f'  File "{p.abs(f)}", line {g.randrange(12, 600)}, in {p.fn(g)}\n'
                      f"    {g.choice(p.lines(g, f)[1:]).strip() or 'return result'}")
    a, b = p.noun(g), p.noun(g)
    err = g.choice([
        f"KeyError: '{a}_id'",
        f"AttributeError: 'NoneType' object has no attribute '{b}'",
        "TypeError: unsupported operand type(s) for -: 'decimal.Decimal' and 'float'",
        f"ValueError: invalid literal for int() with base 10: '{g.hexs(6)}'",
        "TypeError: can't compare offset-naive and offset-aware datetimes",
        f"sqlalchemy.exc.IntegrityError: (psycopg.errors.UniqueViolation) duplicate key value violates "
        f"unique constraint \"{a}s_{b}_id_key\"",
        f"asyncio.exceptions.TimeoutError: timed out waiting for {a} lock after 30.0s",
        f"pydantic_core._pydantic_core.ValidationError: 1 validation error for {camel(a)}\n{b}_id\n"
        f"  Field required [type=missing, input_value={{'id': '{g.hexs(8)}'}}, input_type=dict]",
        f"psycopg.OperationalError: connection failed: {fake_secret_of(g, 2)} - "
        "FATAL:  password authentication failed",
    ])
    return "Traceback (most recent call last):\n" + "\n".join(frames) + "\n" + err, err.split("\n")[0]


def go_panic(g: Gen, p: Project) -> str:
    lines = ["panic: runtime error: invalid memory address or nil pointer dereference",
             f"[signal SIGSEGV: segmentation violation code=0x1 addr=0x{g.hexs(2)} pc=0x{g.hexs(6)}]", "",
             f"goroutine {g.randrange(1, 400)} [running]:"]
    for _ in range(g.randrange(3, 9)):
        f = g.choice([x for x in p.src_files if x.endswith(".go")] or p.src_files)
        pkg = f.rsplit("/", 1)[0]
        lines.append(f"{p.module}/{pkg}.(*{camel(p.noun(g))}Service).{p.fn(g)}(0x{g.hexs(10)}, {{0x{g.hexs(6)}, 0xc000{g.hexs(6)}}})")
        lines.append(f"\t{p.abs(f)}:{g.randrange(20, 500)} +0x{g.hexs(2)}")
    lines += ["exit status 2"]
    return "\n".join(lines)


def out_tests(g: Gen, p: Project, fail: bool, verbose: bool) -> tuple[str, str]:
    """Test-runner log for the project's language; returns (output, one-line error summary)."""
    tests = p.tests(g)
    sel = tests if verbose else tests[: g.randrange(1, len(tests) + 1)]
    failed = set(g.sample(range(len(sel)), k=min(len(sel), g.randrange(1, 4)))) if fail else set()
    secs = round(g.uniform(0.3, 90), 2)
    summary = ""
    if p.lang == "python" or p.lang == "hcl":
        out = ["============================= test session starts ==============================",
               f"platform linux -- Python 3.12.{g.randrange(1, 9)}, pytest-8.3.{g.randrange(1, 5)}, pluggy-1.5.0",
               f"rootdir: {p.root}", "configfile: pyproject.toml",
               "plugins: asyncio-0.24.0, cov-5.0.0, anyio-4.6.2", f"collected {len(sel)} items", ""]
        if verbose:
            for i, (f, t) in enumerate(sel):
                out.append(f"{f}::{t} {'FAILED' if i in failed else 'PASSED'} [{100 * (i + 1) // len(sel):3d}%]")
        else:
            by_file: dict[str, str] = {}
            for i, (f, t) in enumerate(sel):
                by_file[f] = by_file.get(f, "") + ("F" if i in failed else ".")
            done = 0
            for f, marks in by_file.items():
                done += len(marks)
                out.append(f"{f} {marks:<40} [{100 * done // len(sel):3d}%]")
        if failed:
            out += ["", "=================================== FAILURES ==================================="]
            for i in sorted(failed):
                tb, summary = py_traceback(g, p)
                out += [f"_____________________ {sel[i][1]} _____________________", "", tb, ""]
            out.append("=========================== short test summary info ============================")
            out += [f"FAILED {sel[i][0]}::{sel[i][1]} - {summary[:80]}" for i in sorted(failed)]
            out.append(f"========================= {len(failed)} failed, {len(sel) - len(failed)} passed in {secs}s =========================")
        else:
            out.append(f"============================== {len(sel)} passed in {secs}s ==============================")
        return "\n".join(out), summary
    if p.lang == "go":
        out = []
        pkgs = sorted({f.rsplit("/", 1)[0] for f in p.src_files})
        bad = g.choice(pkgs) if fail else None
        for pkg in pkgs:
            if verbose:
                for f, t in g.sample(sel, k=min(len(sel), g.randrange(2, 12))):
                    out += [f"=== RUN   {t}", f"--- PASS: {t} ({g.uniform(0, 0.5):.2f}s)"]
            if pkg == bad:
                t = g.choice(sel)[1]
                if g.random() < 0.4:
                    summary = "panic: runtime error: invalid memory address or nil pointer dereference"
                    out += [f"=== RUN   {t}", f"--- FAIL: {t} (0.00s)", go_panic(g, p)]
                else:
                    f = g.choice(p.src_files)
                    summary = f"{t}: got {g.randrange(0, 9)}, want {g.randrange(10, 20)}"
                    out += [f"=== RUN   {t}", f"    {f.rsplit('/', 1)[-1]}:{g.randrange(20, 300)}: {summary}",
                            f"--- FAIL: {t} ({g.uniform(0, 2):.2f}s)", "FAIL"]
                out.append(f"FAIL\t{p.module}/{pkg}\t{g.uniform(0.01, 3):.3f}s")
            else:
                out.append(f"ok  \t{p.module}/{pkg}\t{g.uniform(0.01, 3):.3f}s")
        if bad:
            out.append("FAIL")
        return "\n".join(out), summary
    if p.lang == "ts":
        out = [f" RUN  v2.1.{g.randrange(1, 9)} {p.root}", ""]
        by_file: dict[str, int] = {}
        for f, t in sel:
            by_file[f] = by_file.get(f, 0) + 1
        bad = g.choice(list(by_file)) if fail else None
        for f, n in by_file.items():
            mark = "❯" if f == bad else "✓"
            out.append(f" {mark} {f} ({n} tests{' | 1 failed' if f == bad else ''}) {g.randrange(3, 900)}ms")
            if verbose:
                out += [f"   ✓ {t} {g.randrange(1, 80)}ms" for ff, t in sel if ff == f]
        if bad:
            summary = f"AssertionError: expected {g.randrange(0, 9)} to be {g.randrange(10, 20)} // Object.is equality"
            out += ["", "⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯", "",
                    f" FAIL  {bad} > {g.choice(sel)[1]}", summary, "",
                    "- Expected", "+ Received", "", f"❯ {bad}:{g.randrange(5, 120)}:{g.randrange(3, 40)}"]
        out += ["", f" Test Files  {'1 failed | ' if bad else ''}{len(by_file) - (1 if bad else 0)} passed ({len(by_file)})",
                f"      Tests  {'1 failed | ' if bad else ''}{len(sel)} passed ({len(sel)})",
                f"   Duration  {secs}s"]
        return "\n".join(out), summary
    # rust
    out = [f"   Compiling {p.name} v{p.version} ({p.root})",
           f"    Finished `test` profile [unoptimized + debuginfo] target(s) in {g.uniform(1, 60):.2f}s",
           f"     Running unittests src/lib.rs (target/debug/deps/{p.name.replace('-', '_')}-{g.hexs(16)})", "",
           f"running {len(sel)} tests"]
    bad = g.choice(sel)[1] if fail else None
    for f, t in sel:
        out.append(f"test {f.split('/')[-1][:-3]}::tests::{t} ... {'FAILED' if t == bad else 'ok'}")
    if bad:
        f = g.choice(p.src_files)
        summary = f"thread '{bad}' panicked at {f}:{g.randrange(10, 400)}:9"
        out += ["", "failures:", "", f"---- {bad} stdout ----", summary + ":",
                "assertion `left == right` failed", f"  left: {g.randrange(0, 9)}", f" right: {g.randrange(10, 20)}",
                "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace", "",
                f"test result: FAILED. {len(sel) - 1} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in {secs}s"]
    else:
        out.append(f"\ntest result: ok. {len(sel)} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in {secs}s")
    return "\n".join(out), summary


def out_build(g: Gen, p: Project, fail: bool) -> tuple[str, str]:
    f = g.choice(p.src_files)
    ln, col = g.randrange(5, 400), g.randrange(1, 40)
    a, b = p.noun(g), p.noun(g)
    if p.lang == "ts":
        out = [f"> {p.name}@{p.version} build", "> tsc -b && vite build", ""]
        if fail:
            err = g.choice(["error TS2322: Type 'string | undefined' is not assignable to type 'string'.",
                            f"error TS2339: Property '{b}Id' does not exist on type '{camel(a)}'.",
                            f"error TS2345: Argument of type '{camel(a)}[]' is not assignable to parameter of type '{camel(b)}'."])
            out += [f"{f}({ln},{col}): {err}", "", "npm ERR! code ELIFECYCLE", "npm ERR! errno 2",
                    f"npm ERR! {p.name}@{p.version} build: `tsc -b && vite build`", "npm ERR! Exit status 2",
                    "npm ERR!", f"npm ERR! Failed at the {p.name}@{p.version} build script.",
                    "npm ERR! This is probably not a problem with npm. There is likely additional logging output above.",
                    "", "npm ERR! A complete log of this run can be found in:",
                    f"npm ERR!     {HOME}/.npm/_logs/2026-0{g.randrange(1, 9)}-1{g.randrange(0, 9)}T10_22_31_{g.randrange(100, 999)}Z-debug-0.log"]
            return "\n".join(out), err
        out += [f"vite v5.4.{g.randrange(1, 12)} building for production...", f"✓ {g.randrange(200, 3000)} modules transformed."]
        for x in g.sample(p.src_files, k=min(len(p.src_files), g.randrange(5, 25))):
            stem = x.rsplit("/", 1)[-1].split(".")[0]
            out.append(f"dist/assets/{stem}-{g.alnum(8)}.js   {g.uniform(0.5, 300):7.2f} kB │ gzip: {g.uniform(0.3, 90):6.2f} kB")
        out.append(f"✓ built in {g.uniform(1, 30):.2f}s")
        return "\n".join(out), ""
    if p.lang == "rust":
        out = [f"   Compiling {d} v{g.randrange(0, 3)}.{g.randrange(0, 40)}.{g.randrange(0, 9)}"
               for d in g.sample(["serde", "tokio", "clap", "anyhow", "regex", "memchr", "rayon", "thiserror",
                                   "serde_json", "bytes", "tracing", "globset"], k=g.randrange(2, 12))]
        out.append(f"   Compiling {p.name} v{p.version} ({p.root})")
        if fail:
            err = g.choice([f"error[E0502]: cannot borrow `self.{b}s` as mutable because it is also borrowed as immutable",
                            f"error[E0382]: borrow of moved value: `{a}`",
                            "error[E0308]: mismatched types: expected `&str`, found `String`"])
            out += [err, f"  --> {f}:{ln}:{col}", "   |", f"{ln} |     let v = self.{b}s.get(&{a}.id);",
                    "   |             - immutable borrow occurs here", "",
                    f"error: could not compile `{p.name}` (lib) due to 1 previous error"]
            return "\n".join(out), err
        out.append(f"    Finished `release` profile [optimized] target(s) in {g.uniform(3, 120):.2f}s")
        return "\n".join(out), ""
    if p.lang == "go":
        if fail:
            err = g.choice([f"undefined: {p.fn(g)}", f"cannot use {a} (variable of type *{camel(a)}) as {camel(b)} value in argument",
                            f"declared and not used: {lower_camel(b)}"])
            return f"# {p.module}/{f.rsplit('/', 1)[0]}\n./{f}:{ln}:{col}: {err}", err
        return "", ""
    if p.lang == "hcl":
        return out_terraform(g, p, fail)
    if fail:  # python: mypy
        errs = [f"{g.choice(p.src_files)}:{g.randrange(5, 400)}: error: "
                + g.choice(['Incompatible types in assignment (expression has type "str", variable has type "int")  [assignment]',
                            f'Item "None" of "{camel(a)} | None" has no attribute "{b}"  [union-attr]',
                            f'Argument 1 to "{p.fn(g)}" has incompatible type "dict[str, Any]"; expected "{camel(b)}"  [arg-type]'])
                for _ in range(g.randrange(1, 12))]
        return "\n".join(errs + [f"Found {len(errs)} errors in {g.randrange(1, 5)} files (checked {len(p.src_files)} source files)"]), errs[0]
    return f"Success: no issues found in {len(p.src_files)} source files", ""


def out_terraform(g: Gen, p: Project, fail: bool) -> tuple[str, str]:
    out = [f"{p.noun(g)}_{p.noun(g)}: Refreshing state... [id={p.noun(g)}-{g.hexs(17)}]" for _ in range(g.randrange(10, 60))]
    out += ["", "Terraform used the selected providers to generate the following execution plan.",
            "Resource actions are indicated with the following symbols:", "  ~ update in-place", "-/+ destroy and then create replacement", "",
            "Terraform will perform the following actions:", ""]
    for _ in range(g.randrange(1, 8)):
        a, b = p.noun(g), p.noun(g)
        out += [f"  # module.{a}.aws_{b}.this will be updated in-place", f'  ~ resource "aws_{b}" "this" {{',
                f'        id   = "{a}-{g.hexs(8)}"', '      ~ tags = {', f'          ~ "Owner" = "platform" -> "{g.choice(PEOPLE)}"',
                "        }", "        # (12 unchanged attributes hidden)", "    }", ""]
    if fail:
        err = f'Error: creating EC2 Subnet: InvalidSubnet.Conflict: The CIDR \'10.{g.randrange(0, 255)}.{g.randrange(0, 255)}.0/24\' conflicts with another subnet'
        out += ["╷", f"│ {err}", "│", f'│   with module.vpc.aws_subnet.private[{g.randrange(0, 3)}],', '│   on modules/vpc/main.tf line 41, in resource "aws_subnet" "private":', "╵"]
        return "\n".join(out), err
    out.append(f"Plan: {g.randrange(0, 4)} to add, {g.randrange(1, 8)} to change, {g.randrange(0, 2)} to destroy.")
    return "\n".join(out), ""


def out_compose_logs(g: Gen, p: Project, n: int) -> str:
    t = g.randrange(10**9)
    out = []
    for i in range(n):
        svc = g.choice(["api-1   ", "worker-1", "db-1    ", "redis-1 "])
        ts = iso(WINDOW_END_MS - t * 10 + i * 137)
        if svc.startswith("db"):
            msg = g.choice([f"{ts[:19].replace('T', ' ')}.{g.randrange(100, 999)} UTC [{g.randrange(60, 900)}] LOG:  checkpoint complete: wrote {g.randrange(3, 900)} buffers",
                            f"{ts[:19].replace('T', ' ')} UTC [1] LOG:  database system is ready to accept connections",
                            f"{ts[:19].replace('T', ' ')} UTC [{g.randrange(60, 900)}] ERROR:  relation \"{p.noun(g)}s\" does not exist at character {g.randrange(10, 90)}"])
        elif svc.startswith("redis"):
            msg = f"1:M {g.randrange(1, 28)} Oct 2026 12:{g.randrange(10, 59)}:{g.randrange(10, 59)}.{g.randrange(100, 999)} * Ready to accept connections tcp"
        else:
            lvl = g.choices(["INFO ", "WARN ", "ERROR", "DEBUG"], weights=[70, 10, 5, 15])[0]
            msg = (f"{ts} {lvl} [{p.noun(g)}.{g.choice(VERBS)}] {g.choice(VERBS)}d {p.noun(g)} id={p.noun(g)}_{g.hexs(10)} "
                   f"tenant={g.choice(ORGS)} in {g.randrange(1, 900)}ms")
        out.append(f"{svc} | {msg}")
    return "\n".join(out)


def out_git_status(g: Gen, p: Project, branch: str) -> str:
    mods = g.sample(p.src_files + p.test_files, k=g.randrange(0, 7))
    out = [f"On branch {branch}", f"Your branch is up to date with 'origin/{branch}'.", ""]
    if mods:
        out += ["Changes not staged for commit:", '  (use "git add <file>..." to update what will be committed)',
                '  (use "git restore <file>..." to discard changes in working directory)']
        out += [f"\tmodified:   {m}" for m in mods] + [""]
        out.append('no changes added to commit (use "git add" and/or "git commit -a")')
    else:
        out.append("nothing to commit, working tree clean")
    return "\n".join(out)


def out_git_log(g: Gen, p: Project, n: int) -> str:
    msgs = []
    for _ in range(n):
        pre = g.choice(["fix", "feat", "chore", "refactor", "test", "docs", "perf"])
        msgs.append(f"{g.hexs(7)} {pre}({p.noun(g)}): {g.choice(VERBS)} {g.choice(ADJS)} {p.noun(g)} {g.choice(['handling', 'on retry', 'for tenants', 'in worker', 'path', ''])}".rstrip())
    return "\n".join(msgs)


def out_git_diff(g: Gen, p: Project, files: list[str]) -> str:
    out = []
    for f in files:
        lines = p.lines(g, f)
        out += [f"diff --git a/{f} b/{f}", f"index {g.hexs(7)}..{g.hexs(7)} 100644", f"--- a/{f}", f"+++ b/{f}"]
        for _ in range(g.randrange(1, 4)):
            i = g.randrange(0, max(1, len(lines) - 12))
            out.append(f"@@ -{i + 1},9 +{i + 1},10 @@")
            seg = lines[i:i + 9]
            k = g.randrange(0, max(1, len(seg)))
            for j, l in enumerate(seg):
                if j == k:
                    out += [f"-{l}", f"+{mutate_line(g, p, l)}"]
                else:
                    out.append(f" {l}")
    return "\n".join(out)


def out_rg(g: Gen, p: Project, word: str, n: int) -> str:
    """rg -n hits: file:line:text, where the text really mentions `word`."""
    out = []
    for _ in range(n):
        f = g.choice(p.src_files + p.test_files)
        i = g.randrange(len(p.lines(g, f)))
        arg = p.noun(g)
        text = g.choice([f"return {word}({arg})", f"{arg} = {word}({arg}, tenant)", f"# {word} {sentence(g, p)}",
                         f"def {word}({arg}):" if p.lang == "python" else f"func {word}({arg} {camel(arg)}) error {{",
                         f"err := {word}(ctx, {arg})" if p.lang == "go" else f"result = {word}({arg}, limit=100)"])
        out.append(f"{f}:{i + 1}:    {text}")
    return "\n".join(out)


def mutate_line(g: Gen, p: Project, line: str) -> str:
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", line)
    if words and g.random() < 0.7:
        w = g.choice(words)
        return line.replace(w, w + "_" + g.choice(["v2", "safe", p.noun(g), "checked"]), 1)
    return line.rstrip() + {"python": "  # noqa: E501", "go": " // nolint", "ts": " // TODO", "rust": " // FIXME",
                            "hcl": " # pinned"}[p.lang]


GUARDS = {
    "python": ["if {x} is None:\n{i}    return None", "{x} = {x} or []", "logger.debug(\"{x}=%r\", {x})",
               "assert {x} is not None, \"{x} must be loaded first\""],
    "go": ["if {x} == nil {{\n{i}\treturn nil, ErrNotFound\n{i}}}", "defer s.mu.Unlock()", "ctx, cancel := context.WithTimeout(ctx, 5*time.Second)\n{i}defer cancel()"],
    "ts": ["if (!{x}) return null;", "const {x}Safe = {x} ?? [];", "console.debug(\"{x}\", {x});"],
    "rust": ["let {x} = {x}.trim();", "debug_assert!(!{x}.is_empty());", "tracing::debug!(?{x}, \"loaded\");"],
    "hcl": ["lifecycle {{\n{i}  prevent_destroy = true\n{i}}}", "count = var.enabled ? 1 : 0"],
}


# --------------------------------------------------------------------------- turn plans

@dataclass
class Step:
    """One tool call, harness-neutral; ClaudeWriter / CodexWriter render it."""
    kind: str                   # bash | read | edit | write | grep | todo
    remark: str = ""            # assistant speech before the call
    thinking: str = ""          # reasoning shown before the call ("" = none)
    summary: str = ""           # bash: one-line error summary, reused in the prompt/answer
    cmd: str = ""
    desc: str = ""
    output: str = ""
    code: int = 0
    path: str = ""              # relative to the project root
    old: str = ""
    new: str = ""
    content: str = ""           # read: the text returned; write: the new file
    start: int = 1              # read/edit: first line number
    total: int = 0              # read: total lines in file
    ctx_before: str = ""
    ctx_after: str = ""
    todos: list = field(default_factory=list)


@dataclass
class Turn:
    prompt: str
    steps: list[Step]
    answer: str
    title: str


class Planner:
    """Turns a scenario into a prompt, a list of tool steps and a final answer."""

    def __init__(self, g: Gen, p: Project, branch: str):
        self.g, self.p, self.branch = g, p, branch

    # -- prose
    def cause(self) -> str:
        g, p = self.g, self.p
        fn, a, b = p.fn(g), p.noun(g), p.noun(g)
        return g.choice([
            f"`{fn}` read `{b}_id` before the migration had backfilled it, so every {a} created before the backfill came back as None",
            f"the retry loop reused the same `{a}` context after it had been cancelled, so every retry failed immediately with `context canceled`",
            f"the cache key for `{fn}` didn't include the tenant id, so {a}s from one tenant leaked into another tenant's response",
            f"money was carried as a float in `{fn}`; rounding drift made {a} totals off by a cent on roughly 1 in 300 {b}s",
            f"the {b} pool was capped at 5 connections while the worker ran 16 concurrent jobs, so requests queued until the 30s timeout",
            f"naive datetimes from the {b} importer were compared with timezone-aware ones in `{fn}`",
            f"`{fn}` swallowed the error from `{p.fn(g)}` and returned an empty {a} list, which the caller treated as 'nothing to do'",
            f"two workers could claim the same {a} because the `SELECT` wasn't `FOR UPDATE SKIP LOCKED`",
            f"the {a} fixture was module-scoped, so state from the previous test leaked into `{p.test_name(g)}`",
            f"the Dockerfile copied the source before installing dependencies, so every {b} change busted the layer cache",
            f"the {a} watermark was advanced before the {b} batch was committed, so a crash in between silently dropped events",
            f"`{fn}` iterated over a map while another goroutine wrote to it — a data race the `-race` detector flags on the {b} path",
        ])

    def decision(self) -> str:
        g, p = self.g, self.p
        a = p.noun(g)
        return g.choice([
            f"We switched from polling the {a} table to `LISTEN/NOTIFY`, which removes the 5s lag.",
            f"We switched money fields in the {a} path to `Decimal` (and `NUMERIC(12,2)` in Postgres).",
            "We switched the hand-rolled retry to a shared `retry.Do` helper with capped exponential backoff.",
            f"I went with an idempotency key on {a} creation rather than a distributed lock — simpler and it survives restarts.",
            f"We switched the {a} job to incremental partitions keyed by `event_date` instead of full reloads.",
            f"Decided to keep the old `{p.fn(g)}` signature and add an optional parameter, so existing callers don't change.",
            f"We moved {a} validation into the pydantic model so the API and the worker share one definition.",
            "I pinned the provider to `~> 5.40` instead of upgrading the whole module; the 6.x migration deserves its own PR.",
            f"We switched from `requests` to `httpx` with an explicit 10s timeout for the {a} client.",
        ])

    def prose(self, n: int) -> str:
        g, p = self.g, self.p
        out = []
        for _ in range(n):
            f = g.choice(p.src_files)
            out.append(g.choice([
                f"`{p.fn(g)}` in `{f}` is the only place that writes `{p.noun(g)}_id`; everything else goes through `{p.fn(g)}`.",
                f"The {p.noun(g)} flow is: request -> `{p.fn(g)}` -> queue -> `{p.fn(g)}` in the worker -> `{p.noun(g)}` table.",
                f"Note that `{f}` still imports the {g.choice(ADJS)} {p.noun(g)} helper, which we should delete later.",
                f"I checked `{f}` and the {p.noun(g)} handling there is already correct.",
                f"{sentence(g, p)}",
                f"Tests around `{p.fn(g)}` only cover the happy path; the {g.choice(ADJS)} {p.noun(g)} case had no coverage.",
                f"The {p.noun(g)} limit is enforced twice (API and worker); I left both in place.",
            ]))
        return " ".join(out)

    def remark(self, kind: str, what: str = "") -> str:
        """Short speech before a tool call; `what` is a path, a command or a search word."""
        g = self.g
        if g.random() < 0.25:
            return ""
        if kind == "read":
            return g.choice([f"Let me look at `{what}`.", f"I'll read `{what}` to see how this is wired.",
                             f"Checking `{what}` next."])
        if kind == "edit":
            return g.choice([f"Now the fix in `{what}`:", "Applying the change.", f"Updating `{what}`."])
        if kind == "grep":
            return g.choice([f"Searching for other call sites of `{what}`.", f"Let me find where `{what}` is used."])
        if what.startswith(("pytest", "python -m pytest", "uv run pytest", "go test", "npm test", "npx vitest",
                            "pnpm test", "cargo test")):
            return g.choice(["Let me run the tests.", "Running the suite to see the current state.",
                             f"Running `{what}`."])
        if what.startswith("git"):
            return g.choice(["Let me check the repository state first.", "Checking git state."])
        return g.choice([f"Running `{what}`.", "Let me check.", "Building to make sure it compiles."
                         if "build" in what or "clippy" in what or "mypy" in what else "Next, a quick look around."])

    def thinking(self) -> str:
        g, p = self.g, self.p
        return (f"The user wants me to {g.choice(VERBS)} the {p.noun(g)} handling. "
                f"{g.choice(['The error points at', 'I suspect', 'First I should check'])} `{p.fn(g)}`. "
                + self.prose(g.randrange(0, 3)))

    # -- steps
    def bash(self, cmd: str, output: str, code: int = 0, desc: str = "") -> Step:
        return Step("bash", remark=self.remark("bash", cmd), cmd=cmd, output=output, code=code,
                    desc=desc or f"Run {cmd.split()[0]}")

    def test_step(self, fail: bool) -> Step:
        g, p = self.g, self.p
        verbose = g.random() < 0.35
        cmd = {"python": ["pytest -q", "pytest -x -q tests", "python -m pytest -q --maxfail=1", "uv run pytest -q",
                          "pytest -vv tests/unit"],
               "go": ["go test ./...", "go test -race ./internal/...", "go test -count=1 ./...", "go test -v ./..."],
               "ts": ["npm test -- --run", "npx vitest run", "pnpm test"],
               "rust": ["cargo test", "cargo test --all-features", "cargo test -- --nocapture"],
               "hcl": ["terraform plan -out=tfplan", "terraform plan -var-file=envs/staging/terraform.tfvars"]}[p.lang]
        c = g.choice(cmd)
        if p.lang == "hcl":
            out, summ = out_terraform(g, p, fail)
        else:
            out, summ = out_tests(g, p, fail, verbose or "-v" in c)
        step = self.bash(c, out, 1 if fail else 0, "Run tests" if p.lang != "hcl" else "Terraform plan")
        step.summary = summ
        return step

    def build_step(self, fail: bool) -> Step:
        g, p = self.g, self.p
        cmd = {"python": ["mypy app", "ruff check . && mypy app"], "go": ["go build ./...", "go vet ./..."],
               "ts": ["npm run build", "pnpm build"], "rust": ["cargo build --release", "cargo clippy --all-targets -- -D warnings"],
               "hcl": ["terraform validate && terraform plan"]}[p.lang]
        out, summ = out_build(g, p, fail)
        code = (2 if p.lang in ("ts", "python") else 1) if fail else 0
        step = self.bash(g.choice(cmd), out, code, "Build")
        step.summary = summ
        return step

    def read_step(self, rel: str | None = None) -> Step:
        g, p = self.g, self.p
        rel = rel or g.choice(p.src_files + p.test_files)
        lines = p.lines(g, rel)
        start, n = 1, len(lines)
        if n > 400 and g.random() < 0.5:            # partial read with offset/limit
            start = g.randrange(1, n - 200)
            n = min(g.choice([100, 200, 300]), len(lines) - start + 1)
        content = "\n".join(lines[start - 1:start - 1 + n])
        return Step("read", remark=self.remark("read", rel), path=rel, content=content, start=start, total=len(lines))

    def edit_step(self, rel: str | None = None) -> Step:
        g, p = self.g, self.p
        rel = rel or g.choice(p.src_files + p.test_files)
        lines = p.lines(g, rel)
        for _ in range(20):
            i = g.randrange(1, max(2, len(lines) - 10))
            if lines[i].strip():
                break
        k = g.randrange(1, 7)
        old = lines[i:i + k]
        new = list(old)
        j = g.randrange(len(new))
        new[j] = mutate_line(g, p, new[j])
        if len(old) > 1 and g.random() < 0.5:  # also add a guard / log line in the block's indentation
            indent = re.match(r"\s*", old[1]).group(0)
            x = lower_camel(p.noun(g)) if p.lang in ("go", "ts") else p.noun(g)
            new.insert(1, indent + g.choice(GUARDS[p.lang]).format(x=x, i=indent))
        return Step("edit", remark=self.remark("edit", rel), path=rel, old="\n".join(old), new="\n".join(new),
                    start=i + 1, ctx_before=lines[i - 1], ctx_after=lines[i + k] if i + k < len(lines) else "")

    def write_step(self) -> Step:
        g, p = self.g, self.p
        d = g.choice(p.dirs)
        rel = f"{d}/{p.noun(g)}_{g.choice(VERBS)}{EXT[p.lang]}" if p.lang != "ts" else f"{d}/{lower_camel(p.noun(g) + '_' + g.choice(VERBS))}.ts"
        parts, n, target = [file_header(g, p, rel)], 0, g.size(2500, 0.6, 400, 12_000)
        while n < target:
            c = CHUNKS[p.lang](g, p)
            parts.append(c + "\n")
            n += len(c)
        return Step("write", remark=g.choice(["", f"Creating `{rel}`."]), path=rel, content="".join(parts))

    def quick_step(self) -> Step:
        """The small look-around commands that make up most of a real session's calls."""
        g, p = self.g, self.p
        d = g.choice(p.dirs)
        files = [f for f in p.src_files if f.startswith(d + "/")] or p.src_files[:5]
        r = g.randrange(7)
        if r == 0:
            rows = [f"-rw-r--r--  1 dev dev {g.randrange(300, 40000):6d} {g.choice(['Mar', 'Jun', 'Sep', 'Oct'])} {g.randrange(1, 28):2d} "
                    f"{g.randrange(0, 23):02d}:{g.randrange(0, 59):02d} {f.rsplit('/', 1)[-1]}" for f in files]
            return self.bash(f"ls -la {d}", f"total {8 * len(rows)}\n" + "\n".join(rows), desc=f"List {d}")
        if r == 1:
            mods = g.sample(p.src_files + p.test_files, k=g.randrange(0, 5))
            return self.bash("git status --short", "\n".join(f" M {m}" for m in mods), desc="Short status")
        if r == 2:
            word = p.fn(g)
            return self.bash(f"rg -l {word}", "\n".join(g.sample(p.src_files, k=min(len(p.src_files), g.randrange(1, 6)))),
                             desc=f"Find files mentioning {word}")
        if r == 3:
            rows = [f"{len(p.lines(g, f)):6d} {f}" for f in files[:8]]
            return self.bash(f"wc -l {' '.join(files[:8])}", "\n".join(rows), desc="Count lines")
        if r == 4:
            return self.bash("git log --oneline -5", out_git_log(g, p, 5), desc="Recent commits")
        if r == 5:
            return self.bash("git branch --show-current", self.branch, desc="Current branch")
        return self.bash("git diff --stat", "\n".join(f" {f} | {g.randrange(1, 40)} {'+' * g.randrange(1, 12)}{'-' * g.randrange(0, 6)}"
                                                      for f in files[:g.randrange(1, 6)]), desc="Diff summary")

    def grep_step(self) -> Step:
        g, p = self.g, self.p
        word = p.fn(g)
        out = out_rg(g, p, word, g.randrange(2, 60))
        return Step("grep", remark=self.remark("grep", word), cmd=f'rg -n "{word}" {g.choice(p.dirs)}', output=out,
                    content=word)

    def git_steps(self) -> list[Step]:
        g, p = self.g, self.p
        files = g.sample(p.src_files, k=g.randrange(1, 5))
        steps = [self.bash("git status", out_git_status(g, p, self.branch), desc="Show working tree status")]
        if g.random() < 0.6:
            steps.append(self.bash("git diff", out_git_diff(g, p, files), desc="Show unstaged changes"))
        msg = f"{g.choice(['fix', 'feat', 'refactor'])}({p.noun(g)}): {g.choice(VERBS)} {p.noun(g)} {g.choice(['handling', 'on retry', 'validation'])}"
        if g.random() < 0.5:
            steps.append(self.bash(f'git add -A && git commit -m "{msg}"',
                                   f"[{self.branch} {g.hexs(7)}] {msg}\n {len(files)} files changed, {g.randrange(3, 200)} insertions(+), {g.randrange(0, 90)} deletions(-)",
                                   desc="Commit the change"))
        if g.random() < 0.3:
            steps.append(self.bash("git log --oneline -20", out_git_log(g, p, 20), desc="Recent history"))
        return steps

    def ops_steps(self) -> list[Step]:
        g, p = self.g, self.p
        steps = []
        if g.random() < 0.5:
            n = g.size(250, 0.9, 20, 1500)
            steps.append(self.bash("docker compose up -d && docker compose logs --tail=500 api worker db",
                                   f"[+] Running 4/4\n ✔ Network {p.name}_default  Created\n ✔ Container {p.name}-db-1  Started\n"
                                   f" ✔ Container {p.name}-redis-1  Started\n ✔ Container {p.name}-api-1  Started\n" + out_compose_logs(g, p, n),
                                   desc="Start services and tail logs"))
        if g.random() < 0.4:
            ns = g.choice(["default", "prod", "staging", p.name])
            pods = "\n".join(f"{p.name}-{g.choice(['api', 'worker', 'cron'])}-{g.hexs(10)}-{g.alnum(5).lower()}   "
                             f"{g.choice(['1/1     Running', '0/1     CrashLoopBackOff', '1/1     Running', '0/1     Pending'])}   "
                             f"{g.randrange(0, 40)}          {g.randrange(1, 90)}m" for _ in range(g.randrange(3, 25)))
            steps.append(self.bash(f"kubectl get pods -n {ns}", "NAME" + " " * 40 + "READY   STATUS    RESTARTS   AGE\n" + pods,
                                   desc="List pods"))
        if g.random() < 0.35:
            env = g.choice([c for c in p.config_files if c.startswith(".env") or c.endswith(".tfvars") or c == ".envrc"]
                           or p.config_files)
            steps.append(self.bash(f"cat {env}", p.text(g, env), desc="Show env file"))
        if not steps or g.random() < 0.3:
            steps.append(self.test_step(fail=g.random() < 0.4))
        return steps

    # -- scenarios
    def turn(self, first: bool, max_steps: int = 40) -> Turn:
        g, p = self.g, self.p
        scenario = g.choices(["fix", "feature", "explore", "ops", "git", "refactor"], weights=[30, 22, 18, 10, 8, 12])[0]
        steps: list[Step] = []
        fail_summary = ""
        if scenario == "fix":
            t = self.test_step(fail=True)
            fail_summary = t.summary
            steps.append(t)
            if g.random() < 0.5:
                steps.append(self.grep_step())
            steps += [self.read_step() for _ in range(g.randrange(1, 5))]
            steps += [self.edit_step() for _ in range(g.randrange(1, 4))]
            if g.random() < 0.3:
                steps.append(self.test_step(fail=True))
                steps.append(self.edit_step())
            steps.append(self.test_step(fail=False))
        elif scenario == "feature":
            if g.random() < 0.3:
                steps.append(Step("todo", todos=[f"{g.choice(VERBS).capitalize()} {p.noun(g)} {p.noun(g)}" for _ in range(g.randrange(2, 6))]))
            steps += [self.read_step() for _ in range(g.randrange(1, 4))]
            steps += [self.write_step() for _ in range(g.randrange(0, 3))]
            steps += [self.edit_step() for _ in range(g.randrange(1, 5))]
            b = self.build_step(fail=g.random() < 0.35)
            steps.append(b)
            if b.code:
                fail_summary = b.summary
                steps += [self.edit_step(), self.build_step(fail=False)]
            steps.append(self.test_step(fail=False))
        elif scenario == "explore":
            steps += [self.grep_step() for _ in range(g.randrange(1, 3))]
            steps += [self.read_step() for _ in range(g.randrange(2, 7))]
        elif scenario == "ops":
            steps += self.ops_steps()
            steps += [self.read_step(g.choice(p.config_files + p.src_files)), self.edit_step()]
            steps.append(self.test_step(fail=False))
        elif scenario == "git":
            steps += self.git_steps()
        else:
            steps += [self.read_step() for _ in range(g.randrange(2, 5))]
            steps += [self.edit_step() for _ in range(g.randrange(2, 7))]
            steps.append(self.test_step(fail=False))
            if g.random() < 0.4:
                steps += self.git_steps()
        for _ in range(g.randrange(2, 11)):
            steps.insert(g.randrange(0, len(steps) + 1), self.quick_step())
        steps = steps[:max_steps]
        for s in steps:
            if g.random() < 0.4:
                s.thinking = self.thinking() if s.kind != "bash" else self_thought(g)
        prompt, title = self.prompt(scenario, first, fail_summary)
        return Turn(prompt, steps, self.answer(scenario, steps, fail_summary), title)

    def prompt(self, scenario: str, first: bool, err: str) -> tuple[str, str]:
        g, p = self.g, self.p
        a, b, fn, f = p.noun(g), p.noun(g), p.fn(g), g.choice(p.src_files)
        err = err or g.choice([f"{camel(a)}Error: {b} not found", f"500 Internal Server Error on /api/{a}s"])
        if not first and g.random() < 0.45:
            short = g.choice(["ok, go ahead", "looks good — commit it", "yes, do that", "can you also handle the case where the "
                              f"{a} is empty?", f"still failing:\n```\n{err}\n```", "run the full suite before committing",
                              f"why did you change `{fn}`?", "now add a test for that", "revert the last change, it broke staging",
                              f"also update the docs in README for the new `{b}` behaviour"])
            return short, ""
        texts = {
            "fix": [f"CI is red on `{self.branch}`: {err}. Can you find the root cause and fix it?",
                    f"`{fn}` started failing after yesterday's deploy:\n\n```\n{err}\n```\n\nplease investigate",
                    f"the {a} endpoint returns 500 when the {b} has no {p.noun(g)} — find out why and fix it"],
            "feature": [f"add a `--{b}-limit` option to the {a} command and plumb it through to `{fn}`",
                        f"implement {g.choice(ADJS)} {a} {b}s: store them, expose them on the API, add tests",
                        f"we need retries with exponential backoff around `{fn}` (max 5 attempts, jitter). add it plus tests"],
            "explore": [f"explain how {a} {b}s flow through this repo, from the API down to the database",
                        f"where is `{fn}` called from and is it safe to make it async?",
                        f"I'm new to this codebase — what does `{f}` do and how does it relate to the {b} worker?"],
            "ops": [f"the {a} service keeps restarting in staging, can you look at the logs and figure out why",
                    f"docker compose up fails locally with `{err}`",
                    f"terraform plan wants to replace the {a} {b}, why? we don't want downtime"],
            "git": ["what's the state of my branch? summarize the diff and commit it with a good message",
                    f"clean up the working tree and commit the {a} changes"],
            "refactor": [f"refactor `{f}` so the {a} logic lives in its own module, keep behaviour identical",
                         f"rename `{fn}` to something clearer and update all call sites",
                         f"`{f}` is getting huge — split the {b} parts out and add type hints"],
        }
        text = g.choice(texts[scenario])
        if g.random() < 0.04:
            text += f"\n\nfyi the staging creds are in the ticket: {fake_secret(g)}"
        if g.random() < 0.1:
            text += "\n\n" + out_compose_logs(g, p, g.randrange(5, 40))
        title = f"{camel(g.choice(VERBS))} {a} {b} {g.choice(['handling', 'failure', 'flow', 'tests', 'config'])}"
        return text, title

    def answer(self, scenario: str, steps: list[Step], err: str) -> str:
        g, p = self.g, self.p
        edited = sorted({s.path for s in steps if s.kind in ("edit", "write")})
        parts = []
        if scenario in ("fix", "ops") or err:
            parts.append(f"Fixed. The root cause was that {self.cause()}.")
            if err:
                parts.append(f"That is what produced `{err[:120]}`.")
        elif scenario == "explore":
            parts.append(f"Here's how it fits together.\n\n{self.prose(g.randrange(3, 10))}")
            parts.append("\n".join(f"- `{g.choice(p.src_files)}` — {sentence(g, p)}" for _ in range(g.randrange(2, 7))))
        elif scenario == "git":
            parts.append(f"Committed on `{self.branch}`. {self.prose(1)}")
        else:
            parts.append(f"Done. {self.prose(g.randrange(1, 4))}")
        if edited:
            parts.append("Changes:\n" + "\n".join(f"- `{e}`: {g.choice(VERBS)} the {p.noun(g)} {g.choice(['path', 'check', 'handling', 'query'])}" for e in edited))
        if g.random() < 0.35:
            parts.append(self.decision())
        if any(s.kind == "bash" and s.desc.startswith(("Run tests", "Terraform")) and not s.code for s in steps):
            parts.append(g.choice(["All tests pass now.", "The full suite is green.", "Tests pass locally; CI should follow."]))
        if g.random() < 0.3:
            parts.append(f"One follow-up: {self.prose(1)}")
        return "\n\n".join(parts)


# --------------------------------------------------------------------------- renderers

@dataclass
class SessionInfo:
    harness: str
    project: Project
    sid: str
    cwd: str
    branch: str
    version: str
    model: str
    t: int                       # time cursor, epoch ms
    parent: str | None = None    # Claude: last uuid in the chain
    lines: int = 0
    messages: int = 0


class ClaudeWriter:
    """Renders turns as Claude Code JSONL lines (one content block per assistant line)."""

    def __init__(self, g: Gen, s: SessionInfo):
        self.g, self.s = g, s
        self.new_style = s.version >= "2.1"
        self.gap = (20_000, 900_000)  # idle time before each user prompt, ms

    def _env(self, typ: str, extra: dict) -> dict:
        s, u = self.s, self.g.uuid4()
        d = {"parentUuid": s.parent, "isSidechain": False}
        d.update(extra)
        d.update({"type": typ, "uuid": u, "timestamp": iso(s.t), "userType": "external", "cwd": s.cwd,
                  "sessionId": s.sid, "version": s.version, "gitBranch": s.branch})
        if self.new_style:
            d["entrypoint"] = "cli"
        s.parent = u
        return d

    def _tick(self, lo: int, hi: int):
        self.s.t += self.g.randrange(lo, hi)

    def preamble(self) -> list[dict]:
        g, s, out = self.g, self.s, []
        if self.new_style and g.random() < 0.5:
            out.append({"type": "permission-mode", "permissionMode": g.choice(["default", "acceptEdits"]), "sessionId": s.sid})
        if g.random() < 0.3:
            out.append({"parentUuid": None, "isSidechain": False, "type": "progress",
                        "data": {"type": "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart:startup",
                                 "command": f"{HOME}/.claude/hooks/session-start.sh"},
                        "parentToolUseID": g.uuid4(), "toolUseID": g.uuid4(), "timestamp": iso(s.t), "uuid": g.uuid4(),
                        "userType": "external", "cwd": s.cwd, "sessionId": s.sid, "version": s.version, "gitBranch": s.branch})
        if g.random() < 0.08:  # a slash command before the first prompt (plumbing the indexer must strip)
            out.append(self._env("user", {"message": {"role": "user", "content": "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.</local-command-caveat>"}, "isMeta": True}))
            out.append(self._env("user", {"message": {"role": "user", "content": "<command-name>/model</command-name>\n            <command-message>model</command-message>\n            <command-args>opus</command-args>"}}))
            out.append(self._env("user", {"message": {"role": "user", "content": f"<local-command-stdout>Set model to {s.model}</local-command-stdout>"}}))
        return out

    def _assistant(self, msg_id: str, req: str, block: dict, stop: str | None) -> dict:
        g = self.g
        self._tick(300, 4000)
        usage = {"input_tokens": g.randrange(1, 12), "cache_creation_input_tokens": g.randrange(0, 20000),
                 "cache_read_input_tokens": g.randrange(10000, 200000), "output_tokens": g.randrange(5, 3000),
                 "service_tier": "standard"}
        return self._env("assistant", {"message": {"model": self.s.model, "id": msg_id, "type": "message", "role": "assistant",
                                                   "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage},
                                       "requestId": req})

    def _thinking(self, text: str) -> dict:
        if self.new_style and self.g.random() < 0.7:
            text = ""  # 2.1.x mostly stores signature-only thinking
        return {"type": "thinking", "thinking": text, "signature": self.g.blob(self.g.randrange(200, 900))}

    def turn(self, t: Turn) -> list[dict]:
        g, s = self.g, self.s
        self._tick(*self.gap)
        start = s.t
        user = self._env("user", {"promptId": g.uuid4(), "message": {"role": "user", "content": t.prompt}})
        out = [{"type": "file-history-snapshot", "messageId": user["uuid"],
                "snapshot": {"messageId": user["uuid"], "trackedFileBackups": {}, "timestamp": iso(s.t)},
                "isSnapshotUpdate": False}, user]
        for st in t.steps:
            msg_id, req = "msg_01" + g.b58(22), "req_011C" + g.b58(20)
            if st.thinking:
                out.append(self._assistant(msg_id, req, self._thinking(st.thinking), None))
            if st.remark:
                out.append(self._assistant(msg_id, req, {"type": "text", "text": st.remark}, None))
            tool_id = "toolu_01" + g.b58(22)
            name, inp, content, result, is_err = self._tool(st)
            use = self._assistant(msg_id, req, {"type": "tool_use", "id": tool_id, "name": name, "input": inp}, "tool_use")
            out.append(use)
            self._tick(50, 30_000 if st.kind == "bash" else 800)
            block = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
            if st.kind == "bash" or is_err:
                block["is_error"] = is_err
            out.append(self._env("user", {"promptId": user["promptId"], "message": {"role": "user", "content": [block]},
                                          "toolUseResult": result, "sourceToolAssistantUUID": use["uuid"]}))
        msg_id, req = "msg_01" + g.b58(22), "req_011C" + g.b58(20)
        out.append(self._assistant(msg_id, req, {"type": "text", "text": t.answer}, "end_turn"))
        if self.new_style:
            out.append(self._env("system", {"subtype": "turn_duration", "durationMs": s.t - start,
                                            "messageCount": len(out), "isMeta": False}))
        return out

    def _tool(self, st: Step):
        """-> (tool name, input, tool_result content, toolUseResult, is_error)."""
        p, g = self.s.project, self.g
        if st.kind == "bash":
            inp = {"command": st.cmd, "description": st.desc}
            if st.code:
                text = f"Exit code {st.code}\n{st.output}"
                return "Bash", inp, text, "Error: " + text, True
            return "Bash", inp, st.output, {"stdout": st.output, "stderr": "", "interrupted": False, "isImage": False}, False
        if st.kind == "grep":
            files = sorted({ln.split(":", 1)[0] for ln in st.output.split("\n")})
            inp = {"pattern": st.content, "output_mode": "content", "-n": True}
            return "Grep", inp, st.output, {"mode": "content", "numFiles": len(files), "filenames": [], "content": st.output}, False
        if st.kind == "read":
            path = p.abs(st.path)
            inp = {"file_path": path}
            if st.start > 1:
                inp.update(offset=st.start, limit=st.content.count("\n") + 1)
            numbered = "\n".join(f"{st.start + i}\t{ln}" for i, ln in enumerate(st.content.split("\n")))
            res = {"type": "text", "file": {"filePath": path, "content": st.content, "numLines": st.content.count("\n") + 1,
                                            "startLine": st.start, "totalLines": st.total}}
            return "Read", inp, numbered, res, False
        if st.kind == "edit":
            path = p.abs(st.path)
            inp = {"file_path": path, "old_string": st.old, "new_string": st.new, "replace_all": False}
            if g.random() < 0.03:
                return "Edit", inp, "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>", \
                    "Error: File has not been read yet. Read it first before writing to it.", True
            old_l, new_l = st.old.split("\n"), st.new.split("\n")
            hunk = {"oldStart": st.start - 1, "oldLines": len(old_l) + 2, "newStart": st.start - 1, "newLines": len(new_l) + 2,
                    "lines": [" " + st.ctx_before] + ["-" + x for x in old_l] + ["+" + x for x in new_l] + [" " + st.ctx_after]}
            res = {"filePath": path, "oldString": st.old, "newString": st.new, "originalFile": p.text(g, st.path),
                   "structuredPatch": [hunk], "userModified": False, "replaceAll": False}
            return "Edit", inp, f"The file {path} has been updated successfully.", res, False
        if st.kind == "write":
            path = p.abs(st.path)
            return "Write", {"file_path": path, "content": st.content}, f"File created successfully at: {path}", \
                {"type": "create", "filePath": path, "content": st.content, "structuredPatch": []}, False
        todos = [{"content": c, "status": "pending", "activeForm": c + "…"} for c in st.todos]
        return "TodoWrite", {"todos": todos}, \
            "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable", \
            {"oldTodos": [], "newTodos": todos}, False

    def trailer(self, title: str, last_prompt: str) -> list[dict]:
        out = []
        if title:
            out.append({"type": "ai-title", "sessionId": self.s.sid, "aiTitle": title})
        if self.new_style:
            out.append({"type": "last-prompt", "lastPrompt": last_prompt[:200], "sessionId": self.s.sid})
        return out


def self_thought(g: Gen) -> str:
    return g.choice(["Let me check the output carefully.", "The failure is deterministic, good.",
                     "I should run only the affected package first.", "Need to confirm the fix doesn't break other callers."])


DEVELOPER_TEXT = """<permissions instructions>
Filesystem sandboxing defines which files can be read or written. `sandbox_mode` is `workspace-write`: The sandbox permits reading files, and editing files in `cwd` and `writable_roots`. Editing files in other directories requires approval. Network access is restricted.
# Escalation Requests

Commands are run outside the sandbox if they are approved by the user, or match an existing rule that allows it to run unrestricted. The command string is split into independent command segments at shell control operators, including but not limited to:

- Pipes: |
- Logical operators: &&, ||
- Command separators: ;
- Subshell boundaries: (...), $(...)

Each resulting segment is evaluated independently for sandbox restrictions and approval requirements.

## How to request escalation

IMPORTANT: To request approval to execute a command that will require escalated privileges:

- Provide the `sandbox_permissions` parameter with the value `"require_escalated"`
- Include a short question asking the user if they want to allow the action in `justification` parameter.
- Optionally suggest a `prefix_rule` - this will be shown to the user with an option to persist the rule approval for future sessions.
</permissions instructions>"""

BASE_INSTRUCTIONS = """You are Codex, a coding agent based on GPT-5. You and the user share the same workspace and collaborate to achieve the user's goals.

# Personality

You are a deeply pragmatic, effective software engineer. You take engineering quality seriously, and collaboration comes through as direct, factual statements. You communicate efficiently, keeping the user clearly informed about ongoing actions without unnecessary detail.

## Values
- Clarity: You communicate reasoning explicitly and concretely, so decisions and tradeoffs are easy to evaluate upfront.
- Pragmatism: You keep the end goal and momentum in mind, focusing on what will actually work and move things forward.
- Rigor: You expect technical arguments to be coherent and defensible, and you surface gaps or weak assumptions politely.

# Editing constraints
- Default to ASCII when editing or creating files.
- Use apply_patch for single file edits; do not use it for auto-generated changes.
- Never revert existing changes you did not make unless explicitly requested.
"""

AGENTS_MD = """# AGENTS.md instructions for {cwd}

<INSTRUCTIONS>
## Repository guidelines
- Run `{test}` before committing; CI runs the same command.
- Keep functions small; prefer explicit types on public APIs.
- Never commit secrets; configuration comes from the environment.
- Commit messages follow Conventional Commits (`fix(scope): ...`).
</INSTRUCTIONS>"""


class CodexWriter:
    """Renders turns as Codex rollout lines (response_item + event_msg duplicates, token counts)."""

    def __init__(self, g: Gen, s: SessionInfo):
        self.g, self.s = g, s
        self.tokens = 0
        self.gap = (20_000, 900_000)  # idle time before each user prompt, ms

    def _line(self, typ: str, payload: dict, tick: tuple[int, int] = (1, 40)) -> dict:
        self.s.t += self.g.randrange(*tick)
        return {"timestamp": iso(self.s.t), "type": typ, "payload": payload}

    def _token_count(self) -> dict:
        g = self.g
        last = g.randrange(2000, 60000)
        self.tokens += last
        info = {"total_token_usage": {"input_tokens": self.tokens, "cached_input_tokens": self.tokens * 3 // 4,
                                      "output_tokens": self.tokens // 40, "reasoning_output_tokens": self.tokens // 90,
                                      "total_tokens": self.tokens + self.tokens // 40},
                "last_token_usage": {"input_tokens": last, "cached_input_tokens": last // 2, "output_tokens": last // 50,
                                     "reasoning_output_tokens": last // 120, "total_tokens": last + last // 50},
                "model_context_window": 258400}
        return self._line("event_msg", {"type": "token_count", "info": info, "rate_limits": {
            "primary": {"used_percent": float(g.randrange(0, 90)), "window_minutes": 300, "resets_at": self.s.t // 1000 + 9000},
            "secondary": {"used_percent": float(g.randrange(0, 60)), "window_minutes": 10080, "resets_at": self.s.t // 1000 + 400000},
            "plan_type": "plus"}})

    def preamble(self) -> list[dict]:
        s, g, p = self.s, self.g, self.s.project
        meta = {"id": s.sid, "timestamp": iso(s.t), "cwd": s.cwd, "originator": "codex_cli_rs", "cli_version": s.version,
                "source": "cli", "model_provider": "openai", "base_instructions": {"text": BASE_INSTRUCTIONS}}
        if g.random() < 0.7:
            meta["git"] = {"commit_hash": g.hexs(40), "branch": s.branch, "repository_url": f"git@github.com:{p.org}/{p.name}.git"}
        test = {"python": "pytest -q", "go": "go test ./...", "ts": "npm test", "rust": "cargo test", "hcl": "terraform validate"}[p.lang]
        env = (f"<environment_context>\n  <cwd>{s.cwd}</cwd>\n  <shell>zsh</shell>\n  <current_date>{iso(s.t)[:10]}</current_date>\n"
               f"  <timezone>UTC</timezone>\n</environment_context>")
        return [self._line("session_meta", meta, (0, 1)),
                self._line("response_item", {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": DEVELOPER_TEXT}]}),
                self._line("response_item", {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": AGENTS_MD.format(cwd=s.cwd, test=test)}, {"type": "input_text", "text": env}]})]

    def _reasoning(self, text: str) -> list[dict]:
        summary = f"**{text.split('.')[0][:70]}**"
        return [self._line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
                                             "content": None, "encrypted_content": "gAAAAAB" + self.g.blob(self.g.randrange(400, 2200))},
                           (500, 6000)),
                self._line("event_msg", {"type": "agent_reasoning", "text": summary}, (0, 2))]

    def _assistant_msg(self, text: str, phase: str) -> list[dict]:
        return [self._line("event_msg", {"type": "agent_message", "message": text}, (300, 5000)),
                self._line("response_item", {"type": "message", "role": "assistant",
                                             "content": [{"type": "output_text", "text": text}], "phase": phase}, (0, 2))]

    def turn(self, t: Turn) -> list[dict]:
        g, s = self.g, self.s
        s.t += g.randrange(*self.gap)
        turn_id = g.uuid7(s.t)
        out = [self._line("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 258400,
                                        "collaboration_mode_kind": "default"}),
               self._line("turn_context", {"turn_id": turn_id, "cwd": s.cwd, "current_date": iso(s.t)[:10], "timezone": "UTC",
                                           "approval_policy": "on-request",
                                           "sandbox_policy": {"type": "workspace-write", "network_access": False,
                                                              "exclude_tmpdir_env_var": False, "exclude_slash_tmp": False},
                                           "model": s.model, "effort": "medium", "summary": "auto"}),
               self._line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t.prompt}]}),
               self._line("event_msg", {"type": "user_message", "message": t.prompt, "images": [], "local_images": [], "text_elements": []}, (0, 2)),
               self._token_count()]
        for st in t.steps:
            if st.thinking or g.random() < 0.3:
                out += self._reasoning(st.thinking or self_thought(g))
            if st.remark and g.random() < 0.6:
                out += self._assistant_msg(st.remark, "commentary")
            call_id = "call_" + g.alnum(24)
            if st.kind in ("edit", "write"):
                out.append(self._line("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": call_id,
                                                        "name": "apply_patch", "input": self._patch(st)}, (500, 8000)))
                verb = "M" if st.kind == "edit" else "A"
                res = {"output": f"Success. Updated the following files:\n{verb} {st.path}\n",
                       "metadata": {"exit_code": 0, "duration_seconds": round(g.uniform(0, 0.2), 1)}}
                out.append(self._line("response_item", {"type": "custom_tool_call_output", "call_id": call_id,
                                                        "output": dumps(res).decode()}, (5, 60)))
            else:
                cmd, output, code = self._shell(st)
                args = {"cmd": cmd, "workdir": s.cwd, "yield_time_ms": 1000, "max_output_tokens": 6000}
                out.append(self._line("response_item", {"type": "function_call", "name": "exec_command",
                                                        "arguments": dumps(args).decode(), "call_id": call_id}, (500, 8000)))
                out.append(self._token_count())
                body = (f"Command: /bin/zsh -lc {shell_quote(cmd)}\nChunk ID: {g.hexs(6)}\nWall time: {g.uniform(0, 40):.4f} seconds\n"
                        f"Process exited with code {code}\nOriginal token count: {len(output) // 4}\nOutput:\n{output}")
                out.append(self._line("response_item", {"type": "function_call_output", "call_id": call_id, "output": body}, (50, 30_000)))
        out += self._assistant_msg(t.answer, "final_answer")
        out.append(self._token_count())
        out.append(self._line("event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": t.answer}))
        return out

    def _shell(self, st: Step) -> tuple[str, str, int]:
        if st.kind == "read":  # Codex pages through files in sed windows
            lines = st.content.split("\n")[:self.g.choice([120, 200, 250, 250, 300])]
            return f"sed -n '{st.start},{st.start + len(lines) - 1}p' {st.path}", "\n".join(lines), 0
        if st.kind == "grep":
            return st.cmd, st.output, 0
        if st.kind == "todo":
            return "git status --short", "", 0
        return st.cmd, st.output, st.code

    def _patch(self, st: Step) -> str:
        if st.kind == "write":
            body = "\n".join("+" + ln for ln in st.content.rstrip("\n").split("\n"))
            return f"*** Begin Patch\n*** Add File: {st.path}\n{body}\n*** End Patch"
        minus = "\n".join("-" + ln for ln in st.old.split("\n"))
        plus = "\n".join("+" + ln for ln in st.new.split("\n"))
        return (f"*** Begin Patch\n*** Update File: {st.path}\n@@\n {st.ctx_before}\n{minus}\n{plus}\n {st.ctx_after}\n"
                "*** End Patch")

    def trailer(self, title: str, last_prompt: str) -> list[dict]:
        return []


def shell_quote(cmd: str) -> str:
    """How Codex echoes the command line: single quotes, or double quotes if it holds one."""
    if "'" in cmd:
        return '"' + cmd.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"'{cmd}'"


WRITERS = {"claude": ClaudeWriter, "codex": CodexWriter}


def is_message_line(harness: str, d: dict) -> bool:
    if harness == "claude":
        return d.get("type") in ("user", "assistant")
    p = d.get("payload") or {}
    return d.get("type") == "response_item" and p.get("type") in (
        "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output") \
        and p.get("role") != "developer"


# --------------------------------------------------------------------------- generation

def version_at(versions: list[str], t: int) -> str:
    frac = (t - (WINDOW_END_MS - WINDOW_MS)) / WINDOW_MS
    return versions[min(len(versions) - 1, max(0, int(frac * len(versions))))]


def session_path(out: str, harness: str, s: SessionInfo, start_ms: int) -> str:
    if harness == "claude":
        return os.path.join(out, "claude", "projects", encode_cwd(s.cwd), f"{s.sid}.jsonl")
    tm = time.gmtime(start_ms // 1000)
    return os.path.join(out, "codex", "sessions", time.strftime("%Y/%m/%d", tm),
                        f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', tm)}-{s.sid}.jsonl")


def new_session(g: Gen, harness: str, p: Project) -> SessionInfo:
    day = g.randrange(0, 365)
    t = WINDOW_END_MS - WINDOW_MS + day * 86_400_000 + g.randrange(7 * 3600, 23 * 3600) * 1000 + g.randrange(1000)
    cwd = p.root
    if harness == "claude" and g.random() < 0.12:
        cwd = f"{p.root}/{g.choice(p.dirs)}"
    branch = g.choice(p.branches) if g.random() < 0.7 else "main"
    if harness == "claude":
        return SessionInfo("claude", p, g.uuid4(), cwd, branch, version_at(CLAUDE_VERSIONS, t), g.choice(CLAUDE_MODELS), t)
    return SessionInfo("codex", p, g.uuid7(t), cwd, branch, version_at(CODEX_VERSIONS, t), g.choice(CODEX_MODELS), t)


@dataclass
class Shape:
    """What a corpus profile may change (bench/corpus_*.py): who plans the turns, who renders
    them, and how many sessions share a megabyte. The default is this file's own corpus."""
    planner: type = Planner
    writers: dict = field(default_factory=lambda: WRITERS)
    sessions_per_mb: float = SESSIONS_PER_MB


def render_session(g: Gen, s: SessionInfo, budget: int, shape: Shape | None = None) -> tuple[bytes, list[str]]:
    """Render turns until the session reaches `budget` bytes; returns (file bytes, user prompts)."""
    shape = shape or Shape()
    w = shape.writers[s.harness](g, s)
    planner = shape.planner(g, s.project, s.branch)
    planner.budget = budget  # a profile whose turns are big may plan them to fit
    head = w.preamble()
    s.messages += sum(is_message_line(s.harness, d) for d in head)
    chunks = [dumps(d) for d in head]
    size = sum(len(c) + 1 for c in chunks)
    prompts, title = [], ""
    while size < budget or not prompts:
        t = planner.turn(first=not prompts)
        title = title or t.title
        prompts.append(t.prompt)
        for d in w.turn(t):
            c = dumps(d)
            chunks.append(c)
            size += len(c) + 1
            s.messages += is_message_line(s.harness, d)
        if s.harness == "claude" and len(prompts) == 1 and title and g.random() < 0.8:
            c = dumps({"type": "ai-title", "sessionId": s.sid, "aiTitle": title})
            chunks.append(c)
            size += len(c) + 1
    chunks += [dumps(d) for d in w.trailer(title, prompts[-1])]
    s.lines = len(chunks)
    return b"\n".join(chunks) + b"\n", prompts


def generate(out: str, mb: float, seed: int = 1, sessions: int | None = None, progress: bool = True,
             shape: Shape | None = None) -> dict:
    shape = shape or Shape()
    g = Gen(seed)
    target = int(mb * 1_000_000)
    n = sessions or max(4, round(mb * shape.sessions_per_mb))
    projects = make_projects(g, max(12, min(120, 8 + int(mb) // 5)))
    n_claude = round(n * CLAUDE_SHARE)
    harnesses = ["claude"] * n_claude + ["codex"] * (n - n_claude)
    g.shuffle(harnesses)
    # Heavy-tailed session sizes like real stores: a few huge sessions, many small ones.
    weights = [g.lognormvariate(0, 1.0) for _ in range(n)]
    # Projects get a Zipf-ish popularity: a handful of repos hold most sessions.
    pop = [1 / (i + 1) ** 0.8 for i in range(len(projects))]

    stats = {"sessions": 0, "claude_sessions": 0, "codex_sessions": 0, "lines": 0, "messages": 0, "bytes": 0, "files": []}
    history = []
    written, t0 = 0, time.perf_counter()
    for i, harness in enumerate(harnesses):
        p = g.choices(projects, weights=pop)[0]
        s = new_session(g, harness, p)
        start = s.t
        budget = max(4000, int((target - written) * weights[i] / sum(weights[i:])))
        data, prompts = render_session(g, s, budget, shape)
        path = session_path(out, harness, s, start)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        os.utime(path, (s.t / 1000, s.t / 1000))
        if harness == "codex":
            history += [dumps({"session_id": s.sid, "ts": start // 1000 + k * 60, "text": pr}) for k, pr in enumerate(prompts)]
        written += len(data)
        stats["sessions"] += 1
        stats[f"{harness}_sessions"] += 1
        stats["lines"] += s.lines
        stats["messages"] += s.messages
        stats["files"].append(path)
        if progress and (i + 1) % max(1, n // 10) == 0:
            print(f"  {i + 1}/{n} sessions, {written / 1e6:.0f} MB, {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    if history:
        hist = os.path.join(out, "codex", "history.jsonl")
        with open(hist, "wb") as f:
            f.write(b"\n".join(history) + b"\n")
        written += os.path.getsize(hist)
    stats["bytes"] = written
    stats["seconds"] = round(time.perf_counter() - t0, 2)
    return stats


# --------------------------------------------------------------------------- live append

def _tail_lines(path: str, nbytes: int = 1 << 20) -> list[bytes]:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - nbytes))
        data = f.read()
    lines = data.split(b"\n")
    if size > nbytes:
        lines = lines[1:]  # first one is probably cut
    return [ln for ln in lines if ln.strip()]


def _loads(b: bytes):
    try:
        import orjson as _o
        return _o.loads(b)
    except ImportError:  # pragma: no cover
        import json as _j
        return _j.loads(b)


def _parse_iso(ts: str) -> int:
    import datetime as _dt
    return int(_dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)


def append_turn(path: str, harness: str, *, seed: int | None = None, marker: str | None = None,
                max_steps: int = 3, fsync: bool = False) -> dict:
    """Append one complete, realistic user+assistant turn to an existing transcript.

    harness is "claude" or "codex". Session id, cwd, branch, version and model are taken
    from the file so the new lines continue the session. The user prompt and the final
    answer both contain `marker` (default: a fresh random word such as "benchq7k2m9x4d1p"),
    so a search for it finds exactly this turn. All lines go out in one write().

    Returns {"marker", "path", "bytes", "lines", "timestamp"} (timestamp = epoch ms of the
    user prompt line).
    """
    if harness not in WRITERS:
        raise ValueError(f"harness must be 'claude' or 'codex', not {harness!r}")
    g = Gen(seed if seed is not None else int.from_bytes(os.urandom(8), "big"))
    marker = marker or "bench" + "".join(g.choices("abcdefghijkmnpqrstuvwxyz23456789", k=11))
    tail = [_loads(ln) for ln in _tail_lines(path)[-400:]]
    last_ts = max((_parse_iso(d["timestamp"]) for d in tail if isinstance(d.get("timestamp"), str)), default=0)
    if harness == "claude":
        # the chain continues from the last line that has a uuid (user, assistant or system)
        chained = [d for d in tail if d.get("uuid") and d.get("sessionId") and "parentUuid" in d]
        if not chained:
            raise ValueError(f"{path}: no user/assistant line to continue")
        last = chained[-1]
        model = next((d["message"].get("model") for d in reversed(chained) if d.get("type") == "assistant"), CLAUDE_MODELS[0])
        sid, cwd, branch, version = last["sessionId"], last.get("cwd") or HOME, last.get("gitBranch", ""), last.get("version", CLAUDE_VERSIONS[-1])
        parent = last["uuid"]
    else:
        with open(path, "rb") as f:
            meta = _loads(f.readline())["payload"]
        sid, cwd, version = meta.get("id"), meta.get("cwd") or HOME, meta.get("cli_version", CODEX_VERSIONS[-1])
        branch = (meta.get("git") or {}).get("branch", "main")
        model = next((d["payload"].get("model") for d in reversed(tail) if d.get("type") == "turn_context"), CODEX_MODELS[0])
        parent = None
    kind = g.choice(list(KINDS))
    p = Project(g, kind, os.path.basename(cwd.rstrip("/")) or "project", cwd, g.choice(ORGS))
    now = int(time.time() * 1000)
    s = SessionInfo(harness, p, sid, cwd, branch, version, model, max(now, last_ts + 1), parent)
    w = WRITERS[harness](g, s)
    w.gap = (0, 1)  # the prompt is "now"
    t = Planner(g, p, branch).turn(first=False, max_steps=max_steps)
    t.prompt = f"{t.prompt}\n\n(ref {marker})" if t.prompt else marker
    t.answer = f"{t.answer}\n\nTracked as {marker}."
    lines = w.turn(t)
    data = b"\n".join(dumps(d) for d in lines) + b"\n"
    with open(path, "rb+") as f:  # keep the file newline-terminated before appending
        f.seek(0, os.SEEK_END)
        if f.tell():
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                data = b"\n" + data
    with open(path, "ab") as f:
        f.write(data)
        f.flush()
        if fsync:
            os.fsync(f.fileno())
    ts = next(_parse_iso(d["timestamp"]) for d in lines if d.get("timestamp"))
    return {"marker": marker, "path": path, "bytes": len(data), "lines": len(lines), "timestamp": ts}


# --------------------------------------------------------------------------- profiles

# Each other profile is a module with generate(out, mb, seed, sessions, progress) -> stats.
PROFILES = {"default": None, "text": "bench.corpus_text", "tool": "bench.corpus_tool", "real": "bench.corpus_real",
            "many": "bench.corpus_many"}


def generate_profile(profile: str, out: str, mb: float, seed: int = 1, sessions: int | None = None,
                     progress: bool = True, **options) -> dict:
    if PROFILES[profile] is None:
        return generate(out, mb, seed, sessions, progress)
    import importlib
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:  # run as a script, the profiles still import bench.gen_corpus
        sys.path.insert(0, root)
    return importlib.import_module(PROFILES[profile]).generate(out, mb, seed, sessions, progress, **options)


# --------------------------------------------------------------------------- CLI

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", choices=list(PROFILES), default="default",
                    help="corpus shape (default: this file's own; see bench/README.md)")
    ap.add_argument("--out", required=True, help="output directory (gets claude/ and codex/ subtrees)")
    ap.add_argument("--mb", type=float, default=200, help="approximate total size in MB (default 200)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1); same seed + size = same bytes")
    ap.add_argument("--sessions", type=int, default=None,
                    help=f"session count (default {SESSIONS_PER_MB:g} per MB, e.g. 500 at 200 MB)")
    ap.add_argument("--real-dir", help="profile real: the published transcripts (default ../shared/corpus/real "
                                       "beside the repository, or $DEJA_REAL_CORPUS)")
    ap.add_argument("--force", action="store_true", help="write even if OUT already holds a store")
    args = ap.parse_args(argv)

    for sub in ("claude", "codex"):
        d = os.path.join(args.out, sub)
        if os.path.isdir(d) and os.listdir(d) and not args.force:
            ap.error(f"{d} is not empty (use --force to write into it anyway)")
    options = {"source": args.real_dir} if args.profile == "real" else {}
    stats = generate_profile(args.profile, args.out, args.mb, args.seed, args.sessions, **options)
    print(f"wrote {stats['sessions']} sessions ({stats['claude_sessions']} claude, {stats['codex_sessions']} codex), "
          f"{stats['lines']:,} lines, {stats['messages']:,} messages, {stats['bytes'] / 1e6:.1f} MB "
          f"in {stats['seconds']}s -> {args.out}")
    print(f"  index with: DEJA_CLAUDE_ROOT={os.path.join(args.out, 'claude', 'projects')} "
          f"DEJA_CODEX_ROOT={os.path.join(args.out, 'codex')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
