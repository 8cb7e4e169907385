"""English scenarios, part 2: Go services (ledger, gateway, scheduler)."""

from qdsl import D, S, T, edit, grep, read, run, write

SCENARIOS = []
add = SCENARIOS.append

# --------------------------------------------------------------------------- ledger

add(S("ledger-race", "ledger", when=(150, 175), turns=[
    T("go test -race is red on main, something in the store package",
      run("go test -race ./internal/store/...", '''==================
WARNING: DATA RACE
Write at 0x00c0001a4180 by goroutine 42:
  runtime.mapassign_faststr()
      /usr/local/go/src/runtime/map_faststr.go:203 +0x0
  github.com/initech/ledger/internal/store.(*MemoryStore).Post()
      {root}/internal/store/memory.go:118 +0x1c4
  github.com/initech/ledger/internal/store.TestConcurrentPost.func1()
      {root}/internal/store/memory_test.go:61 +0x9c

Previous read at 0x00c0001a4180 by goroutine 37:
  runtime.mapaccess2_faststr()
      /usr/local/go/src/runtime/map_faststr.go:117 +0x0
  github.com/initech/ledger/internal/store.(*MemoryStore).Balance()
      {root}/internal/store/memory.go:97 +0x8e
==================
--- FAIL: TestConcurrentPost (0.03s)
    testing.go:1398: race detected during execution of test
FAIL
FAIL	github.com/initech/ledger/internal/store	0.214s''', code=1),
      read("internal/store/memory.go", '''type MemoryStore struct {
	balances map[string]int64
	entries  []Entry
}

func (s *MemoryStore) Balance(account string) int64 {
	return s.balances[account]
}

func (s *MemoryStore) Post(e Entry) error {
	s.balances[e.Debit] -= e.Amount
	s.balances[e.Credit] += e.Amount
	s.entries = append(s.entries, e)
	return nil
}
'''),
      edit("internal/store/memory.go", "type MemoryStore struct {\n\tbalances map[string]int64",
           "type MemoryStore struct {\n\tmu       sync.RWMutex\n\tbalances map[string]int64"),
      edit("internal/store/memory.go", "func (s *MemoryStore) Post(e Entry) error {\n\ts.balances[e.Debit] -= e.Amount",
           "func (s *MemoryStore) Post(e Entry) error {\n\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\ts.balances[e.Debit] -= e.Amount"),
      run("go test -race -count=5 ./internal/store/...", "ok  \tgithub.com/initech/ledger/internal/store\t1.902s"),
      answer="`MemoryStore` (the in-memory implementation used by tests and the sandbox) had no locking at all: "
             "`Post` writes the balances map while `Balance` reads it from other goroutines. Added a `sync.RWMutex` — "
             "`Post` takes the write lock, `Balance`/`Entries` take the read lock. Five race runs in a row are clean.",
      title="Fix data race in MemoryStore"),
], qs=[
    ("natural", "why did the race detector complain about the balances map in the ledger?"),
    ("paraphrase", "what now guards the throwaway bookkeeping fake against simultaneous scribbling?"),
    ("error", "Write at 0x00c000126090 by goroutine 51:\n  github.com/initech/ledger/internal/store.(*MemoryStore).Post()\n"
              "      /home/dev/go/src/github.com/initech/ledger/internal/store/memory.go:121 +0x1c4"),
    ("identifier", "MemoryStore.Post"),
    ("keyword", "ledger data race"),
    ("phrase", '"had no locking at all"'),
], decoys=[
    D(T("gateway crashed in prod during a config reload:\n\nfatal error: concurrent map writes",
        run("kubectl -n prod logs gateway-5f7c9d-kq2lx --previous | head -20", '''fatal error: concurrent map writes

goroutine 1187 [running]:
github.com/hooli/gateway/internal/http.(*Router).Reload(0xc0001b2000, {0xc00041e000, 0x2f, 0x30})
	{root}/internal/http/router.go:74 +0x1f4
github.com/hooli/gateway/internal/config.(*Watcher).loop(0xc0000a6120)
	{root}/internal/config/watch.go:52 +0x2b1'''),
        edit("internal/http/router.go", "\tr.routes[k] = v", "\tnext[k] = v"),
        edit("internal/http/router.go", "func (r *Router) Reload(routes []Route) {", "func (r *Router) Reload(routes []Route) {\n\tnext := make(map[string]Route, len(routes))"),
        answer="Reload mutated the live routes map while request goroutines read it. Reload now builds a fresh map and "
               "swaps it in with `atomic.Pointer[map[string]Route]`; readers never see a half-written table.",
        title="Fix concurrent map writes on reload"),
      project="gateway",
      qs=[("error", "fatal error: concurrent map writes\n\ngoroutine 2093 [running]:\ngithub.com/hooli/gateway/internal/http.(*Router).Reload"),
          ("natural", "how does the proxy swap in a new routing table without crashing?")]),
]))

