"""English scenarios, part 3: front ends (shop-web, admin-dashboard) and Rust CLIs (logfmt, pkgsync)."""

from qdsl import D, S, T, edit, grep, read, run, write

SCENARIOS = []
add = SCENARIOS.append

# --------------------------------------------------------------------------- shop-web

add(S("hydration-mismatch", "shop-web", when=(33, 50), turns=[
    T("product pages log a hydration error in prod and the delivery estimate text jumps after load:\n\n"
      "Warning: Text content did not match. Server: \"12/03/2026\" Client: \"3/12/2026\"",
      grep("toLocaleDateString", '''src/components/DeliveryEstimate.tsx:18:  const label = eta.toLocaleDateString();
src/pages/OrderDetail.tsx:77:      <td>{new Date(o.createdAt).toLocaleDateString("en-GB")}</td>'''),
      read("src/components/DeliveryEstimate.tsx", '''export function DeliveryEstimate({ eta }: { eta: Date }) {
  const label = eta.toLocaleDateString();
  return <p className="text-sm text-muted">Arrives by {label}</p>;
}
'''),
      edit("src/components/DeliveryEstimate.tsx", "  const label = eta.toLocaleDateString();",
           "  const label = formatDate(eta, { locale: shopLocale, timeZone: \"Europe/London\" });"),
      run("npm run build && npm run start & sleep 5 && npx playwright test e2e/product.spec.ts", '''Running 3 tests using 1 worker
  ✓  1 e2e/product.spec.ts:8:5 › product page renders (1.2s)
  ✓  2 e2e/product.spec.ts:21:5 › no hydration warnings (0.9s)
  ✓  3 e2e/product.spec.ts:30:5 › delivery estimate (0.7s)
  3 passed (4.1s)'''),
      answer="`DeliveryEstimate.tsx` called `toLocaleDateString()` with no arguments, so the server (Node, en-GB, UTC) "
             "and the browser (the visitor's locale and timezone) produced different strings, React noticed on "
             "hydration and re-rendered — that's the jump. It formats with an explicit shop locale and timezone now, "
             "so both sides render identical markup. The e2e suite has a test that fails on any hydration warning.",
      title="Fix delivery date hydration mismatch"),
], qs=[
    ("error", 'Warning: Text content did not match. Server: "04/11/2026" Client: "11/4/2026"'),
    ("natural", "why did the arrival date on product pages change right after the page loaded?"),
    ("paraphrase", "why did the ship-by wording on merchandise screens visibly flip moments after appearing?"),
    ("identifier", "DeliveryEstimate.tsx"),
    ("keyword", "hydration error date"),
    ("temporal-ish", "in September product pages threw hydration warnings, what was the culprit?"),
], decoys=[
    D(T("sentry is full of 'Hydration failed because the initial UI does not match' but only for a few users",
        run("npx sentry-cli events list --query 'hydration' --max-rows 3", '''| user agent                              | extra                                      |
| Chrome 129 / Windows                    | body[data-gr-ext-installed]                |
| Chrome 129 / macOS                      | body[data-new-gr-c-s-check-loaded]         |'''),
        edit("src/pages/_document.tsx", "      <body>", "      <body suppressHydrationWarning>"),
        answer="Those users have the Grammarly extension, which injects attributes into `<body>` before React "
               "hydrates. Nothing to fix in our code; `suppressHydrationWarning` on `<body>` silences it (it only "
               "applies one level deep, so real mismatches still show).",
        title="Silence extension hydration noise"),
      qs=[("natural", "why did only some visitors trigger hydration failures?")]),
]))

