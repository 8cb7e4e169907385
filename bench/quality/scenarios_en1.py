"""English scenarios, part 1: Python web services (auth-server, orders-service, billing-api)."""

from qdsl import D, S, T, edit, grep, read, run, write

SCENARIOS = []
add = SCENARIOS.append

# --------------------------------------------------------------------------- auth-server

add(S("session-redis", "auth-server", when=(22, 45), turns=[
    T("people keep getting bounced back to the login page on staging, seemingly at random, a few times an hour. "
      "can you figure out what's going on with the session layer?",
      read("app/core/sessions.py", '''"""Server-side session storage."""
import json

from pymemcache.client.hash import HashClient

from app.core.config import settings

SESSION_BACKEND = "memcached"
SESSION_TTL = 60 * 60 * 12

_client = HashClient(settings.MEMCACHED_SERVERS, connect_timeout=0.5)


def load_session(session_id: str) -> dict | None:
    raw = _client.get(f"sess:{session_id}")
    return json.loads(raw) if raw else None


def save_session(session_id: str, data: dict) -> None:
    _client.set(f"sess:{session_id}", json.dumps(data), expire=SESSION_TTL)
''', say="Let me see how sessions are stored first."),
      run("kubectl -n staging exec deploy/memcached -- sh -c 'echo stats | nc localhost 11211' | grep -E 'evictions|limit_maxbytes|curr_items'",
          "STAT curr_items 9911\nSTAT limit_maxbytes 67108864\nSTAT evictions 48213",
          say="The code path looks fine, so let me check memcached's own counters."),
      run("grep -n 'args' deploy/staging/memcached.yaml", '14:        args: ["-m", "64", "-I", "2m"]'),
      edit("app/core/sessions.py",
           'from pymemcache.client.hash import HashClient\n\nfrom app.core.config import settings\n\nSESSION_BACKEND = "memcached"',
           'import redis\n\nfrom app.core.config import settings\n\nSESSION_BACKEND = "redis"'),
      edit("app/core/sessions.py",
           "_client = HashClient(settings.MEMCACHED_SERVERS, connect_timeout=0.5)",
           "_client = redis.Redis.from_url(settings.SESSION_REDIS_URL, socket_timeout=0.5)"),
      write("deploy/staging/redis-sessions.yaml", '''apiVersion: v1
kind: ConfigMap
metadata:
  name: redis-sessions-config
data:
  redis.conf: |
    maxmemory 512mb
    maxmemory-policy noeviction
    appendonly yes
'''),
      run("pytest -q tests/test_sessions.py", "........                                                                 [100%]\n8 passed in 0.41s"),
      answer="Found it, and it isn't our code: memcached was **evicting live sessions**. Staging runs it with `-m 64` "
             "(64 MB) and the stats show 48,213 evictions. Once the slabs are full, LRU throws out entries that are still "
             "valid, so the next request finds no session and the user lands on /login.\n\nI moved session storage to "
             "Redis (`SESSION_BACKEND = \"redis\"`, new `SESSION_REDIS_URL` setting) with `maxmemory-policy noeviction`, so "
             "an entry only disappears when its 12h TTL runs out. Memcached stays for the page-fragment cache, where "
             "losing an entry just costs a re-render.\n\nChanges:\n- `app/core/sessions.py`: redis client instead of the "
             "pymemcache HashClient\n- `deploy/staging/redis-sessions.yaml`: dedicated Redis with noeviction\n\nThe 8 "
             "session tests pass.",
      title="Fix random staging logouts"),
], also=[[
    T("ok let's roll the redis session store out to prod. do we need to migrate the existing sessions?",
      read("deploy/prod/values.yaml"),
      run("kubectl -n prod get deploy auth-server -o jsonpath='{.spec.template.spec.containers[0].env}' | jq -r '.[].name' | grep -i session",
          "SESSION_BACKEND\nSESSION_TTL"),
      edit("deploy/prod/values.yaml", "  SESSION_BACKEND: memcached", "  SESSION_BACKEND: redis\n  SESSION_REDIS_URL: redis://redis-sessions.prod.svc:6379/0"),
      answer="Rolled out. No migration: copying memcached contents isn't worth it since the old store was losing "
             "entries anyway — that was the whole reason for leaving it (sessions got evicted under memory pressure). "
             "Everyone signs in once after the deploy and from then on sessions live in Redis until their TTL.",
      title="Roll out Redis session store to prod"),
]], qs=[
    ("natural", "why did we move off memcached?", "all"),
    ("paraphrase", "folks kept getting booted mid-visit because a RAM-only daemon overflowed; what did we swap to?", "all"),
    ("keyword", "session eviction memcached"),
    ("temporal-ish", "last month we changed where login state is kept — what was the reason?"),
    ("phrase", '"maxmemory-policy noeviction"'),
    ("identifier", "SESSION_REDIS_URL"),
], decoys=[
    D(T("the login rate limiter (memcached) seems to count wrong after the deploy — people get 429 after two attempts",
        read("app/core/ratelimit.py"),
        run("kubectl -n staging exec deploy/memcached -- sh -c 'echo stats | nc localhost 11211' | grep -E 'get_hits|get_misses'",
            "STAT get_hits 1893020\nSTAT get_misses 40211"),
        edit("app/core/ratelimit.py", 'key = f"rl:login:{ip}"', 'key = f"rl:login:{ip}:{username.lower()}"'),
        answer="The limiter itself was fine; the key only used the client IP, so everyone behind the office NAT shared "
               "one bucket of 5 attempts. It is keyed on (ip, username) now. The limiter stays on memcached — an "
               "evicted counter just makes it a bit more lenient, which is acceptable.",
        title="Fix login rate limit key"),
      qs=[("natural", "why did the whole office get throttled on the sign-in form?")]),
    D(T("tests fail locally with a redis error since I pulled, can you check",
        run("pytest -x -q tests/test_sessions.py", '''E   redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.

tests/conftest.py:23: in redis_client
    client.ping()
=========================== short test summary info ============================
ERROR tests/test_sessions.py::test_save_and_load - redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.
1 error in 0.52s''', code=1),
        run("docker compose ps", "NAME                    IMAGE            STATUS         PORTS\nauth-server-redis-1     redis:7-alpine   Up 2 minutes   0.0.0.0:6380->6379/tcp"),
        edit("tests/conftest.py", 'REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://localhost:6379/15")',
             'REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://localhost:6380/15")'),
        answer="Nothing is wrong with the code: docker-compose maps the test Redis to host port 6380 (6379 is taken by "
               "your Homebrew redis), but the conftest default still pointed at 6379. Changed the default to 6380; "
               "`TEST_REDIS_URL` still overrides it in CI.",
        title="Fix local redis test port"),
      qs=[("error", "redis.exceptions.ConnectionError: Error 111 connecting to 127.0.0.1:6379. Connection refused.")]),
]))