add(S("ledger-balanced", "ledger", when=(25, 40), turns=[
    T("we had a transfer write a debit without the matching credit during the incident on friday. I want the ledger to refuse "
      "journal entries that don't net to zero",
      read("internal/billing/journal.go"),
      write("internal/billing/balance_check.go", '''package billing

import "errors"

var ErrUnbalanced = errors.New("journal entry is unbalanced: sum of debits must equal sum of credits")

// assertBalanced rejects a journal entry whose lines don't net to zero per currency.
func assertBalanced(lines []Line) error {
	sums := map[string]int64{}
	for _, l := range lines {
		sums[l.Currency] += l.Debit - l.Credit
	}
	for _, v := range sums {
		if v != 0 {
			return ErrUnbalanced
		}
	}
	return nil
}
'''),
      edit("internal/billing/journal.go", "func (j *Journal) Commit(ctx context.Context, e JournalEntry) error {",
           "func (j *Journal) Commit(ctx context.Context, e JournalEntry) error {\n\tif err := assertBalanced(e.Lines); err != nil {\n\t\treturn err\n\t}"),
      run("go test ./internal/billing/...", "ok  \tgithub.com/initech/ledger/internal/billing\t0.118s"),
      answer="Every `Journal.Commit` now runs `assertBalanced` first: per currency, the sum of debits must equal sum of "
             "credits or the entry is rejected with `ErrUnbalanced` and nothing is written. It's checked per currency "
             "so an FX transfer with two legs still passes. There's also a nightly query in `cmd/audit` that re-checks "
             "historical entries.",
      title="Reject unbalanced journal entries"),
], qs=[
    ("natural", "where do we make sure a journal posting nets to zero before it is saved?"),
    ("paraphrase", "where do we veto lopsided bookings whose halves disagree?"),
    ("identifier", "assertBalanced"),
    ("phrase", '"sum of debits must equal sum of credits"'),
    ("temporal-ish", "last month I added a guard so lopsided journal entries get rejected — remind me how it works"),
], decoys=[
    D(T("amounts in the ledger API come back as 1999 instead of 19.99 for some clients",
        read("internal/http/render.go"),
        edit("internal/http/render.go", '\t"amount": e.Amount,', '\t"amount": formatMinor(e.Amount, e.Currency),'),
        answer="We store int64 minor units; the v2 renderer forgot to format them. JPY has 0 decimals and BHD 3, so "
               "`formatMinor` looks up the exponent per currency.",
        title="Format minor units in API")),
]))