add(S("bundle-date-fns", "shop-web", when=(110, 150), turns=[
    T("lighthouse says our main bundle is 812 kB. what's in it?",
      run("npx vite-bundle-visualizer --template list | head -8", '''dist/assets/index-4f1c.js  812.4 kB
  node_modules/moment/locale        231.9 kB
  node_modules/moment/moment.js      58.7 kB
  node_modules/lodash/lodash.js      71.2 kB
  node_modules/react-dom             131.0 kB
  src/                               164.3 kB'''),
      grep("from \"moment\"", '''src/lib/dates.ts:1:import moment from "moment";
src/components/OrderTimeline.tsx:3:import moment from "moment";
src/pages/Account.tsx:2:import moment from "moment";'''),
      edit("src/lib/dates.ts", 'import moment from "moment";', 'import { format, formatDistanceToNow, parseISO } from "date-fns";'),
      edit("src/lib/dates.ts", "  return moment(iso).fromNow();", "  return formatDistanceToNow(parseISO(iso), { addSuffix: true });"),
      run("npm run build 2>&1 | tail -3", "dist/assets/index-8b2e.js   431.2 kB │ gzip: 139.8 kB\n✓ built in 9.41s"),
      answer="Moment was 290 kB of it, mostly every locale it ships. I replaced it with date-fns: it tree-shakes per "
             "function, so we only pay for `format`, `parseISO` and `formatDistanceToNow`. Also switched the two "
             "lodash imports to `lodash-es` named imports. Main chunk: 812 kB → 431 kB (140 kB gzipped).",
      title="Shrink main bundle"),
], qs=[
    ("natural", "what did we swap the date library for to shrink the JavaScript payload?"),
    ("paraphrase", "which calendar utility did we swap in to slim down the browser download?"),
    ("keyword", "moment bundle size"),
    ("phrase", '"tree-shakes per function"'),
    ("temporal-ish", "over the summer we cut the shop bundle almost in half, how?"),
    ("identifier", "formatDistanceToNow"),
], decoys=[
    D(T("vite warns: Some chunks are larger than 500 kB after minification",
        read("vite.config.ts"),
        edit("vite.config.ts", "  build: { sourcemap: true },",
             "  build: {\n    sourcemap: true,\n    rollupOptions: { output: { manualChunks: { react: [\"react\", \"react-dom\"], charts: [\"recharts\"] } } },\n  },"),
        answer="Split React and recharts into their own vendor chunks via `manualChunks`; they change rarely, so they "
               "stay cached across deploys. No size reduction overall, but the warning is gone.",
        title="Split vendor chunks"),
      qs=[("keyword", "vite manualChunks vendor")]),
]))

add(S("cart-persist", "shop-web", when=(60, 75), turns=[
    T("customers complain the basket is empty after they refresh the page. did that ever work?",
      read("src/store/cart.ts", '''export const useCartStore = create<CartState>()((set) => ({
  items: [],
  drawerOpen: false,
  add: (item) => set((s) => ({ items: [...s.items, item] })),
  remove: (sku) => set((s) => ({ items: s.items.filter((i) => i.sku !== sku) })),
}));
'''),
      run("git log --oneline -S 'persist(' -- src/store/cart.ts", "e41a9c2 refactor(store): move cart to zustand"),
      edit("src/store/cart.ts", "export const useCartStore = create<CartState>()((set) => ({",
           "export const useCartStore = create<CartState>()(persist((set) => ({"),
      edit("src/store/cart.ts", "}));", "}), {\n  name: \"cart-v2\",\n  partialize: (s) => ({ items: s.items }),\n  version: 2,\n}));"),
      run("npx vitest run src/store", " ✓ src/store/cart.test.ts (6 tests) 41ms\n\n Test Files  1 passed (1)\n      Tests  6 passed (6)"),
      answer="It used to work: the old Redux cart was saved to localStorage, and the move to zustand (e41a9c2) dropped "
             "that. `useCartStore` now uses the `persist` middleware under the key `cart-v2`, with partialize so the "
             "drawer state is not persisted — only items survive a reload.",
      title="Persist cart across reloads"),
], qs=[
    ("natural", "why did the basket get emptied after reloading the page?"),
    ("paraphrase", "why did shoppers' chosen merchandise vanish whenever they hit F5?"),
    ("identifier", "useCartStore"),
    ("keyword", "cart localStorage persist"),
    ("phrase", '"partialize so the drawer state is not persisted"'),
    ("temporal-ish", "in August the cart stopped surviving a refresh — which commit broke it?"),
], decoys=[
    D(T("a customer got the coupon applied twice, total was negative",
        grep("applyCoupon", "src/components/CouponForm.tsx:21:  const applyCoupon = useCartStore((s) => s.applyCoupon);\nsrc/store/cart.ts:44:  applyCoupon: async (code) => {"),
        read("src/components/CouponForm.tsx"),
        edit("src/components/CouponForm.tsx", "  <button type=\"submit\">Apply</button>", "  <button type=\"submit\" disabled={pending}>Apply</button>"),
        answer="Double-submit: the Apply button stayed enabled while the request was in flight. Disabled it while "
               "pending, and the API now rejects a second application of the same coupon.",
        title="Prevent double coupon application"),
      qs=[("natural", "how could one discount code be redeemed twice on the same order?")]),
]))