add(S("jwt-leeway", "auth-server", when=(60, 80), turns=[
    T("some API calls fail with 401 right after login, maybe 1 in 50. here's the log:\n\n```\n"
      "jwt.exceptions.ImmatureSignatureError: The token is not yet valid (iat)\n```",
      run("kubectl -n prod logs deploy/api --since=2h | grep -B8 ImmatureSignature | head -40", '''Traceback (most recent call last):
  File "{root}/app/api/deps.py", line 41, in current_user
    claims = decode_access_token(token)
  File "{root}/app/core/tokens.py", line 88, in decode_access_token
    return jwt.decode(token, settings.JWT_PUBLIC_KEY, algorithms=["RS256"], audience="api")
  File "{root}/.venv/lib/python3.12/site-packages/jwt/api_jwt.py", line 331, in _validate_iat
    raise ImmatureSignatureError("The token is not yet valid (iat)")
jwt.exceptions.ImmatureSignatureError: The token is not yet valid (iat)'''),
      run("for n in $(kubectl get nodes -o name); do kubectl debug $n -q --image=busybox -- date +%s.%N; done",
          "1789312001.114\n1789312001.209\n1789311994.873\n1789312001.240",
          say="The iat check fails when the verifier's clock is behind the issuer's. Comparing node clocks."),
      run("kubectl get node ip-10-0-3-17.ec2.internal -o jsonpath='{.metadata.labels.eks\\.amazonaws\\.com/nodegroup}'", "batch-spot-v2"),
      edit("app/core/tokens.py",
           '    return jwt.decode(token, settings.JWT_PUBLIC_KEY, algorithms=["RS256"], audience="api")',
           '    return jwt.decode(\n        token, settings.JWT_PUBLIC_KEY, algorithms=["RS256"], audience="api",\n        leeway=timedelta(seconds=30),\n    )'),
      run("pytest -q tests/test_tokens.py", "...........                                                              [100%]\n11 passed in 0.38s"),
      answer="The failing requests all land on pods scheduled on `ip-10-0-3-17`, whose clock is ~7 s behind the others "
             "(it's in the new `batch-spot-v2` node group, where chrony was not running). A token minted on a node "
             "that's ahead carries an `iat` in that node's future, and PyJWT rejects it until the slow clock catches "
             "up.\n\nI added `leeway=timedelta(seconds=30)` to the decode call in `decode_access_token`, which is the "
             "usual tolerance, and opened INFRA-2231 to install chrony in the node group's launch template. Tests pass.",
      title="Fix intermittent 401 after login"),
], qs=[
    ("natural", "why were brand-new access tokens sometimes refused as not valid yet?"),
    ("paraphrase", "freshly issued credentials bounced because a single box's timekeeping drifted; how much grace did we allow?"),
    ("keyword", "jwt clock skew"),
    ("error", "jwt.exceptions.ImmatureSignatureError: The token is not yet valid (iat)"),
    ("error", 'File "/home/dev/work/acme/auth-server/app/core/tokens.py", line 91, in decode_access_token'),
    ("identifier", "decode_access_token"),
    ("phrase", '"chrony was not running"'),
    ("temporal-ish", "in August some logins failed with 401 because of server time drift — what did we change?"),
], decoys=[
    D(T("users are logged out after ~15 minutes even though refresh tokens should last two weeks",
        run("pytest -q tests/test_tokens.py -k refresh", '''F
=================================== FAILURES ===================================
___________________________ test_refresh_after_1h ____________________________
  File "{root}/app/core/tokens.py", line 102, in decode_refresh_token
    return jwt.decode(token, settings.JWT_PUBLIC_KEY, algorithms=["RS256"], audience="refresh")
jwt.exceptions.ExpiredSignatureError: Signature has expired
1 failed in 0.22s''', code=1),
        grep("def decode_", "app/core/tokens.py:79:def decode_access_token(token: str) -> dict:\napp/core/tokens.py:96:def decode_refresh_token(token: str) -> dict:"),
        read("app/core/config.py"),
        edit("app/core/tokens.py", '    exp = now + timedelta(minutes=settings.REFRESH_TOKEN_TTL)',
             '    exp = now + timedelta(days=settings.REFRESH_TOKEN_TTL)'),
        answer="`REFRESH_TOKEN_TTL = 14` is meant in days but the token factory used `timedelta(minutes=...)`, so "
               "refresh tokens expired after 14 minutes. Fixed the unit and added a test that refreshes after an hour.",
        title="Fix refresh token lifetime"),
      qs=[("error", 'File "/home/dev/work/acme/auth-server/app/core/tokens.py", line 105, in decode_refresh_token\n'
                    "jwt.exceptions.ExpiredSignatureError: Signature has expired"),
          ("natural", "why did people get signed out after a quarter of an hour?"),
          ("paraphrase", "why did the fortnight-long renewal credential die almost instantly?")]),
]))

