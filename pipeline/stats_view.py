"""What `deja stats` and `deja view` draw from the numbers in deja.queries.stats:
a terminal heatmap and card, a self-contained SVG card, an HTML timeline and
the whole memory as one HTML page. Nothing here reads the store."""

from __future__ import annotations

import html
import json
from datetime import date, timedelta

from deja.pipeline.cli_common import elide, term_width
from deja.queries.stats import VIEW_MESSAGES_PER_SESSION, VIEW_TEXT_CAP
from deja.stages.display import counted, local_day, plural


def heat_grid(days: dict[str, int], today: date | None = None, weeks: int = 52) -> tuple[list[date], list[list[int]]]:
    """GitHub-style: columns are weeks (Monday first), oldest left; the last column holds today."""
    today = today or date.today()
    last_monday = today - timedelta(days=today.weekday())
    first = last_monday - timedelta(weeks=weeks - 1)
    cols = [first + timedelta(weeks=i) for i in range(weeks)]
    grid = [[-1] * weeks for _ in range(7)]
    for c, monday in enumerate(cols):
        for r in range(7):
            d = monday + timedelta(days=r)
            if d <= today:
                grid[r][c] = days.get(d.isoformat(), 0)
    return cols, grid


def _levels(grid: list[list[int]]) -> list[int]:
    vals = sorted(v for row in grid for v in row if v > 0)
    if not vals:
        return [1, 1, 1]
    q = lambda f: vals[min(len(vals) - 1, int(f * len(vals)))]  # noqa: E731
    return [q(0.25), q(0.5), q(0.75)]


def _level(v: int, cuts: list[int]) -> int:
    if v <= 0:
        return 0
    return 1 + sum(1 for c in cuts if v > c)


def shade_ranges(cuts: list[int]) -> list[str]:
    """What each shade of the heatmap stands for, in messages a day: "0",
    then each level's range ("1–3", "4–9", "26+"); "" for a level no day can
    reach (few distinct counts make two cuts equal)."""
    lows = [1, cuts[0] + 1, cuts[1] + 1, cuts[2] + 1]
    highs = [cuts[0], cuts[1], cuts[2], None]
    out = ["0"]
    for lo, hi in zip(lows, highs):
        out.append(f"{lo:,}+" if hi is None else "" if hi < lo else f"{lo:,}" if hi == lo else f"{lo:,}–{hi:,}")
    if len(set(cuts)) == 1 and out[4] and out[1]:  # one distinct count: every active day is level 1
        out[2:] = ["", "", ""]
    return out


def month_marks(months: list[str]) -> str:
    """One letter per monthly bar ("2026-01" → "J"), under the bars."""
    return "".join("JFMAMJJASOND"[int(m[5:7]) - 1] if len(m) >= 7 and m[5:7].isdigit() else " " for m in months)


def heatmap_text(days: dict[str, int], color: bool, today: date | None = None) -> list[str]:
    cols, grid = heat_grid(days, today)
    cuts = _levels(grid)
    glyph = ["·", "░", "▒", "▓", "█"]
    shades = ["\033[38;5;240m", "\033[38;5;22m", "\033[38;5;28m", "\033[38;5;34m", "\033[38;5;46m"]
    head = [" "] * len(cols)
    last = None
    for i, monday in enumerate(cols):
        if monday.month != last and i + 3 <= len(cols):
            label = monday.strftime("%b")
            for j, ch in enumerate(label):
                if i + j < len(head):
                    head[i + j] = ch
            last = monday.month
    lines = ["    " + "".join(head)]
    for r, name in enumerate(["Mon", "", "Wed", "", "Fri", "", "Sun"]):
        cells = []
        for v in grid[r]:
            if v < 0:
                cells.append(" ")
                continue
            lv = _level(v, cuts)
            cells.append(f"{shades[lv]}{glyph[lv]}\033[0m" if color else glyph[lv])
        lines.append(f"{name:<4}" + "".join(cells))
    lines.append("    less " + " ".join(glyph) + " more")
    lines.append("    " + "  ".join(f"{g} {r}" for g, r in zip(glyph, shade_ranges(cuts)) if r) + " messages a day")
    return lines


def _fmt(n: int) -> str:
    return f"{n:,}"


def _n(n: int, word: str) -> str:
    """"1 session", "1,204 sessions"."""
    return f"{n:,} {plural(n, word)}"