add(S("playwright-flaky", "shop-web", turns=[
    T("checkout e2e fails ~1 in 5 runs in CI. never locally",
      run("npx playwright test e2e/checkout.spec.ts --repeat-each=20 --workers=4 | tail -6", '''  ✘  37 e2e/checkout.spec.ts:44:7 › place order with saved card (repeat12) (6.2s)
  ✘  58 e2e/checkout.spec.ts:44:7 › place order with saved card (repeat17) (6.0s)

  Error: locator.click: Target closed
  2 failed
  18 passed (1.1m)'''),
      read("e2e/checkout.spec.ts", '''test("place order with saved card", async ({ page }) => {
  await page.goto("/checkout");
  await page.waitForTimeout(500);
  await page.getByRole("button", { name: "Place order" }).click();
  await expect(page).toHaveURL(/\\/orders\\/\\d+/);
});
'''),
      edit("e2e/checkout.spec.ts", "  await page.waitForTimeout(500);\n  await page.getByRole(\"button\", { name: \"Place order\" }).click();",
           "  const place = page.getByRole(\"button\", { name: \"Place order\" });\n  await expect(place).toBeEnabled();\n  await place.click();"),
      edit("playwright.config.ts", "  use: { baseURL },", "  use: { baseURL, contextOptions: { reducedMotion: \"reduce\" } },"),
      run("npx playwright test e2e/checkout.spec.ts --repeat-each=50 --workers=4 | tail -2", "  50 passed (2.3m)"),
      answer="The test waited a fixed 500 ms and then clicked 'Place order', but on slow CI runners the button is "
             "still disabled while the saved card loads, and sometimes the slide-in animation re-mounts it. "
             "waitForTimeout is a smell: it now waits for the button to be enabled, and animations are off "
             "(`reducedMotion: reduce`). 50/50 passes with --repeat-each.",
      title="Deflake checkout e2e"),
], qs=[
    ("natural", "why did the end-to-end purchase test fail randomly in CI but never on laptops?"),
    ("paraphrase", "why did the robotic purchase walkthrough flunk intermittently on hosted builders but not laptops?"),
    ("keyword", "flaky checkout e2e"),
    ("identifier", "checkout.spec.ts"),
    ("phrase", '"waitForTimeout is a smell"'),
], decoys=[
    D(T("playwright job in the new CI image fails immediately",
        run("npx playwright test", "Error: browserType.launch: Executable doesn't exist at /root/.cache/ms-playwright/chromium-1134/chrome-linux/chrome", code=1),
        edit(".github/workflows/e2e.yml", "      - run: npm ci", "      - run: npm ci\n      - run: npx playwright install --with-deps chromium"),
        answer="The new runner image doesn't ship Playwright browsers. CI installs chromium with its system deps now.",
        title="Install playwright browsers in CI"),
      qs=[("error", "browserType.launch: Executable doesn't exist at /home/runner/.cache/ms-playwright/chromium-1134/chrome-linux/chrome")]),
]))