add(S("argon2-rehash", "auth-server", when=(230, 290), turns=[
    T("security review says we should move password hashing off bcrypt. what's the least disruptive way?",
      read("app/core/passwords.py", '''from passlib.hash import bcrypt


def hash_password(raw: str) -> str:
    return bcrypt.using(rounds=12).hash(raw)


def verify_password(raw: str, hashed: str) -> bool:
    return bcrypt.verify(raw, hashed)
'''),
      grep("verify_password", '''app/api/auth.py:57:    if not verify_password(form.password, user.password_hash):
app/services/users.py:112:        if not verify_password(old, user.password_hash):'''),
      write("app/core/passwords.py", '''from argon2 import PasswordHasher
from argon2.exceptions import VerifyMismatchError
from passlib.hash import bcrypt

_ph = PasswordHasher(time_cost=3, memory_cost=64 * 1024, parallelism=2)


def hash_password(raw: str) -> str:
    return _ph.hash(raw)


def verify_and_upgrade(raw: str, hashed: str) -> tuple[bool, str | None]:
    """Check a password; return (ok, new_hash) where new_hash is set when the stored hash is outdated."""
    if hashed.startswith("$2b$"):
        if not bcrypt.verify(raw, hashed):
            return False, None
        return True, _ph.hash(raw)
    try:
        _ph.verify(hashed, raw)
    except VerifyMismatchError:
        return False, None
    return True, _ph.hash(raw) if _ph.check_needs_rehash(hashed) else None
'''),
      edit("app/api/auth.py", "    if not verify_password(form.password, user.password_hash):",
           "    ok, new_hash = verify_and_upgrade(form.password, user.password_hash)\n    if new_hash:\n        await users.set_password_hash(user.id, new_hash)\n    if not ok:"),
      run("pytest -q tests/test_passwords.py tests/test_auth.py", "..................                                                        [100%]\n18 passed in 1.02s"),
      answer="Went with **argon2id** (`argon2-cffi`, time_cost=3, 64 MiB, parallelism 2). No bulk migration is "
             "possible since we don't have the plaintexts, so old bcrypt hashes are upgraded transparently the next "
             "time the user signs in: `verify_and_upgrade` checks the bcrypt hash, and on success returns a fresh "
             "argon2 hash that the login handler stores. Users who never come back keep their bcrypt hash, which is "
             "still safe at 12 rounds. New passwords are argon2 from now on.",
      title="Move password hashing to argon2id"),
], qs=[
    ("natural", "how do the old bcrypt password hashes get converted to the new scheme?"),
    ("paraphrase", "how do older credential fingerprints get swapped for the tougher algorithm as folks reappear?"),
    ("identifier", "verify_and_upgrade"),
    ("phrase", '"upgraded transparently the next time the user signs in"'),
    ("temporal-ish", "early this year we replaced the password hash algorithm, which one did we pick?"),
    ("keyword", "argon2 password hashing"),
], decoys=[
    D(T("signup explodes for one user with a very long passphrase: ValueError password cannot be longer than 72 bytes",
        grep("bcrypt", "app/core/passwords.py:3:from passlib.hash import bcrypt\napp/core/passwords.py:18:    if hashed.startswith(\"$2b$\"):  # legacy bcrypt, see verify_and_upgrade\napp/api/signup.py:14:from app.core.passwords import hash_password"),
        edit("app/api/signup.py", "    password: str = Field(min_length=10)", "    password: str = Field(min_length=10, max_length=64)"),
        answer="bcrypt only looks at the first 72 bytes and the newer bcrypt package raises instead of truncating. "
               "Capped passwords at 64 characters in the signup schema with a clear validation message.",
        title="Cap signup password length"),
      qs=[("keyword", "bcrypt 72 bytes")]),
]))

add(S("cors-admin", "auth-server", turns=[
    T("the new admin app on admin.acme.dev can't log in, console says:\n\n"
      "Access to fetch at 'https://auth.acme.dev/oauth/token' from origin 'https://admin.acme.dev' has been blocked by "
      "CORS policy: Response to preflight request doesn't pass access control check: No 'Access-Control-Allow-Origin' "
      "header is present on the requested resource.",
      run("curl -si -X OPTIONS https://auth.acme.dev/oauth/token -H 'Origin: https://admin.acme.dev' -H 'Access-Control-Request-Method: POST' | head -12",
          "HTTP/2 400\ncontent-type: text/plain; charset=utf-8\ncontent-length: 22\n\nDisallowed CORS origin"),
      read("app/main.py"),
      edit("app/core/config.py", '    CORS_ALLOWED_ORIGINS: list[str] = ["https://app.acme.dev"]',
           '    CORS_ALLOWED_ORIGINS: list[str] = ["https://app.acme.dev", "https://admin.acme.dev"]'),
      run("curl -si -X OPTIONS http://localhost:8000/oauth/token -H 'Origin: https://admin.acme.dev' -H 'Access-Control-Request-Method: POST' | grep -i access-control",
          "access-control-allow-origin: https://admin.acme.dev\naccess-control-allow-credentials: true\naccess-control-allow-methods: GET, POST, OPTIONS"),
      answer="The preflight was rejected because `admin.acme.dev` wasn't in `CORS_ALLOWED_ORIGINS`. I added it. Note "
             "that we can't use `*` here: the token endpoint sets cookies, and browsers refuse a wildcard origin "
             "together with `allow_credentials`.",
      title="Allow admin origin in CORS"),
], qs=[
    ("error", "Access to fetch at 'https://auth.acme.dev/oauth/userinfo' from origin 'https://admin.acme.dev' has been "
              "blocked by CORS policy"),
    ("natural", "the new back-office site couldn't talk to the login service from the browser, what was missing?"),
    ("paraphrase", "why did Chrome stonewall signin from the fresh back-office subdomain?"),
    ("keyword", "cors preflight admin"),
    ("phrase", '"refuse a wildcard origin"'),
], decoys=[
    D(T("in dev the shop can't reach the payments API from the browser, CORS again",
        read("vite.config.ts"),
        edit("vite.config.ts", "  server: { port: 5173 },",
             "  server: {\n    port: 5173,\n    proxy: { \"/payments\": { target: \"http://localhost:8081\", changeOrigin: true } },\n  },"),
        answer="For local dev I added a Vite proxy for `/payments`, so the browser talks to the same origin and CORS "
               "never comes into play. Production already routes both through the gateway.",
        title="Proxy payments API in dev"),
      project="shop-web"),
]))