add(S("migrate-dirty", "ledger", turns=[
    T("deploy failed, migrations job says:\n\nerror: Dirty database version 17. Fix and force version.",
      read("db/migrations/000017_add_transfer_status.up.sql", '''ALTER TABLE transfers ADD COLUMN status text NOT NULL DEFAULT 'posted';
CREATE INDEX CONCURRENTLY transfers_status_idx ON transfers (status);
'''),
      run("psql \"$DATABASE_URL\" -c 'select version, dirty from schema_migrations'", " version | dirty\n---------+-------\n      17 | t\n(1 row)"),
      run("psql \"$DATABASE_URL\" -c '\\d transfers' | grep status", " status      | text    |           | not null | 'posted'::text"),
      run("migrate -path db/migrations -database \"$DATABASE_URL\" force 16", ""),
      edit("db/migrations/000017_add_transfer_status.up.sql",
           "ALTER TABLE transfers ADD COLUMN status text NOT NULL DEFAULT 'posted';\nCREATE INDEX CONCURRENTLY transfers_status_idx ON transfers (status);",
           "ALTER TABLE transfers ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'posted';"),
      write("db/migrations/000018_transfer_status_idx.up.sql", "-- golang-migrate: no transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS transfers_status_idx ON transfers (status);\n"),
      run("migrate -path db/migrations -database \"$DATABASE_URL\" up", "17/u add_transfer_status (41.2ms)\n18/u transfer_status_idx (1.8s)"),
      answer="Migration 17 ran its `ALTER TABLE` and then died on `CREATE INDEX CONCURRENTLY`, which can't run inside "
             "the transaction golang-migrate wraps each file in. That left version 17 marked dirty with the column "
             "already added. I forced the version back to 16, made the ALTER idempotent (`IF NOT EXISTS`), and moved "
             "the index into its own migration 18 without a transaction. Both applied cleanly.",
      title="Recover dirty migration 17"),
], qs=[
    ("error", "migrate: Dirty database version 17. Fix and force version."),
    ("natural", "how did we recover from the half-applied schema migration in the ledger?"),
    ("paraphrase", "how did we untangle the DB evolution that aborted halfway and remained unclean?"),
    ("keyword", "migrate force dirty version"),
    ("phrase", '"can\'t run inside the transaction"'),
], decoys=[
    D(T("re-running migrations on my laptop db fails on 15",
        run("migrate -path db/migrations -database \"$DATABASE_URL\" up", "error: migration failed: relation \"accounts_owner_idx\" already exists in line 1: CREATE INDEX accounts_owner_idx ON accounts (owner_id);\n (details: pq: relation \"accounts_owner_idx\" already exists)", code=1),
        answer="Your local DB was restored from a dump that already had that index but an older `schema_migrations` "
               "row. Simplest fix locally: `migrate force 15`. I also added `IF NOT EXISTS` to 15 so it can't happen again.",
        title="Fix local migration 15"),
      qs=[("error", 'error: migration failed: relation "accounts_owner_idx" already exists in line 1')]),
]))

# --------------------------------------------------------------------------- gateway