# --------------------------------------------------------------------------- admin-dashboard

add(S("pagination-offbyone", "admin-dashboard", when=(88, 100), turns=[
    T("support noticed that in the Users table one user per page is just missing. total says 243 but paging through shows 219",
      read("src/hooks/usePagination.ts", '''export function usePagination<T>(rows: T[], pageSize = 25) {
  const [page, setPage] = useState(0);
  const start = page * pageSize;
  const visible = rows.slice(start, start + pageSize - 1);
  return { page, setPage, visible, pages: Math.ceil(rows.length / pageSize) };
}
'''),
      edit("src/hooks/usePagination.ts", "  const visible = rows.slice(start, start + pageSize - 1);", "  const visible = rows.slice(start, start + pageSize);"),
      write("src/hooks/usePagination.test.ts", '''it("shows every row exactly once", () => {
  const rows = Array.from({ length: 243 }, (_, i) => i);
  const seen = pagesOf(rows, 25).flat();
  expect(seen).toEqual(rows);
});
'''),
      run("npx vitest run src/hooks", " ✓ src/hooks/usePagination.test.ts (4 tests) 12ms\n\n Test Files  1 passed (1)"),
      answer="`usePagination` subtracted one from the end index: slice end is exclusive, so `start + pageSize - 1` "
             "returned 24 rows per page and silently skipped the last row of every page (10 pages → 24 rows missing, "
             "matching 243 vs 219). Fixed, with a test that walks every page and checks each row appears exactly once.",
      title="Fix missing row per page"),
], qs=[
    ("natural", "why was one record missing from every page of the users table?"),
    ("paraphrase", "why did every screenful of the staff roster quietly omit its bottom person?"),
    ("identifier", "usePagination"),
    ("phrase", '"slice end is exclusive"'),
    ("keyword", "pagination missing row"),
    ("temporal-ish", "around early August the admin user list was skipping entries, what was the bug?"),
], decoys=[
    D(T("sorting the Users table by 'Created' puts 10/01 before 9/30",
        read("src/components/UsersTable.tsx", '''export function UsersTable({ users }: { users: User[] }) {
  const [sort, setSort] = useState<SortSpec>({ key: "created", dir: "desc" });
  const sorted = useMemo(() => sortRows(users, sort), [users, sort]);
  const { visible, page, setPage, pages } = usePagination(sorted, 25);
  return <DataTable rows={visible} sort={sort} onSort={setSort} page={page} pages={pages} onPage={setPage} />;
}
'''),
        edit("src/components/UsersTable.tsx", "  sortFn: (a, b) => a.created.localeCompare(b.created),",
             "  sortFn: (a, b) => Date.parse(a.createdIso) - Date.parse(b.createdIso),"),
        answer="It sorted the formatted date strings. It compares timestamps now.",
        title="Sort users by real date"),
      qs=[("natural", "why did ordering the user list by creation date come out wrong?")]),
]))