# --------------------------------------------------------------------------- orders-service

add(S("orders-n-plus-one", "orders-service", when=(10, 18), turns=[
    T("GET /customers/{id}/orders takes almost 2 seconds for big accounts. find out why",
      run("SQLALCHEMY_ECHO=1 pytest -q tests/perf/test_order_history.py -k big_account 2>&1 | grep -c 'SELECT order_items'", "412"),
      run("SQLALCHEMY_ECHO=1 pytest -q tests/perf/test_order_history.py -k big_account 2>&1 | grep 'SELECT order_items' | head -3",
          "SELECT order_items.id, order_items.order_id, order_items.sku, order_items.qty FROM order_items WHERE %(param_1)s = order_items.order_id\n"
          "SELECT order_items.id, order_items.order_id, order_items.sku, order_items.qty FROM order_items WHERE %(param_1)s = order_items.order_id\n"
          "SELECT order_items.id, order_items.order_id, order_items.sku, order_items.qty FROM order_items WHERE %(param_1)s = order_items.order_id",
          say="Counting the statements one request issues."),
      read("app/services/orders.py", '''async def list_orders_for_customer(db: AsyncSession, customer_id: int, limit: int = 500) -> list[Order]:
    rows = await db.execute(
        select(Order).where(Order.customer_id == customer_id).order_by(Order.created_at.desc()).limit(limit)
    )
    orders = rows.scalars().all()
    for order in orders:
        order.total = sum(i.qty * i.unit_price for i in order.items)
    return orders
'''),
      edit("app/services/orders.py",
           "        select(Order).where(Order.customer_id == customer_id).order_by(Order.created_at.desc()).limit(limit)",
           "        select(Order)\n        .options(selectinload(Order.items))\n        .where(Order.customer_id == customer_id)\n        .order_by(Order.created_at.desc())\n        .limit(limit)"),
      run("pytest -q tests/perf/test_order_history.py", "...                                                                      [100%]\np95 order history (412 orders): 141 ms\n3 passed in 4.88s"),
      answer="It was lazy loading: `list_orders_for_customer` loaded the orders and then touched `order.items` in a "
             "loop, so SQLAlchemy issued one query per order to fetch its line items — the classic N+1. For the big "
             "test account that's 412 extra round trips. With `selectinload(Order.items)` it is 2 queries total and "
             "p95 went from ~1.8 s to 141 ms.",
      title="Speed up customer order history"),
], qs=[
    ("natural", "why did the customer order history page take so long to load?"),
    ("paraphrase", "why did heavy buyers' purchase timeline crawl, grabbing every basket's contents separately?"),
    ("keyword", "orders endpoint slow queries"),
    ("identifier", "list_orders_for_customer"),
    ("temporal-ish", "a couple of weeks ago we sped up the orders listing, which loader option did we use?"),
    ("phrase", '"the classic N+1"'),
], decoys=[
    D(T("the nightly orders CSV export times out after 60s now that we have 2M orders",
        read("app/api/exports.py"),
        edit("app/api/exports.py", "    orders = (await db.execute(select(Order))).scalars().all()",
             "    result = await db.stream(select(Order).execution_options(yield_per=1000))"),
        answer="The export loaded every order into memory before writing the first byte (it reused "
               "`list_orders_for_customer`-style eager loading for all customers). It now streams with "
               "`yield_per=1000` into a `StreamingResponse`, so the first rows go out immediately and memory stays flat.",
        title="Stream orders CSV export"),
      qs=[("keyword", "orders csv export timeout")]),
]))