add(S("gateway-timeouts", "gateway", when=(45, 60), turns=[
    T("gateway memory keeps growing and pprof shows tens of thousands of goroutines. billing was flaky yesterday, related?",
      run("curl -s localhost:6060/debug/pprof/goroutine?debug=1 | head -8", '''goroutine profile: total 48213
47890 @ 0x43e5d6 0x44f0c5 0x6b1a3e 0x6b29f9 0x7ae2c4 0x472f01
#	0x6b1a3d	net/http.(*persistConn).roundTrip+0x9bd	/usr/local/go/src/net/http/transport.go:2658
#	0x7ae2c3	github.com/hooli/gateway/internal/http.(*Proxy).forward+0x1a3	{root}/internal/http/proxy.go:88'''),
      read("internal/http/proxy.go", '''func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, up Upstream) {
	req := r.Clone(r.Context())
	req.URL.Host = up.Host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.fail(w, up, err)
		return
	}
	defer resp.Body.Close()
	copyResponse(w, resp)
}
'''),
      write("internal/http/client.go", '''package http

import (
	"net"
	"net/http"
	"time"
)

// newUpstreamClient is the only HTTP client the proxy uses: http.DefaultClient has no timeout.
func newUpstreamClient() *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			ResponseHeaderTimeout: 5 * time.Second,
			MaxIdleConnsPerHost:   100,
			IdleConnTimeout:       60 * time.Second,
		},
	}
}
'''),
      edit("internal/http/proxy.go", "\tresp, err := http.DefaultClient.Do(req)", "\tresp, err := p.client.Do(req)"),
      run("go test ./internal/http/... && docker compose logs --tail=3 gateway", '''ok  	github.com/hooli/gateway/internal/http	0.412s
gateway-1  | level=WARN msg="proxy: upstream billing" err="Get \\"http://billing.internal:8080/v1/invoices\\": net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)"'''),
      answer="Yes, related. The proxy used `http.DefaultClient`, which has **no timeout**. When billing hung, every "
             "request to it parked a goroutine forever waiting for response headers — 47,890 of the 48k goroutines "
             "are in `roundTrip`. `newUpstreamClient()` now sets a 10 s overall timeout, 5 s for headers and a 2 s "
             "dial timeout. The warning in the log above is the new behaviour: a hung upstream now fails fast with "
             "a 504 instead of accumulating goroutines.",
      title="Add timeouts to upstream client"),
], qs=[
    ("natural", "why did the proxy's goroutine count keep climbing when a backend hung?"),
    ("paraphrase", "why did the front door balloon in RAM whenever a downstream froze indefinitely?"),
    ("error", 'Get "http://billing.internal:8081/v1/invoices?page=2": net/http: request canceled (Client.Timeout exceeded while awaiting headers)'),
    ("keyword", "goroutine leak upstream"),
    ("identifier", "newUpstreamClient"),
    ("phrase", '"parked a goroutine forever"'),
    ("temporal-ish", "in September the gateway ran out of memory because of a hanging backend — what did we change?"),
], decoys=[
    D(T("random 502s from the gateway, maybe 0.1% of requests, upstream looks healthy",
        run("kubectl -n prod logs deploy/gateway --since=1h | grep 'proxy error' | head -3",
            "2026/09/02 11:02:13 http: proxy error: EOF\n2026/09/02 11:02:40 http: proxy error: EOF\n2026/09/02 11:04:01 http: proxy error: EOF"),
        grep("IdleConnTimeout", "internal/http/client.go:19:\t\t\tIdleConnTimeout:       60 * time.Second,  // in newUpstreamClient"),
        edit("internal/http/client.go", "\t\t\tIdleConnTimeout:       60 * time.Second,", "\t\t\tIdleConnTimeout:       4 * time.Second,"),
        answer="Keep-alive mismatch: the upstreams (Node) close idle connections after 5 s, our transport kept them "
               "for 60 s, so sometimes we wrote a request onto a socket the other side had just closed and got EOF. "
               "Our idle timeout is 4 s now, below theirs.",
        title="Fix sporadic 502 EOF"),
      qs=[("error", "http: proxy error: EOF"),
          ("natural", "what caused the occasional bad gateway responses even though the backends were fine?"),
          ("paraphrase", "why did the front door hiccup now and then although downstreams seemed perfectly fine?")]),
]))