add(S("csp-nonce", "admin-dashboard", when=(12, 17), turns=[
    T("after the security headers PR the dashboard is a blank page. console:\n\n"
      "Refused to execute inline script because it violates the following Content Security Policy directive: \"script-src 'self'\". "
      "Either the 'unsafe-inline' keyword, a hash ('sha256-...'), or a nonce ('nonce-...') is required to enable inline execution.",
      run("curl -sI https://admin.acme.dev | grep -i content-security", "content-security-policy: default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'"),
      grep("<script>", "index.html:9:    <script>window.__CONFIG__ = %CONFIG_JSON%;</script>\nindex.html:12:    <script>document.documentElement.dataset.theme = localStorage.getItem(\"theme\") || \"light\";</script>"),
      edit("deploy/nginx.conf", "    add_header Content-Security-Policy \"default-src 'self'; script-src 'self'\";",
           "    set $csp_nonce $request_id;\n    sub_filter_once off;\n    sub_filter '__CSP_NONCE__' $csp_nonce;\n    add_header Content-Security-Policy \"default-src 'self'; script-src 'self' 'nonce-$csp_nonce'\";"),
      edit("index.html", "    <script>window.__CONFIG__", "    <script nonce=\"__CSP_NONCE__\">window.__CONFIG__"),
      run("curl -s https://staging-admin.acme.dev | grep -c 'nonce='", "2"),
      answer="The new policy only allows scripts from our own origin, and `index.html` has two inline scripts (the "
             "runtime config and the theme bootstrap), so the app never started. Instead of `'unsafe-inline'` nginx "
             "now generates a per-request nonce (`$request_id`), puts it in the CSP header and substitutes it into "
             "both script tags. Staging loads again with the strict policy.",
      title="Fix blank dashboard after CSP"),
], qs=[
    ("error", "Refused to execute inline script because it violates the following Content Security Policy directive: "
              "\"script-src 'self' https://cdn.acme.dev\"."),
    ("natural", "the dashboard went blank after we tightened the security headers — what was blocked and how was it fixed?"),
    ("paraphrase", "why did the back-office UI turn white after the hardening PR, and which snippets were vetoed?"),
    ("keyword", "csp inline script nonce"),
    ("temporal-ish", "two weeks ago the admin UI showed a white screen after a headers change, what happened?"),
    ("phrase", '"per-request nonce"'),
]))

add(S("dark-mode-flash", "admin-dashboard", when=(160, 200), turns=[
    T("in dark mode the dashboard flashes white for a split second on every load, it's really annoying at night",
      read("src/hooks/useTheme.ts", '''export function useTheme() {
  const [theme, setTheme] = useState<"light" | "dark">("light");
  useEffect(() => {
    setTheme((localStorage.getItem("theme") as "light" | "dark") ?? "light");
  }, []);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  return { theme, setTheme };
}
'''),
      edit("index.html", "  <head>", "  <head>\n    <script>document.documentElement.dataset.theme = localStorage.getItem(\"theme\") || \"light\";</script>"),
      edit("src/hooks/useTheme.ts", '  const [theme, setTheme] = useState<"light" | "dark">("light");',
           '  const [theme, setTheme] = useState<"light" | "dark">(() => document.documentElement.dataset.theme as "light" | "dark");'),
      answer="The theme was read from localStorage in a `useEffect`, i.e. after React's first render, so the browser "
             "painted the light theme first. A tiny inline script in `<head>` now sets `data-theme` before the first "
             "paint, and `useTheme` initialises from that attribute instead of defaulting to light.",
      title="Fix dark mode flash on load"),
], qs=[
    ("natural", "why did the page flash bright when loading in the dark theme?"),
    ("paraphrase", "why did the dim colour scheme blink bright for an instant upon every visit?"),
    ("keyword", "dark mode flicker"),
    ("phrase", '"before the first paint"'),
    ("identifier", "useTheme"),
]))

# --------------------------------------------------------------------------- logfmt