add(S("checkout-idempotency", "orders-service", when=(95, 120), turns=[
    T("support has 14 tickets this week of customers charged twice. the mobile app retries POST /checkout when it times out. "
      "we need to make checkout safe to retry",
      read("app/api/checkout.py"),
      write("app/db/migrations/versions/20260714_idempotency_keys.py", '''"""idempotency keys"""
from alembic import op
import sqlalchemy as sa

revision = "a41c7d2e9f10"
down_revision = "7b2f0e11c3aa"


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("customer_id", sa.BigInteger, nullable=False),
        sa.Column("response", sa.JSON, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("key", "customer_id"),
    )
'''),
      edit("app/api/checkout.py", "async def checkout(body: CheckoutIn, user: User = Depends(current_user)):",
           'async def checkout(body: CheckoutIn, user: User = Depends(current_user),\n                   idempotency_key: str = Header(alias="Idempotency-Key")):'),
      run("pytest -q tests/api/test_checkout.py", '''..F
=================================== FAILURES ===================================
________________________ test_checkout_retry_same_key _________________________
sqlalchemy.exc.IntegrityError: (psycopg.errors.UniqueViolation) duplicate key value violates unique constraint "idempotency_keys_pkey"
DETAIL:  Key (key, customer_id)=(c0a8-41f2, 4411) already exists.
1 failed, 2 passed in 1.91s''', code=1),
      edit("app/api/checkout.py", "    await idem.reserve(idempotency_key, user.id)",
           "    try:\n        await idem.reserve(idempotency_key, user.id)\n    except IntegrityError:\n        return await idem.stored_response(idempotency_key, user.id)"),
      run("pytest -q tests/api/test_checkout.py", "...                                                                      [100%]\n3 passed in 1.77s"),
      answer="Checkout is now idempotent. The app must send an `Idempotency-Key` header (a UUID per checkout attempt, "
             "reused on retries). The first request reserves the key in `idempotency_keys` (primary key on key + "
             "customer) and stores the response once the charge succeeds; a retry hits the unique constraint and we "
             "replay the stored response instead of calling the payment provider a second time. Keys are purged after "
             "24h. I've asked the mobile team to ship the header in 4.12.",
      title="Make checkout idempotent"),
], qs=[
    ("natural", "how did we stop people getting billed twice when the phone app resends the purchase request?"),
    ("paraphrase", "phones resending the purchase made buyers pay double — what guards against that now?"),
    ("error", 'psycopg.errors.UniqueViolation: duplicate key value violates unique constraint "idempotency_keys_pkey"\n'
              "DETAIL:  Key (key, customer_id)=(9f1e-77ab, 5120) already exists."),
    ("phrase", '"replay the stored response"'),
    ("identifier", "Idempotency-Key"),
    ("keyword", "double charge retry"),
    ("temporal-ish", "in July we fixed duplicate payments at checkout — how does the retry protection work?"),
], decoys=[
    D(T("`make seed` fails the second time I run it",
        run("make seed", '''python -m app.scripts.seed
sqlalchemy.exc.IntegrityError: (psycopg.errors.UniqueViolation) duplicate key value violates unique constraint "coupons_code_key"
DETAIL:  Key (code)=(WELCOME10) already exists.
make: *** [Makefile:31: seed] Error 1''', code=2),
        edit("app/scripts/seed.py", "    db.add(Coupon(code=\"WELCOME10\", percent=10))",
             "    await db.execute(insert(Coupon).values(code=\"WELCOME10\", percent=10).on_conflict_do_nothing())"),
        answer="The seed script inserted fixtures unconditionally. It uses `ON CONFLICT DO NOTHING` now, so running it "
               "twice is harmless.",
        title="Make seed script re-runnable"),
      qs=[("error", 'duplicate key value violates unique constraint "coupons_code_key" DETAIL: Key (code)=(SPRING25) already exists.')]),
    D(T("refund webhook handler sometimes refunds twice?",
        read("app/api/refunds.py"),
        answer="I don't think it double-refunds: the provider sends `charge.refunded` and `refund.updated` for the same "
               "refund, and we log both, which looked like two refunds. The ledger shows one. I changed the log line to "
               "include the event type so it's not confusing.",
        title="Investigate double refund logs")),
]))

add(S("celery-memory", "orders-service", when=(115, 150), turns=[
    T("the celery workers in prod grow to ~3GB RSS over a day and then get OOM killed. any idea?",
      run("kubectl -n prod top pod -l app=orders-worker", "NAME                            CPU(cores)   MEMORY(bytes)\norders-worker-6c8d9b7f4-2kq9x   212m         2874Mi\norders-worker-6c8d9b7f4-7hwlm   198m         3011Mi"),
      read("app/workers/celery_app.py"),
      run("python -m memray run -o /tmp/memray-worker.bin -m celery -A app.workers.celery_app worker --pool=solo -n probe@%h & sleep 600; python -m memray stats /tmp/memray-worker.bin | head -12",
          "Total allocations: 18391023\nTotal memory allocated: 2.1GB\n\nTop 3 largest allocating locations (by size):\n"
          "  - render_label:app/workers/labels.py:48 -> 1.2GB\n  - _fetch_rates:app/workers/shipping.py:91 -> 340MB\n  - <stack trace unavailable> -> 88MB"),
      edit("app/workers/celery_app.py", "app.conf.worker_prefetch_multiplier = 1",
           "app.conf.worker_prefetch_multiplier = 1\napp.conf.worker_max_tasks_per_child = 200\napp.conf.worker_max_memory_per_child = 400_000  # KiB"),
      answer="The growth comes from the label rendering task (`render_label`, the PDF/PIL path): the native library "
             "never returns freed memory to the OS, so each worker process only ever grows. Instead of chasing it "
             "inside Pillow I'm recycling each worker process after 200 tasks (`worker_max_tasks_per_child`) and as a "
             "backstop when it passes ~400 MB (`worker_max_memory_per_child`). Recycling is cheap for us — a fork "
             "takes ~150 ms.",
      title="Stop celery worker memory growth"),
], qs=[
    ("natural", "what did we do about the task queue workers' RAM creeping up until they got killed?"),
    ("paraphrase", "asynchronous executors bloated till the kernel shot them — how often do we respawn them?"),
    ("keyword", "celery worker memory"),
    ("identifier", "worker_max_tasks_per_child"),
    ("temporal-ish", "over the summer the task runners kept bloating, which setting fixed it?"),
    ("phrase", '"recycling each worker process after 200 tasks"'),
], decoys=[
    D(T("celery tasks stay PENDING forever in flower, but they do run",
        read("app/workers/celery_app.py", '''app = Celery("orders", broker=settings.BROKER_URL)
app.conf.task_acks_late = True
app.conf.worker_prefetch_multiplier = 1
app.conf.worker_max_tasks_per_child = 200
app.conf.worker_max_memory_per_child = 400_000  # KiB
'''),
        edit("app/workers/celery_app.py", 'app = Celery("orders", broker=settings.BROKER_URL)',
             'app = Celery("orders", broker=settings.BROKER_URL, backend=settings.RESULT_BACKEND_URL)'),
        answer="No result backend was configured, so Celery could never record a state other than PENDING. Added a "
               "Redis result backend with a 1h result expiry.",
        title="Configure celery result backend"),
      qs=[("natural", "why did finished background tasks still show as pending?"),
          ("paraphrase", "why did asynchronous errands seem eternally unstarted though they'd actually happened?")]),
]))