add(S("gateway-gcra", "gateway", when=(185, 230), turns=[
    T("we need per-client rate limiting in the gateway, across all replicas. what algorithm should we use?",
      read("internal/http/middleware.go"),
      answer="Three realistic options:\n\n1. **Fixed window counter** — cheap, but allows 2x bursts at window edges.\n"
             "2. **Sliding window log** — exact, but stores one sorted-set entry per request, so memory grows with traffic.\n"
             "3. **GCRA** (generic cell rate algorithm, a token bucket expressed as a single timestamp) — exact smoothing, "
             "one key per client and no sorted sets, O(1) memory, and the whole check is one atomic Lua script in Redis.\n\n"
             "I'd go with GCRA in Redis: the replicas share state, there's no race between read and write because the "
             "script runs atomically, and burst size is a parameter.",
      title="Design gateway rate limiting"),
    T("sounds good, implement it",
      write("scripts/ratelimit.lua", '''-- GCRA: KEYS[1] = client key, ARGV = now_ms, emission_interval_ms, burst
local tat = tonumber(redis.call("GET", KEYS[1]) or ARGV[1])
local now = tonumber(ARGV[1])
local t = tonumber(ARGV[2])
local allow_at = math.max(tat, now) + t - tonumber(ARGV[3]) * t
if allow_at > now then
  return {0, allow_at - now}
end
local new_tat = math.max(tat, now) + t
redis.call("SET", KEYS[1], new_tat, "PX", math.ceil(new_tat - now))
return {1, 0}
'''),
      write("internal/ratelimit/gcra.go", '''package ratelimit

//go:embed ../../scripts/ratelimit.lua
var gcraLua string

func (l *Limiter) Allow(ctx context.Context, client string) (bool, time.Duration, error) {
	res, err := l.script.Run(ctx, l.rdb, []string{"rl:" + client}, time.Now().UnixMilli(), l.interval.Milliseconds(), l.burst).Int64Slice()
	if err != nil {
		return true, 0, err // fail open
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}
'''),
      run("go test ./internal/ratelimit/...", "ok  \tgithub.com/hooli/gateway/internal/ratelimit\t0.733s"),
      answer="Implemented: `scripts/ratelimit.lua` is the GCRA script (loaded with EVALSHA), `Limiter.Allow` wraps it "
             "and fails open if Redis is unreachable. Defaults: 50 req/s per API key with a burst of 100.",
      title=""),
], qs=[
    ("natural", "which throttling algorithm did we choose for the gateway and why?"),
    ("paraphrase", "which throttling recipe did the front door adopt for per-subscriber fairness?"),
    ("keyword", "rate limit algorithm redis"),
    ("identifier", "ratelimit.lua"),
    ("temporal-ish", "in the spring we designed the per-client request limiter — what approach won?"),
    ("phrase", '"one key per client and no sorted sets"'),
], decoys=[
    D(T("clients report X-RateLimit-Remaining: -3 in responses",
        grep("X-RateLimit-Remaining", "internal/http/middleware.go:64:\tw.Header().Set(\"X-RateLimit-Remaining\", strconv.Itoa(limit-used))"),
        edit("internal/http/middleware.go", '\tw.Header().Set("X-RateLimit-Remaining", strconv.Itoa(limit-used))',
             '\tw.Header().Set("X-RateLimit-Remaining", strconv.Itoa(max(0, limit-used)))'),
        answer="Rejected requests still incremented `used`, so the header went negative. Clamped at zero.",
        title="Clamp rate limit header"),
      qs=[("keyword", "X-RateLimit-Remaining negative")]),
]))