add(S("lexer-utf8", "logfmt", when=(200, 215), turns=[
    T("logfmt panics on some of our nginx logs:\n\nthread 'main' panicked at src/parser/lexer.rs:212:31:\n"
      "byte index 17 is not a char boundary; it is inside 'é' (bytes 16..18) of `level=info msg=café ok`",
      read("src/parser/lexer.rs", '''    pub fn next_token(&mut self) -> Option<Token<'a>> {
        let rest = &self.src[self.pos..];
        let end = rest.find(|c: char| c == ' ' || c == '=').unwrap_or(rest.len());
        let tok = &self.src[self.pos..self.pos + end + 1];
        self.pos += end + 1;
        Some(Token::Word(tok))
    }
'''),
      edit("src/parser/lexer.rs", "        let tok = &self.src[self.pos..self.pos + end + 1];\n        self.pos += end + 1;",
           "        let tok = &self.src[self.pos..self.pos + end];\n        self.pos += end + rest[end..].chars().next().map_or(0, char::len_utf8);"),
      run("cargo test lexer", '''running 9 tests
test parser::lexer::tests::ascii_pairs ... ok
test parser::lexer::tests::multibyte_value ... ok
test parser::lexer::tests::emoji_key ... ok
test result: ok. 9 passed; 0 failed; 0 ignored; 0 measured; 31 filtered out; finished in 0.00s'''),
      answer="`Lexer::next_token` advanced by `end + 1` bytes, assuming the delimiter and everything before it were "
             "one byte wide. With a multi-byte character right before a delimiter that lands inside the character "
             "and slicing panics. It now slices exactly at the delimiter and advances by the delimiter's UTF-8 length. "
             "Added tests with accented text and emoji.",
      title="Fix lexer panic on non-ASCII"),
], qs=[
    ("error", "thread 'main' panicked at src/parser/lexer.rs:215:27:"),
    ("error", "byte index 23 is not a char boundary; it is inside 'ü' (bytes 22..24) of `user=jürgen action=login`"),
    ("natural", "why did the log parser crash on accented characters?"),
    ("paraphrase", "why did our CLI's splitter blow up on foreign letters such as umlauts?"),
    ("identifier", "Lexer::next_token"),
    ("temporal-ish", "in April the parser blew up on some nginx logs with unicode, what was wrong?"),
], decoys=[
    D(T("`logfmt < /dev/null` panics",
        run("RUST_BACKTRACE=1 cargo run -q < /dev/null", "thread 'main' panicked at src/parser/lexer.rs:88:41:\ncalled `Option::unwrap()` on a `None` value\nstack backtrace:\n   0: rust_begin_unwind\n   1: core::option::unwrap_failed\n   2: logfmt::parser::lexer::Lexer::new\n   3: logfmt::parser::lexer::Lexer::next_token\n   4: logfmt::main", code=101),
        edit("src/parser/lexer.rs", "        let first = self.src.chars().next().unwrap();", "        let Some(first) = self.src.chars().next() else { return None };"),
        answer="Empty input: the lexer unwrapped the first character. Returns `None` now, and empty input prints nothing.",
        title="Handle empty input"),
      qs=[("error", "thread 'main' panicked at src/parser/lexer.rs:90:41:\ncalled `Option::unwrap()` on a `None` value")]),
]))

add(S("memchr-speedup", "logfmt", when=(310, 330), turns=[
    T("parsing a 1 GB log takes 40s, ripgrep reads it in 2. can we do better?",
      run("cargo bench --bench parse -- large_file", '''parse/large_file        time:   [412.08 ms 414.31 ms 416.77 ms]
                        thrpt:  [241.1 MiB/s 242.5 MiB/s 243.9 MiB/s]'''),
      run("perf record -g target/release/logfmt < bench/data/large.log > /dev/null && perf report --stdio | head -8", '''# Overhead  Symbol
    38.21%  regex_automata::meta::strategy::Core::search
    21.77%  alloc::string::String::from
    11.02%  <alloc::vec::Vec<T> as Clone>::clone'''),
      edit("src/parser/lexer.rs", "static SPLIT: Lazy<Regex> = Lazy::new(|| Regex::new(r#\"[ =\\\"]\"#).unwrap());", "use memchr::memchr3;"),
      edit("src/parser/lexer.rs", "        let end = SPLIT.find(rest).map_or(rest.len(), |m| m.start());",
           "        let end = memchr3(b' ', b'=', b'\"', rest.as_bytes()).unwrap_or(rest.len());"),
      run("cargo bench --bench parse -- large_file", '''parse/large_file        time:   [131.52 ms 131.74 ms 132.01 ms]
                        change: [-68.3% -68.2% -68.1%] (p = 0.00 < 0.05)
                        Performance has improved.'''),
      answer="Two changes, about 3.1x overall: the tokenizer splits on delimiters with `memchr::memchr3` (SIMD, three "
             "needles: space, `=`, quote) instead of a regex, and fields borrow `&str` slices from the input, so the "
             "parser no longer allocates a String per field. 414 ms → 132 ms on the benchmark file.",
      title="Speed up parser with memchr"),
], qs=[
    ("natural", "how did we make the log parser roughly three times quicker?"),
    ("paraphrase", "what trick tripled the throughput of our CLI's splitter?"),
    ("keyword", "parser benchmark memchr"),
    ("phrase", '"no longer allocates a String per field"'),
    ("identifier", "memchr3"),
    ("temporal-ish", "before the holidays last year we did a performance pass on the parser — what was the trick?"),
], decoys=[
    D(T("criterion says parse got 12% slower after the color output PR",
        run("cargo bench --bench parse -- small_lines", "parse/small_lines       time:   [9.812 µs 9.840 µs 9.871 µs]\n                        change: [+11.9% +12.3% +12.7%] (p = 0.00 < 0.05)\n                        Performance has regressed."),
        edit("src/io/writer.rs", "        let use_color = std::io::stdout().is_terminal();", "        let use_color = self.use_color;"),
        answer="The writer checked `is_terminal()` (a syscall) for every record. It's computed once at startup now; the regression is gone.",
        title="Fix color output regression"),
      qs=[("natural", "what made the benchmark regress after adding colored output?")]),
]))