add(S("unleash-flags", "orders-service", when=(25, 45), turns=[
    T("LaunchDarkly renewal quote came in at $2.4k/month. we have like nine flags. options?",
      grep("ldclient", '''app/core/flags.py:3:import ldclient
app/core/flags.py:12:    return ldclient.get().variation(name, ctx, default)
app/api/checkout.py:19:from app.core.flags import flag'''),
      read("app/core/flags.py"),
      answer="Options: (1) stay on LaunchDarkly; (2) self-host Unleash (open source, Postgres-backed, has a Python SDK "
             "with local evaluation); (3) env-var flags. Nine flags do not justify $29k a year, and we don't use "
             "experiments or the targeting UI beyond percentage rollouts, which Unleash does. My recommendation is "
             "Unleash on our existing Postgres, behind the same `flag()` helper so call sites don't change.",
      title="Evaluate feature flag vendors"),
    T("agreed, go with unleash",
      write("app/core/flags.py", '''from UnleashClient import UnleashClient

from app.core.config import settings

_client = UnleashClient(url=settings.UNLEASH_URL, app_name="orders-service",
                        custom_headers={"Authorization": settings.UNLEASH_TOKEN}, refresh_interval=15)
_client.initialize_client()


def flag(name: str, ctx: dict | None = None, default: bool = False) -> bool:
    return _client.is_enabled(name, ctx or {}, fallback_function=lambda *_: default)
'''),
      run("pytest -q tests/test_flags.py", "....                                                                     [100%]\n4 passed in 0.31s"),
      answer="Done: `app/core/flags.py` now talks to Unleash (`UNLEASH_URL`, `UNLEASH_TOKEN`); evaluation is local "
             "with a 15 s refresh. I exported the nine LaunchDarkly flags with their rollout percentages into "
             "`deploy/unleash/flags.json` for import.",
      title=""),
], qs=[
    ("natural", "why did we stop paying for the hosted feature-toggle service?"),
    ("paraphrase", "why ditch the pricey SaaS toggle company for a free alternative on our hardware?"),
    ("keyword", "feature flags unleash"),
    ("temporal-ish", "last month we moved our feature toggles to a self-hosted tool, what was the reasoning?"),
    ("phrase", '"nine flags do not justify"'),
], decoys=[
    D(T("p99 of /checkout jumped 80ms after we added the new-checkout flag check",
        read("app/core/flags.py"),
        edit("app/core/flags.py", "def flag(name: str, ctx: dict | None = None, default: bool = False) -> bool:",
             "@ttl_cache(ttl=5)\ndef flag(name: str, ctx: dict | None = None, default: bool = False) -> bool:"),
        answer="Each `flag()` call hit the flag server over HTTP because the client was created per request. Made it a "
               "module-level singleton and cached evaluations for 5 s; p99 is back to normal.",
        title="Cache feature flag evaluation"),
      qs=[("keyword", "flag check latency checkout")]),
]))

add(S("alembic-not-null", "orders-service", when=(8, 28), turns=[
    T("the migration adding fulfillment_channel froze staging for 4 minutes. prod orders table is 40x bigger. how do we ship this safely?",
      read("app/db/migrations/versions/20261009_fulfillment_channel.py", '''def upgrade() -> None:
    op.add_column(
        "orders",
        sa.Column("fulfillment_channel", sa.String(16), nullable=False, server_default="warehouse"),
    )
'''),
      run("psql $STAGING_DB -c \"select relname, mode, granted from pg_locks l join pg_class c on c.oid = l.relation where relname = 'orders'\"",
          " relname |        mode         | granted\n---------+---------------------+---------\n orders  | AccessExclusiveLock | t\n orders  | RowExclusiveLock    | f\n(2 rows)"),
      write("app/db/migrations/versions/20261010_fulfillment_channel_backfill.py", '''BATCH = 10_000


def upgrade() -> None:
    conn = op.get_bind()
    while True:
        n = conn.execute(sa.text(
            "UPDATE orders SET fulfillment_channel = 'warehouse' WHERE id IN ("
            " SELECT id FROM orders WHERE fulfillment_channel IS NULL LIMIT :n)"), {"n": BATCH}).rowcount
        if not n:
            break
'''),
      write("app/db/migrations/versions/20261011_fulfillment_channel_not_null.py", '''def upgrade() -> None:
    op.execute("ALTER TABLE orders ADD CONSTRAINT orders_fc_not_null CHECK (fulfillment_channel IS NOT NULL) NOT VALID")
    op.execute("ALTER TABLE orders VALIDATE CONSTRAINT orders_fc_not_null")
    op.execute("ALTER TABLE orders ALTER COLUMN fulfillment_channel SET NOT NULL")
'''),
      answer="Adding a NOT NULL column with a default takes an ACCESS EXCLUSIVE lock on `orders`, and on our Postgres "
             "version the default forces a rewrite, so every write queued behind it. I split it into three migrations: "
             "(1) add `fulfillment_channel` as nullable — instant; (2) backfill in batches of 10k rows, each its own "
             "short transaction; (3) add a `CHECK ... NOT VALID` constraint, `VALIDATE` it (only a SHARE UPDATE "
             "EXCLUSIVE lock), then `SET NOT NULL`, which can use the validated constraint and skips the scan.",
      title="Split fulfillment_channel migration"),
], qs=[
    ("natural", "how did we add the new column to the big orders table without blocking writes?"),
    ("paraphrase", "how did we phase in a compulsory datum for every purchase without stalling everybody?"),
    ("phrase", '"ACCESS EXCLUSIVE lock"'),
    ("keyword", "alembic migration table lock"),
    ("identifier", "fulfillment_channel"),
    ("temporal-ish", "in October we broke a schema change into several steps — why?"),
], decoys=[
    D(T("alembic upgrade head fails in CI: Multiple head revisions are present",
        run("alembic heads --verbose | grep -E 'Rev|Path'", "Rev: a41c7d2e9f10 (head)\nPath: app/db/migrations/versions/20261011_fulfillment_channel_not_null.py\nRev: 5d0e3b71c2f8 (head)\nPath: app/db/migrations/versions/20261012_add_gift_wrap.py"),
        run("alembic merge -m 'merge heads' a41c7d2e9f10 5d0e3b71c2f8", "Generating app/db/migrations/versions/9c3a_merge_heads.py ...  done"),
        answer="Two branches each added a migration on top of the same parent. Created a merge revision; CI is green.",
        title="Merge alembic heads"),
      qs=[("error", "FAILED: Multiple head revisions are present for given argument 'head'; please specify a specific target revision")]),
]))