add(S("x509-expired", "gateway", when=(78, 80), turns=[
    T("OUTAGE: all https to api.hooli.dev failing since 03:00 UTC\n\n"
      "tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time "
      "2026-08-14T03:12:44Z is after 2026-08-14T00:00:00Z",
      run("kubectl -n gateway get certificate api-hooli-dev -o wide",
          "NAME            READY   SECRET              ISSUER             STATUS                                          AGE\napi-hooli-dev   False   api-hooli-dev-tls   letsencrypt-prod   Issuing certificate as Secret does not exist   212d"),
      run("kubectl -n cert-manager logs deploy/cert-manager --since=720h | grep -i 'api-hooli-dev' | tail -3", '''E0716 02:00:11 "error presenting DNS01 challenge" err="route53: AccessDenied: User: arn:aws:iam::4411:user/cert-manager is not authorized to perform: route53:ChangeResourceRecordSets"
E0801 02:00:09 "error presenting DNS01 challenge" err="route53: AccessDenied ..."
E0813 02:00:12 "error presenting DNS01 challenge" err="route53: AccessDenied ..."'''),
      run("kubectl -n cert-manager create secret generic route53-creds --from-literal=secret-access-key=$NEW_KEY --dry-run=client -o yaml | kubectl apply -f - && kubectl -n gateway delete certificaterequest -l cert=api-hooli-dev",
          "secret/route53-creds configured\ncertificaterequest.cert-manager.io \"api-hooli-dev-9x2k1\" deleted"),
      write("deploy/alerts/cert-expiry.yaml", '''groups:
  - name: certificates
    rules:
      - alert: CertificateExpiresSoon
        expr: certmanager_certificate_expiration_timestamp_seconds - time() < 14 * 86400
        for: 1h
        labels: {severity: page}
'''),
      answer="Renewal had been failing silently for a month: the IAM key cert-manager uses for Route53 DNS01 challenges "
             "was rotated in July and the secret never updated, so every renewal attempt since 16 July got AccessDenied. "
             "I updated the secret, the certificate re-issued at 03:41 and traffic recovered. To catch this next time "
             "there's a `CertificateExpiresSoon` alert "
             "(`certmanager_certificate_expiration_timestamp_seconds - time() < 14 * 86400`) that pages when any "
             "certificate is within 14 days of expiry.",
      title="Expired TLS certificate outage"),
], qs=[
    ("error", "x509: certificate has expired or is not yet valid: current time 2026-08-14T03:40:02Z is after 2026-08-14T00:00:00Z"),
    ("natural", "what caused the TLS outage and how will we be warned next time?"),
    ("paraphrase", "why did our encryption credential lapse without anyone noticing?"),
    ("keyword", "certificate expired renewal"),
    ("temporal-ish", "in mid-August the API certificate lapsed — why didn't it renew automatically?"),
    ("identifier", "certmanager_certificate_expiration_timestamp_seconds"),
], decoys=[
    D(T("new distroless image can't call the internal auth service: x509: certificate signed by unknown authority",
        run("docker run --rm --entrypoint ls gateway:distroless /etc/ssl/certs", "ca-certificates.crt"),
        edit("Dockerfile", "COPY --from=build /out/gateway /gateway", "COPY --from=build /out/gateway /gateway\nCOPY deploy/ca/acme-internal-ca.pem /etc/ssl/certs/acme-internal-ca.pem"),
        answer="The distroless base only trusts public CAs; the internal services use our own `acme-internal-ca`. "
               "The image now includes it and `SSL_CERT_DIR` points at both.",
        title="Trust internal CA in distroless image"),
      qs=[("error", 'x509: certificate signed by unknown authority (possibly because of "crypto/rsa: verification error" '
                    'while trying to verify candidate authority certificate "acme-internal-ca")')]),
]))

# --------------------------------------------------------------------------- scheduler