def redaction_text(red: dict) -> str:
    """`deja stats --redaction`: a kind per row, a column per agent."""
    if not red["total"]:
        return ""
    harnesses = list(red["by_harness"])
    width = max(len("kind"), *(len(k) for k in red["by_kind"]))
    cols = [max(len(h), 6) for h in harnesses]
    head = "kind".ljust(width) + "  " + "total".rjust(6) + "".join("  " + h.rjust(c) for h, c in zip(harnesses, cols))
    lines = [head]
    for kind, n in red["by_kind"].items():
        lines.append(kind.ljust(width) + "  " + str(n).rjust(6) + "".join(
            "  " + str(red["by_harness"][h].get(kind, 0)).rjust(c) for h, c in zip(harnesses, cols)))
    lines.append(f"{counted(red['total'], 'secret')} redacted before they were written")
    return "\n".join(lines) + "\n"


def stats_text(st: dict, color: bool) -> str:
    from deja.stages.display import sanitize_display

    width = term_width()
    out = []
    dr = st.get("date_range")
    span = f", {dr['start']} → {dr['end']}" if dr else ""
    out.append(f"{_n(st['total_sessions'], 'session')}, {_n(st['total_messages'], 'message')}{span}")
    if st["harnesses"]:
        out.append("  " + "  ".join(f"{h['harness']} {_n(h['sessions'], 'session')} / {_n(h['messages'], 'message')}"
                                    for h in st["harnesses"]))
    out.append("")
    out.append("activity, last 52 weeks (messages per day)")
    out.extend(heatmap_text(st["_days"], color))
    out.append("")
    if st["monthly"]:
        top = max(st["monthly"], key=lambda m: m["messages"])
        out.append(f"monthly   {st['sparkline']}  messages per month, {st['monthly'][0]['month']} … "
                   f"{st['monthly'][-1]['month']}; most {_fmt(top['messages'])} in {top['month']}")
        out.append("          " + month_marks([m["month"] for m in st["monthly"]]))
    if st.get("busiest_day"):
        out.append(f"busiest   {st['busiest_day']['date']} ({_n(st['busiest_day']['messages'], 'message')})")
    ls = st.get("longest_session")
    if ls:
        title = sanitize_display(" ".join((ls["title"] or "").split())) or "(untitled)"
        out.append(elide(f"longest   {ls['harness']} {ls['id'][:12]} {ls['project']} — {title} "
                          f"({_n(ls['messages'], 'message')})", width))
    if st["top_projects"]:
        out.append("")
        out.append("top projects")
        for p in st["top_projects"][:5]:
            out.append(f"  {p['sessions']:>5}  {sanitize_display(p['project'])}")
    if st["_commands"]:
        out.append("")
        out.append("top commands")
        for c, n in st["_commands"]:
            out.append(elide(f"  {n:>5}  {sanitize_display(c)}", width))
    if st["_files"]:
        out.append("")
        out.append("top files")
        for f, n in st["_files"]:
            out.append(elide(f"  {n:>5}  {sanitize_display(f)}", width))
    r = st["recall"]
    out.append("")
    mcp = f" ({r['mcp_calls']} through MCP)" if r.get("mcp_calls") else ""
    out.append(f"recall (14 days): {r['recalls_served']} recalls served{mcp}, {r['injections']} injections, "
               f"{r['dejavu_moments']} déjà-vu moments")
    rc = st.get("recovery") or {}
    if rc.get("samples") or rc.get("pending") or rc.get("unmeasured"):
        measured = (f"median {rc['median']}, p75 {rc['p75']} raw tool calls from capture to the first edit "
                    f"({rc['samples']} sample{'s' if rc['samples'] != 1 else ''})" if rc.get("samples") else "no samples yet")
        out.append(f"compaction recovery: {measured}; {rc.get('pending', 0)} pending, "
                   f"{rc.get('unmeasured', 0)} unmeasured")
    if st.get("repeat_questions"):
        out.append(f"repeat questions: {st['repeat_questions']} asked in two or more sessions")
    return "\n".join(out) + "\n"


def card_lines(st: dict) -> list[tuple[str, str]]:
    """(label, value) rows shared by the terminal card and the SVG card."""
    dr = st.get("date_range")
    rows = [("sessions", _fmt(st["total_sessions"])), ("messages", _fmt(st["total_messages"]))]
    if dr:
        rows.append(("active", f"{dr['start']} → {dr['end']}"))
    if st["harnesses"]:
        rows.append(("agents", ", ".join(h["harness"] for h in st["harnesses"][:4])))
    if st["top_projects"]:
        rows.append(("top project", st["top_projects"][0]["project"]))
    if st.get("busiest_day"):
        rows.append(("busiest day", f"{st['busiest_day']['date']} ({_fmt(st['busiest_day']['messages'])})"))
    ls = st.get("longest_session")
    if ls:
        rows.append(("longest", f"{_n(ls['messages'], 'message')} ({ls['harness']})"))
    return rows