# --------------------------------------------------------------------------- billing-api

add(S("decimal-discount", "billing-api", when=(40, 55), turns=[
    T("finance says ~0.3% of invoices are off by one cent compared to what the customer saw at checkout. look at the pricing code",
      read("app/services/pricing.py", '''def apply_discount(subtotal: float, discount: Discount | None) -> float:
    if discount is None:
        return subtotal
    total = subtotal - subtotal * discount.rate
    return round(total, 2)
'''),
      edit("app/services/pricing.py", "def apply_discount(subtotal: float, discount: Discount | None) -> float:",
           "def apply_discount(subtotal: Decimal, discount: Discount | None) -> Decimal:"),
      run("pytest -q tests/test_pricing.py", '''F.....
=================================== FAILURES ===================================
_____________________________ test_percent_coupon _____________________________
Traceback (most recent call last):
  File "{root}/tests/test_pricing.py", line 22, in test_percent_coupon
    assert apply_discount(Decimal("19.99"), coupon) == Decimal("16.99")
  File "{root}/app/services/pricing.py", line 57, in apply_discount
    total = subtotal - subtotal * discount.rate
TypeError: unsupported operand type(s) for -: 'decimal.Decimal' and 'float'
1 failed, 5 passed in 0.29s''', code=1),
      edit("app/services/pricing.py", "    total = subtotal - subtotal * discount.rate\n    return round(total, 2)",
           "    rate = Decimal(str(discount.rate))\n    total = subtotal - subtotal * rate\n    return total.quantize(CENT, rounding=ROUND_HALF_UP)"),
      run("pytest -q tests/test_pricing.py", "......                                                                   [100%]\n6 passed in 0.21s"),
      answer="Root cause: prices were floats, and `round()` on a binary float does banker's-style rounding on values "
             "like 16.995 that aren't representable exactly, while the checkout UI rounds half-up. That's the one-cent "
             "drift. Amounts are `Decimal` end to end now, quantized with `ROUND_HALF_UP`. Discount rates still arrive "
             "as floats from the coupon JSON, which is what the TypeError was about — they go through `Decimal(str(x))`.",
      title="Fix one-cent invoice rounding"),
], qs=[
    ("natural", "why did a few invoice amounts differ by a penny from checkout?"),
    ("paraphrase", "why were a handful of statements a penny adrift from what shoppers were quoted?"),
    ("error", 'File "/home/dev/code/globex.io/billing-api/app/services/pricing.py", line 59, in apply_discount'),
    ("error", "    total = subtotal - subtotal * discount.rate\nTypeError: unsupported operand type(s) for -: 'decimal.Decimal' and 'float'"),
    ("identifier", "apply_discount"),
    ("keyword", "invoice rounding cent"),
    ("temporal-ish", "in September finance flagged totals that were one cent wrong, what was the fix?"),
], decoys=[
    D(T("EUR invoices use last week's exchange rate",
        grep("convert_amount", "app/services/pricing.py:71:    total = convert_amount(apply_discount(subtotal, discount), invoice.currency)\napp/services/fx.py:18:def convert_amount(amount: Decimal, currency: str) -> Decimal:"),
        read("app/services/fx.py"),
        edit("app/services/fx.py", "@cache(ttl=0)", "@cache(ttl=3600)"),
        answer="The FX rates cache had `ttl=0`, which our cache decorator treats as 'never expire', so rates were "
               "frozen since the last deploy. It refreshes hourly now.",
        title="Refresh FX rates hourly"),
      qs=[("natural", "why were euro invoices converted with an old rate?")]),
]))

add(S("stripe-webhook-raw-body", "billing-api", when=(140, 170), turns=[
    T("every stripe webhook is failing since the fastapi upgrade. logs:\n"
      "stripe.error.SignatureVerificationError: No signatures found matching the expected signature for payload",
      read("app/api/webhooks.py", '''@router.post("/webhooks/stripe")
async def handle_stripe_event(request: Request):
    payload = json.dumps(await request.json())
    sig = request.headers.get("stripe-signature")
    event = stripe.Webhook.construct_event(payload, sig, settings.STRIPE_WEBHOOK_SECRET)
    await dispatch(event)
    return {"ok": True}
'''),
      edit("app/api/webhooks.py", "    payload = json.dumps(await request.json())", "    payload = await request.body()"),
      run("stripe trigger invoice.paid && sleep 2 && docker compose logs --tail=5 api",
          "api-1  | INFO  webhook invoice.paid evt_1QxT8 verified\napi-1  | INFO  dispatch invoice.paid -> mark_invoice_paid"),
      answer="The signature is an HMAC over the exact bytes Stripe sent. The handler parsed the body and dumped it back "
             "to a string, and re-serialising the JSON changes the bytes (key order, spacing, unicode escapes), so no "
             "signature could ever match. The old Starlette version happened to keep the body cached raw, which is "
             "why it worked before. `handle_stripe_event` now verifies `await request.body()` and only parses after.",
      title="Fix Stripe webhook signature check"),
], qs=[
    ("natural", "why did payment provider callbacks start failing verification after the framework upgrade?"),
    ("paraphrase", "after a framework bump, why were the processor's pings deemed forged?"),
    ("error", "stripe._error.SignatureVerificationError: No signatures found matching the expected signature for payload"),
    ("keyword", "stripe webhook signature"),
    ("identifier", "handle_stripe_event"),
    ("phrase", '"re-serialising the JSON changes the bytes"'),
    ("temporal-ish", "back in June the payment webhooks broke after an upgrade — what was wrong?"),
], decoys=[
    D(T("stripe dashboard shows lots of webhook retries for invoice.finalized, our endpoint answers after 12s",
        read("app/api/webhooks.py", '''@router.post("/webhooks/stripe")
async def handle_stripe_event(request: Request, background: BackgroundTasks):
    payload = await request.body()
    event = stripe.Webhook.construct_event(payload, request.headers.get("stripe-signature"), settings.STRIPE_WEBHOOK_SECRET)
    await dispatch(event, background)
    return {"ok": True}
'''),
        edit("app/services/invoices.py", "    pdf = render_invoice_pdf(invoice)", "    background.add_task(render_invoice_pdf, invoice)"),
        answer="Stripe gives up waiting after 10 s and retries. We generated the PDF inside the webhook; that now runs "
               "as a background task and the endpoint answers in ~40 ms.",
        title="Speed up invoice.finalized webhook"),
      qs=[("keyword", "webhook retries slow response")]),
]))