add(S("flag-rename", "logfmt", when=(14, 24), turns=[
    T("rename --format to --output everywhere; --format is confusing next to --fields. but don't break people's scripts",
      grep("\"format\"", "src/cmd/args.rs:31:    #[arg(long = \"format\", value_enum, default_value_t = OutputFormat::Text)]"),
      edit("src/cmd/args.rs", "    #[arg(long = \"format\", value_enum, default_value_t = OutputFormat::Text)]",
           "    #[arg(long = \"output\", alias = \"format\", value_enum, default_value_t = OutputFormat::Text)]"),
      edit("src/main.rs", "    let args = Args::parse();", "    let args = Args::parse();\n    if std::env::args().any(|a| a == \"--format\" || a.starts_with(\"--format=\")) {\n        eprintln!(\"warning: --format is deprecated, use --output\");\n    }"),
      run("cargo run -q -- --format json < tests/data/small.log | head -2", "warning: --format is deprecated, use --output\n{\"level\":\"info\",\"msg\":\"started\"}"),
      answer="The flag is `--output` now (`OutputFormat` values unchanged). `--format` still works as a hidden alias "
             "and prints a deprecation warning on stderr, so existing scripts keep working; we can drop it in 2.0. "
             "README and `--help` only show `--output`.",
      title="Rename --format to --output"),
], qs=[
    ("natural", "what happened to the old format option of the log CLI — does it still work?"),
    ("paraphrase", "once that CLI knob got relabelled, are older invocations still honoured?"),
    ("identifier", "OutputFormat"),
    ("keyword", "format flag deprecated alias"),
    ("temporal-ish", "a few weeks back we renamed a command-line flag; did we keep the old spelling working?"),
]))

# --------------------------------------------------------------------------- pkgsync