def card_text(st: dict) -> str:
    from deja.stages.display import sanitize_display

    rows = [(k, sanitize_display(v)) for k, v in card_lines(st)]
    inner = 44
    rows = [(k, elide(v, inner - 16)) for k, v in rows]
    out = ["╭" + "─" * (inner + 2) + "╮", "│ " + "deja · memory".ljust(inner) + " │", "├" + "─" * (inner + 2) + "┤"]
    for k, v in rows:
        out.append("│ " + f"{k:<14}{v}".ljust(inner) + " │")
    if st["sparkline"]:
        keep = inner - 14
        out.append("│ " + ("monthly       " + st["sparkline"][-keep:]).ljust(inner) + " │")
        out.append("│ " + ("              " + month_marks([m["month"] for m in st["monthly"]])[-keep:]).ljust(inner) + " │")
    out.append("╰" + "─" * (inner + 2) + "╯")
    return "\n".join(out) + "\n"


def _x(s) -> str:
    return html.escape(str(s), quote=True)


def card_svg(st: dict) -> str:
    """A self-contained SVG card (no external fonts or images): numbers, then
    messages per month as bars with their months under them, then messages
    per day as a heatmap with its months above and a legend for the shades."""
    from deja.stages.display import sanitize_display

    W, pad = 480, 24
    rows = [(k, elide(sanitize_display(v), 38)) for k, v in card_lines(st)]
    line_h = 22
    top = 64
    font = 'font-family="system-ui, sans-serif"'
    mute = 'fill="#8b949e"'
    bars_cap = top + line_h * len(rows) + 16
    bars_y = bars_cap + 8
    bars_h = 40
    heat_cap = bars_y + bars_h + 44
    heat_y = heat_cap + 22
    cell = 7
    legend_y = heat_y + 7 * cell + 16
    H = legend_y + pad
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
        f'aria-label="deja memory stats">',
        "<title>deja memory stats</title>",
        f'<rect id="card" x="1" y="1" width="{W - 2}" height="{H - 2}" rx="12" fill="#0d1117" stroke="#30363d" stroke-width="2"/>',
        f'<text x="{pad}" y="40" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="20" '
        f'font-weight="700" fill="#e6edf3">deja · memory</text>',
    ]
    for i, (k, v) in enumerate(rows):
        y = top + i * line_h + 14
        parts.append(f'<text class="row" x="{pad}" y="{y}" {font} font-size="14" {mute}>{_x(k)}</text>')
        parts.append(f'<text class="row" x="{pad + 120}" y="{y}" {font} font-size="14" '
                     f'fill="#e6edf3">{_x(v)}</text>')
    months = st["monthly"][-24:]
    if months:
        values = [m["messages"] for m in months]
        top_v = max(values) or 1
        peak = max(months, key=lambda m: m["messages"])
        parts.append(f'<text class="caption" x="{pad}" y="{bars_cap}" {font} font-size="11" {mute}>messages per month '
                     f'({_x(months[0]["month"])} … {_x(months[-1]["month"])}; most {_fmt(peak["messages"])} in '
                     f'{_x(peak["month"])})</text>')
        bw = (W - 2 * pad) / len(months)
        for i, (m, v) in enumerate(zip(months, values)):
            h = max(2.0, bars_h * v / top_v) if v else 1.0
            x = pad + i * bw
            parts.append(f'<rect x="{x + 1:.1f}" y="{bars_y + bars_h - h:.1f}" width="{max(1.0, bw - 2):.1f}" '
                         f'height="{h:.1f}" fill="#39d353"><title>{_x(m["month"])}: {_fmt(v)} messages</title></rect>')
            mark = month_marks([m["month"]])
            parts.append(f'<text class="month" x="{x + bw / 2:.1f}" y="{bars_y + bars_h + 12}" text-anchor="middle" '
                         f'{font} font-size="9" {mute}>{_x(mark)}</text>')
            if i == 0 or m["month"].endswith("-01"):
                parts.append(f'<text class="year" x="{x + bw / 2:.1f}" y="{bars_y + bars_h + 23}" '
                             f'text-anchor="middle" {font} font-size="9" {mute}>{_x(m["month"][:4])}</text>')
    cols, grid = heat_grid(st["_days"])
    cuts = _levels(grid)
    shades = ["#161b22", "#0e4429", "#006d32", "#26a641", "#39d353"]
    step = cell + 1.2
    parts.append(f'<text class="caption" x="{pad}" y="{heat_cap}" {font} font-size="11" {mute}>messages per day, '
                 'last 52 weeks</text>')
    last = None
    for c, monday in enumerate(cols):
        if monday.month != last and c + 3 <= len(cols):
            parts.append(f'<text class="month" x="{pad + c * step:.1f}" y="{heat_y - 4}" {font} font-size="9" '
                         f'{mute}>{monday.strftime("%b")}</text>')
            last = monday.month
    for c in range(len(grid[0])):
        for r in range(7):
            v = grid[r][c]
            if v < 0:
                continue
            parts.append(f'<rect x="{pad + c * step:.1f}" y="{heat_y + r * cell}" width="{cell - 1}" '
                         f'height="{cell - 1}" fill="{shades[_level(v, cuts)]}"/>')
    x = pad
    parts.append(f'<text class="legend" x="{x}" y="{legend_y + 6}" {font} font-size="9" {mute}>less</text>')
    x += 22
    for shade, span in zip(shades, shade_ranges(cuts)):
        if not span:
            continue
        parts.append(f'<rect class="legend" x="{x}" y="{legend_y - 1}" width="{cell}" height="{cell}" '
                     f'fill="{shade}"><title>{_x(span)} messages a day</title></rect>')
        parts.append(f'<text class="legend" x="{x + cell + 3}" y="{legend_y + 6}" {font} font-size="9" '
                     f'{mute}>{_x(span)}</text>')
        x += cell + 10 + 6 * len(span)
    parts.append(f'<text class="legend" x="{x}" y="{legend_y + 6}" {font} font-size="9" {mute}>more '
                 '(messages a day)</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


_PAGE_CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--mute:#656d76;--line:#d0d7de;--acc:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#8b949e;--line:#30363d;--acc:#58a6ff}}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;background:var(--bg);color:var(--fg);margin:0;padding:1.5rem;max-width:70rem}
h1{font-size:1.4rem;margin:0 0 .3rem}.mute{color:var(--mute)}
.bar{display:flex;gap:.6rem;flex-wrap:wrap;align-items:center;margin:1rem 0;position:sticky;top:0;background:var(--bg);padding:.5rem 0;border-bottom:1px solid var(--line)}
input,select{font:inherit;padding:.3rem .5rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
input[type=search]{flex:1;min-width:14rem}
.s{border:1px solid var(--line);border-radius:8px;margin:.6rem 0;padding:.2rem .8rem}
.s summary{cursor:pointer;padding:.4rem 0}.s summary b{font-weight:600}
.tag{font-size:.8rem;border:1px solid var(--line);border-radius:1rem;padding:0 .45rem;margin-right:.3rem;color:var(--mute)}
.lc-rejected{color:#cf222e}.lc-accepted{color:#1a7f37}
.m{border-top:1px dashed var(--line);padding:.4rem 0;white-space:pre-wrap;word-wrap:break-word;font-size:.9rem}
.m .r{font-weight:600;color:var(--acc);margin-right:.4rem}.note{font-size:.85rem}
.day h2{font-size:1rem;margin:1.2rem 0 .3rem;border-bottom:1px solid var(--line)}
"""


def _html_page(title: str, body: str, script: str = "") -> str:
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            # nothing on this page may reach the network: no external loads, no connections
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{_x(title)}</title><style>{_PAGE_CSS}</style></head><body>{body}"
            + (f"<script>{script}</script>" if script else "") + "</body></html>\n")


def stats_html(st: dict) -> str:
    """A browsable timeline: the card, then sessions day by day, newest first
    (``st["_timeline"]``, from deja.pipeline.api.stats(timeline=True))."""
    from deja.stages.display import sanitize_display

    rows = st.get("_timeline") or []
    body = [f"<h1>deja · timeline</h1><p class=\"mute\">{_n(st['total_sessions'], 'session')}, "
            f"{_n(st['total_messages'], 'message')}</p>",
            f"<figure id=\"card\">{card_svg(st)}</figure>"]
    day = None
    for h, sid, proj, title, n, t in rows:
        d = local_day(t) or "undated"
        if d != day:
            if day is not None:
                body.append("</ul></section>")
            body.append(f"<section class=\"day\"><h2>{_x(d)}</h2><ul>")
            day = d
        body.append(f"<li><span class=\"tag\">{_x(h)}</span><b>{_x(sanitize_display(title or '(untitled)'))}</b> "
                    f"<span class=\"mute\">{_x(proj or '')} · {_n(int(n or 0), 'message')} · {_x(sid)}</span></li>")
    if day is not None:
        body.append("</ul></section>")
    return _html_page("deja timeline", "".join(body))


_VIEW_JS = r"""
const data = JSON.parse(document.getElementById('deja-data').textContent);
const $ = (s) => document.querySelector(s);
const list = $('#sessions'), q = $('#q'), fh = $('#harness'), fp = $('#project'), count = $('#count');
function opt(sel, values) { for (const v of values) { const o = document.createElement('option'); o.value = v; o.textContent = v; sel.appendChild(o); } }
opt(fh, [...new Set(data.sessions.map(s => s.harness))].sort());
opt(fp, [...new Set(data.sessions.map(s => s.project).filter(Boolean))].sort());
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
function card(s) {
  const d = el('details', 's'); d.dataset.key = s.harness + ':' + s.id;
  const sum = el('summary'); sum.appendChild(el('span', 'tag', s.harness)); sum.appendChild(el('b', '', s.title || '(untitled)'));
  sum.appendChild(el('span', 'mute', '  ' + [s.project, s.date, s.messages + ' messages', s.id].filter(Boolean).join(' · ')));
  if (s.lifecycle) sum.appendChild(el('span', 'lc-' + s.lifecycle, '  [' + s.lifecycle + (s.lifecycle_note ? ': ' + s.lifecycle_note : '') + ']'));
  d.appendChild(sum);
  for (const m of s.m) { const p = el('div', 'm'); p.appendChild(el('span', 'r', m[0])); p.appendChild(document.createTextNode(m[1])); d.appendChild(p); }
  if (s.more) d.appendChild(el('p', 'mute note', s.more + ' more messages not included here (deja show ' + s.harness + ':' + s.id + ' prints them all)'));
  return d;
}
function render() {
  const words = q.value.toLowerCase().split(/\s+/).filter(Boolean), h = fh.value, p = fp.value;
  list.textContent = ''; let n = 0;
  for (const s of data.sessions) {
    if (h && s.harness !== h) continue;
    if (p && s.project !== p) continue;
    if (words.length && !words.every(w => s.hay.includes(w))) continue;
    if (n < 500) list.appendChild(card(s));
    n++;
  }
  count.textContent = n + ' of ' + data.sessions.length + ' sessions' + (n > 500 ? ' (first 500 shown; narrow the search)' : '');
}
for (const s of data.sessions) s.hay = [s.title, s.project, s.id, s.harness, ...s.m.map(m => m[1])].join('\n').toLowerCase();
// a link can carry a filter: view.html#q=words&harness=claude&project=src/shop
const hp = new URLSearchParams(location.hash.slice(1));
if (hp.get('q')) q.value = hp.get('q'); if (hp.get('harness')) fh.value = hp.get('harness'); if (hp.get('project')) fp.value = hp.get('project');
q.addEventListener('input', render); fh.addEventListener('change', render); fp.addEventListener('change', render);
render();
"""


def view_html(sessions: list[dict]) -> str:
    """The whole memory as one self-contained HTML file: data inline as JSON,
    rendered by inline JS (``sessions``: deja.queries.stats.view_sessions)."""
    payload = json.dumps({"sessions": sessions}, ensure_ascii=False)
    payload = payload.replace("</", "<\\/").replace("<!--", "<\\!--")  # safe inside <script>
    body = (
        "<h1>deja · memory</h1>"
        f"<p class=\"mute\">{_n(len(sessions), 'session')} from this machine's agent transcripts and notes. "
        f"Up to {VIEW_MESSAGES_PER_SESSION} messages per session are included (each cut at {VIEW_TEXT_CAP} "
        "characters); commands, files and tool output are left out. This file makes no network requests.</p>"
        "<div class=\"bar\"><input id=\"q\" type=\"search\" placeholder=\"search titles, projects, messages…\" autofocus>"
        "<select id=\"harness\"><option value=\"\">all harnesses</option></select>"
        "<select id=\"project\"><option value=\"\">all projects</option></select>"
        "<span id=\"count\" class=\"mute\"></span></div><main id=\"sessions\"></main>"
        f"<script type=\"application/json\" id=\"deja-data\">{payload}</script>"
        "<noscript><p>Turn on JavaScript to browse; the data is in the deja-data block of this file.</p></noscript>"
    )
    return _html_page("deja memory", body, _VIEW_JS)