add(S("scheduler-dst", "scheduler", when=(3, 6), turns=[
    T("several jobs ran twice on Sunday night — the 02:30 invoice export ran at 02:30 and again an hour later. logs attached\n\n"
      "2026-10-25T00:30:00Z job=invoice-export run=8812 started\n2026-10-25T01:30:00Z job=invoice-export run=8813 started",
      read("internal/queue/cron.go", '''loc, _ := time.LoadLocation("Europe/Berlin")
c := cron.New(cron.WithLocation(loc))
for _, j := range jobs {
	c.AddFunc(j.Spec, s.wrap(j))
}
'''),
      run("go test ./internal/queue/ -run TestDSTFallBack -v", '''=== RUN   TestDSTFallBack
    cron_test.go:44: runs between 2026-10-25 00:00 and 04:00 Europe/Berlin: [02:30 CEST 02:30 CET]
--- FAIL: TestDSTFallBack (0.00s)
FAIL''', code=1),
      edit("internal/queue/cron.go", 'loc, _ := time.LoadLocation("Europe/Berlin")\nc := cron.New(cron.WithLocation(loc))',
           "c := cron.New(cron.WithLocation(time.UTC))"),
      edit("internal/queue/cron.go", "\tc.AddFunc(j.Spec, s.wrap(j))", "\tc.AddFunc(utcSpec(j), s.wrap(j))"),
      run("go test ./internal/queue/ -run TestDST -v", "=== RUN   TestDSTFallBack\n--- PASS: TestDSTFallBack (0.00s)\n=== RUN   TestDSTSpringForward\n--- PASS: TestDSTSpringForward (0.00s)\nPASS"),
      answer="The cron runner evaluated schedules in Europe/Berlin local time. On the night clocks go back, the "
             "02:00–03:00 hour exists twice, so the 02:30 slot happens twice and every job scheduled in that hour "
             "fired in both. (In spring the opposite happens: the slot doesn't exist and the job is skipped.) All "
             "schedules are evaluated in UTC now; jobs that really need local wall-clock time can say so with an "
             "explicit `CRON_TZ=` prefix in their spec, and `TestDSTFallBack`/`TestDSTSpringForward` cover both transitions.",
      title="Fix jobs running twice at DST change"),
], qs=[
    ("natural", "why did the nightly jobs fire twice when the clocks changed?"),
    ("paraphrase", "why did recurring duties go off doubly when Germany fell back in autumn?"),
    ("keyword", "cron daylight saving"),
    ("phrase", '"the 02:30 slot happens twice"'),
    ("temporal-ish", "a few days ago some jobs ran two times around the time change, what caused it?"),
    ("identifier", "CRON_TZ"),
], decoys=[
    D(T("after scaling the scheduler to 2 replicas every job runs twice",
        read("cmd/server/main.go"),
        edit("internal/queue/leader.go", "func (s *Scheduler) isLeader(ctx context.Context) bool {\n\treturn true",
             "func (s *Scheduler) isLeader(ctx context.Context) bool {\n\tvar ok bool\n\t_ = s.db.QueryRowContext(ctx, \"SELECT pg_try_advisory_lock(4242)\").Scan(&ok)\n\treturn ok"),
        answer="Both replicas ran the cron loop. Only the replica holding the Postgres advisory lock "
               "(`pg_try_advisory_lock(4242)`) runs jobs now; "
               "if it dies the session ends, the lock is released and the other replica takes over within a tick.",
        title="Leader election for scheduler"),
      qs=[("natural", "how do we make sure only one scheduler instance runs the jobs?"),
          ("paraphrase", "after doubling up, how do we guarantee just a single twin kicks off recurring duties?"),
          ("identifier", "pg_try_advisory_lock(4242)")]),
]))

add(S("scheduler-shutdown", "scheduler", when=(120, 140), turns=[
    T("every deploy kills whatever jobs are running and they restart from scratch. can we shut down gracefully?",
      read("cmd/server/main.go"),
      write("internal/queue/shutdown.go", '''package queue

// Shutdown stops picking up new jobs, then waits for the running ones until ctx expires.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.cron.Stop()
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shutdown: %d jobs still running: %w", s.inflight.Load(), ctx.Err())
	}
}
'''),
      edit("cmd/server/main.go", "\t<-sig\n\tos.Exit(0)",
           "\t<-sig\n\tctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)\n\tdefer cancel()\n\tif err := sched.Shutdown(ctx); err != nil {\n\t\tlog.Error(\"unclean shutdown\", \"err\", err)\n\t}"),
      edit("deploy/scheduler.yaml", "      containers:", "      terminationGracePeriodSeconds: 60\n      containers:"),
      run("go test ./internal/queue/ -run TestShutdown", "ok  \tgithub.com/umbrella/scheduler/internal/queue\t2.104s"),
      answer="On SIGTERM the process used to exit immediately. Now `Scheduler.Shutdown` is called with a 50 s budget: "
             "the scheduler will stop picking up new jobs, then wait for the running ones, and only then exit. Kubernetes gives "
             "the pod 60 s (`terminationGracePeriodSeconds`) before SIGKILL, so there's 10 s of slack.",
      title="Graceful scheduler shutdown"),
], qs=[
    ("natural", "how do in-flight jobs survive a rolling deploy now?"),
    ("paraphrase", "how do unfinished duties survive a rollout now rather than getting chopped midway?"),
    ("identifier", "Scheduler.Shutdown"),
    ("keyword", "sigterm graceful shutdown"),
    ("phrase", '"stop picking up new jobs"'),
    ("temporal-ish", "back in June we stopped deploys from killing running jobs, what was the grace period?"),
], decoys=[
    D(T("the report job gets 'context deadline exceeded' after exactly 30s",
        grep("WithTimeout", "internal/queue/runner.go:41:\tctx, cancel := context.WithTimeout(ctx, 30*time.Second)"),
        edit("internal/queue/runner.go", "\tctx, cancel := context.WithTimeout(ctx, 30*time.Second)", "\tctx, cancel := context.WithTimeout(ctx, j.Timeout())"),
        answer="Every job had a hard-coded 30 s timeout. Jobs can set their own now (`timeout:` in the job spec, default 30 s); the monthly report uses 15 minutes.",
        title="Per-job timeouts"),
      qs=[("keyword", "job timeout context deadline")]),
]))