add(S("lockfile-atomic", "pkgsync", when=(40, 55), turns=[
    T("CI matrix jobs sometimes fail with\n\nError: failed to parse pkgsync.lock: EOF while parsing a value at line 187 column 0",
      read("src/io/lockfile.rs", '''pub fn write_lockfile(path: &Path, lock: &Lockfile) -> Result<()> {
    let mut f = File::create(path)?;
    serde_json::to_writer_pretty(&mut f, lock)?;
    Ok(())
}
'''),
      grep("write_lockfile", "src/cmd/install.rs:88:    write_lockfile(&root.join(\"pkgsync.lock\"), &lock)?;\nsrc/cmd/update.rs:54:    write_lockfile(&lock_path, &lock)?;"),
      write("src/io/atomic.rs", '''/// Write via a temp file in the same directory, then rename over the target.
pub fn write_lockfile_atomic(path: &Path, lock: &Lockfile) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let _guard = FileLock::exclusive(dir.join(".pkgsync.lock.guard"))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer_pretty(&mut tmp, lock)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)?;
    Ok(())
}
'''),
      run("cargo test --test concurrent_install", "running 1 test\ntest two_installs_same_dir ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.41s"),
      answer="Two jobs in the matrix share a workspace cache and ran `pkgsync install` at the same time; "
             "`File::create` truncates the lock file, so one process could read it half-written. Now "
             "`write_lockfile_atomic` writes to a temp file in the same directory and renames it over the old one — "
             "rename is atomic on the same filesystem, so readers see either the old or the new file — and an "
             "advisory file lock serialises writers.",
      title="Atomic lockfile writes"),
], qs=[
    ("error", "Error: failed to parse pkgsync.lock: EOF while parsing a value at line 214 column 0"),
    ("natural", "how did we stop the lock file getting mangled by concurrent runs?"),
    ("paraphrase", "simultaneous CI legs garbled our frozen third-party inventory — what cured that?"),
    ("identifier", "write_lockfile_atomic"),
    ("phrase", '"rename is atomic on the same filesystem"'),
    ("keyword", "lockfile corruption parallel"),
    ("temporal-ish", "in September CI jobs kept tripping over a half-written lock file, what was the fix?"),
], decoys=[
    D(T("git merge conflict in pkgsync.lock every time two PRs add packages",
        write(".gitattributes", "pkgsync.lock merge=pkgsync-lock\n"),
        answer="Added a custom merge driver (`pkgsync merge-lock`) registered via `.gitattributes`: it unions both "
               "sides and re-resolves. Conflicts in the lock file resolve themselves now.",
        title="Merge driver for lockfile"),
      qs=[("natural", "how do we avoid merge conflicts in the lock file?")]),
]))

add(S("pkgsync-windows", "pkgsync", when=(185, 215), turns=[
    T("windows runner fails on the first command:\n\nError: The filename, directory name, or volume label syntax is incorrect. (os error 123)\n"
      "  path: C:\\Users\\runneradmin\\AppData\\Local\\pkgsync\\cache/registry/index/crates.io-6f17d22bba15001f",
      grep("format!(\"{}/", '''src/config/paths.rs:40:        PathBuf::from(format!("{}/registry/index/{}", self.cache.display(), registry.dir_name()))
src/config/paths.rs:52:        PathBuf::from(format!("{}/registry/src/{}", self.cache.display(), registry.dir_name()))'''),
      edit("src/config/paths.rs", "        PathBuf::from(format!(\"{}/registry/index/{}\", self.cache.display(), registry.dir_name()))",
           "        self.cache.join(\"registry\").join(\"index\").join(registry.dir_name())"),
      run("cargo test --target x86_64-pc-windows-gnu paths 2>&1 | tail -2", "test config::paths::tests::index_path_windows ... ok\ntest result: ok. 4 passed; 0 failed"),
      answer="`CacheLayout::index_path` built paths with `format!(\"{}/...\")`. Mixing forward slashes into a "
             "`\\\\?\\`-prefixed (verbatim) Windows path makes it invalid, hence os error 123. All paths in "
             "`src/config/paths.rs` are built with `PathBuf::join` now, and there's a Windows job in CI.",
      title="Fix Windows cache paths"),
], qs=[
    ("error", "The filename, directory name, or volume label syntax is incorrect. (os error 123)"),
    ("natural", "why did the package tool fail on Windows runners?"),
    ("paraphrase", "why did our syncer choke on Microsoft hosts over clashing separators?"),
    ("identifier", "CacheLayout::index_path"),
    ("temporal-ish", "in the spring the Windows build broke on file paths, what was the fix?"),
]))