add(S("invoice-timezone", "billing-api", when=(215, 235), turns=[
    T("customers in Sydney get invoices dated the day before their billing day. e.g. billed on the 1st, invoice says the 31st",
      grep("utcnow", '''app/services/invoices.py:88:    issued_on = datetime.utcnow().date()
app/services/invoices.py:131:    if period.end < datetime.utcnow():
app/services/reminders.py:40:    now = datetime.utcnow()'''),
      edit("app/services/invoices.py", "    issued_on = datetime.utcnow().date()",
           "    issued_on = datetime.now(ZoneInfo(customer.timezone)).date()"),
      run("pytest -q tests/test_invoices.py", '''.F..
=================================== FAILURES ===================================
__________________________ test_close_period_sydney ___________________________
  File "{root}/app/services/invoices.py", line 133, in close_billing_period
    if period.end < datetime.utcnow():
TypeError: can't compare offset-naive and offset-aware datetimes
1 failed, 3 passed in 0.44s''', code=1),
      edit("app/services/invoices.py", "    if period.end < datetime.utcnow():", "    if period.end < datetime.now(timezone.utc):"),
      run("pytest -q tests/test_invoices.py", "....                                                                     [100%]\n4 passed in 0.40s"),
      answer="The issue date was `datetime.utcnow().date()`. At 00:30 on the 1st in Sydney it is still the 31st in "
             "UTC, so the invoice got the previous day. The date has to be taken in the customer's timezone, so it "
             "uses `ZoneInfo(customer.timezone)` now. Billing periods were already stored timezone-aware, which is "
             "why `close_billing_period` then choked on the naive `utcnow()`; it compares against `datetime.now(timezone.utc)`.",
      title="Use customer timezone for invoice dates"),
], qs=[
    ("natural", "why did Australian customers get invoices dated a day early?"),
    ("paraphrase", "why did statements for Aussie buyers come out backdated?"),
    ("error", "    if period.end < datetime.utcnow():\nTypeError: can't compare offset-naive and offset-aware datetimes"),
    ("temporal-ish", "back in March there was an invoice date bug for customers down under, what was it?"),
    ("phrase", '"the date has to be taken in the customer\'s timezone"'),
    ("identifier", "close_billing_period"),
]))

add(S("wkhtmltopdf-weasyprint", "billing-api", when=(70, 90), turns=[
    T("invoice PDFs fail in the new alpine image: wkhtmltopdf exited with code -11. should we just go back to debian?",
      run("docker run --rm billing-api:alpine wkhtmltopdf /tmp/inv.html /tmp/inv.pdf; echo exit=$?",
          "Loading page (1/2)\n[>                                                           ] 0%\nexit=139"),
      run("pip index versions pdfkit 2>/dev/null | head -1; curl -s https://api.github.com/repos/wkhtmltopdf/wkhtmltopdf | jq .archived",
          "pdfkit (1.0.0)\ntrue"),
      write("app/services/pdf.py", '''from weasyprint import HTML


def render_invoice_pdf(invoice) -> bytes:
    html = templates.get_template("invoice.html").render(invoice=invoice)
    return HTML(string=html, base_url=str(STATIC_DIR)).write_pdf()
'''),
      run("pytest -q tests/test_pdf.py", "...                                                                      [100%]\n3 passed in 2.10s"),
      answer="Rather than going back to Debian I replaced wkhtmltopdf with WeasyPrint. wkhtmltopdf is no longer "
             "maintained and needs a patched Qt (the repo is archived), and the segfault is a musl/QtWebKit problem "
             "nobody will fix. WeasyPrint is pure Python + Pango, works on Alpine, and our invoice template renders "
             "the same apart from page margins, which I adjusted in the CSS. `render_invoice_pdf` is the new entry point.",
      title="Replace wkhtmltopdf with WeasyPrint"),
], qs=[
    ("natural", "why did we replace the old HTML-to-PDF converter?"),
    ("paraphrase", "why did we ditch the abandoned printout converter that kept dying on the slim distro?"),
    ("keyword", "invoice pdf weasyprint"),
    ("phrase", '"no longer maintained and needs a patched Qt"'),
    ("temporal-ish", "in August we changed how invoice documents are produced — why?"),
    ("identifier", "render_invoice_pdf"),
], decoys=[
    D(T("in the PDFs all the Japanese customer names show up as empty boxes",
        run("fc-list | grep -ci cjk", "0"),
        edit("Dockerfile", "RUN apk add --no-cache pango", "RUN apk add --no-cache pango font-noto-cjk"),
        answer="The image had no CJK fonts, so Pango fell back to boxes (tofu). Installed `font-noto-cjk`; names render now.",
        title="Install CJK fonts for invoices"),
      qs=[("natural", "why did the invoice documents show squares instead of Japanese characters?")]),
]))