add(S("pgbouncer", "scheduler", when=(5, 9), turns=[
    T("we scaled job runners from 3 to 8 replicas and now half of them crash on boot:\n\n"
      "failed to connect to `host=db.internal user=scheduler database=scheduler`: server error (FATAL: sorry, too many clients already (SQLSTATE 53300))",
      run("psql \"$ADMIN_URL\" -c 'show max_connections' -c 'select count(*) from pg_stat_activity'", " max_connections\n-----------------\n 200\n\n count\n-------\n   197"),
      grep("SetMaxOpenConns", "internal/store/db.go:22:\tdb.SetMaxOpenConns(50)"),
      write("deploy/pgbouncer.yaml", '''[databases]
scheduler = host=db.internal port=5432 dbname=scheduler

[pgbouncer]
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
server_reset_query =
'''),
      edit("internal/store/db.go", "\tdb.SetMaxOpenConns(50)", "\tdb.SetMaxOpenConns(10)"),
      answer="Each replica opened up to 50 connections, so 8 replicas could want 400 against `max_connections = 200`. "
             "Rather than raising the Postgres limit (each connection costs ~10 MB) I put PgBouncer in front in "
             "**transaction** pooling mode, with 40 server connections shared by everyone, and lowered the per-replica "
             "pool to 10. We don't use session-level features (prepared statements are disabled in pgx via "
             "`default_query_exec_mode=simple_protocol`), so transaction mode is safe.",
      title="Put PgBouncer in front of Postgres"),
], qs=[
    ("error", "FATAL: sorry, too many clients already (SQLSTATE 53300)"),
    ("natural", "why couldn't the job runners get database connections after we scaled out?"),
    ("paraphrase", "after growing the fleet, the DB turned away fresh arrivals — which middleman sits between now?"),
    ("keyword", "postgres connection limit pooler"),
    ("temporal-ish", "last week we put a pooler in front of postgres, what mode did we pick?"),
    ("identifier", "SetMaxOpenConns"),
    ("phrase", '"each connection costs ~10 MB"'),
], decoys=[
    D(T("jobs fail overnight with 'connection reset by peer' on the first query",
        run("kubectl -n prod logs deploy/scheduler --since=12h | grep -m3 'reset by peer'",
            'level=ERROR msg="job failed" job=cleanup err="read tcp 10.0.4.12:51234->10.0.7.9:5432: read: connection reset by peer"'),
        grep("SetMax|SetConn", "internal/store/db.go:22:\tdb.SetMaxOpenConns(10)\ninternal/store/db.go:23:\tdb.SetMaxIdleConns(10)"),
        edit("internal/store/db.go", "\tdb.SetMaxOpenConns(10)", "\tdb.SetMaxOpenConns(10)\n\tdb.SetConnMaxIdleTime(4 * time.Minute)"),
        answer="The NLB in front of the database drops idle TCP flows after 350 s; pooled connections that sat idle "
               "overnight were dead. Connections are now recycled after 4 minutes idle.",
        title="Recycle idle DB connections"),
      qs=[("error", "read tcp 10.0.4.19:50872->10.0.7.9:5432: read: connection reset by peer")]),
]))
