"""The stats card (SVG), the stats timeline and `deja view` (HTML), opened in a real
headless browser (Debian's chromium): content from the rendered DOM, and the card's
layout from a screenshot read with a small stdlib PNG decoder."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import claude_assistant, claude_user, write_jsonl

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


def browser(tmp: Path, *args: str) -> str:
    ud = tmp / "chromium-profile"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={ud}", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def read_png(path: Path) -> tuple[int, int, list[list[tuple[int, int, int]]]]:
    """8-bit RGB/RGBA non-interlaced PNG → rows of RGB pixels (stdlib only)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


@pytest.fixture
def rendered(home, tmp_path):
    home.env["XDG_DATA_HOME"] = str(home.root / "data")
    for i, (sid, cwd, ask, day) in enumerate([
        ("sess-shop-1", "/home/dev/src/shop", "why does checkout 500 on empty carts?", "2026-03-02"),
        ("sess-api-1", "/home/dev/work/api", "how do we rotate the webhook secret?", "2026-02-10"),
    ]):
        write_jsonl(home.claude_file(sid, cwd), [
            claude_user(sid, ask, f"{day}T10:00:00Z", f"{sid}-u", cwd),
            claude_assistant(sid, [{"type": "text", "text": f"answer {i} <script>alert(1)</script>"}],
                             f"{day}T10:01:00Z", f"{sid}-a", msg_id=f"{sid}-m", cwd=cwd, parent=f"{sid}-u"),
        ])
    home.run("index")
    home.run("remember", "pgbouncer pool size must be 40", "--project", "src/shop")
    out = tmp_path / "out"
    home.run("stats", "--card", str(out / "card.svg"), "--html", str(out / "timeline.html"))
    home.run("view", "--out", str(out / "view.html"), "--no-open")
    return home, out


def _no_network(text: str) -> None:
    # the only URL allowed is the SVG namespace name (an identifier, never fetched)
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"'<>)]*", text))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"<(?:link|img|iframe|object|embed)\b", text, re.I)


def test_svg_card_is_self_contained_and_renders(rendered, tmp_path):
    _, out = rendered
    svg = (out / "card.svg").read_text()
    _no_network(svg)
    assert "@font-face" not in svg and "<image" not in svg
    dom = browser(tmp_path, "--dump-dom", (out / "card.svg").as_uri())
    assert "deja · memory" in dom and ">sessions<" in dom and ">3<" in dom


def test_svg_card_layout_in_a_screenshot(rendered, tmp_path):
    _, out = rendered
    png = tmp_path / "card.png"
    browser(tmp_path, "--force-device-scale-factor=1", "--hide-scrollbars", "--window-size=640,560",
            f"--screenshot={png}", (out / "card.svg").as_uri())
    w, h, px = read_png(png)
    page = px[h - 1][w - 1]

    def is_card(p):  # the card's fill, #0d1117
        return abs(p[0] - 13) < 12 and abs(p[1] - 17) < 12 and abs(p[2] - 23) < 12

    card = [(x, y) for y in range(0, h, 2) for x in range(0, w, 2) if is_card(px[y][x])]
    assert len(card) > 20000, "the card region is drawn"
    x0, x1 = min(x for x, _ in card), max(x for x, _ in card)
    y0, y1 = min(y for _, y in card), max(y for _, y in card)
    assert 400 <= x1 - x0 <= 490 and 250 <= y1 - y0 <= 520
    # light text pixels: rows of text, all inside the card with a margin
    # (the card's anti-aliased rounded edge blends with the page: look 4px inside it)
    text = [(x, y) for y in range(y0 + 4, y1 - 3) for x in range(x0 + 4, x1 - 3) if sum(px[y][x]) > 330]
    assert text, "text is drawn on the card"
    bands, last = 0, -10
    for y in sorted({y for _, y in text}):
        if y > last + 2:
            bands += 1
        last = y
    assert bands >= 7, f"title and stat rows are separate lines of text ({bands} bands)"
    assert min(x for x, _ in text) >= x0 + 10 and max(x for x, _ in text) <= x1 - 10
    assert min(y for _, y in text) >= y0 + 10 and max(y for _, y in text) <= y1 - 10
    # nothing is drawn outside the card
    outside = [(x, y) for y in range(0, h, 3) for x in range(0, w, 3)
               if (x < x0 - 3 or x > x1 + 3 or y < y0 - 3 or y > y1 + 3) and px[y][x] != page]
    assert not outside


def test_stats_timeline_html(rendered, tmp_path):
    _, out = rendered
    text = (out / "timeline.html").read_text()
    _no_network(text)
    dom = browser(tmp_path, "--dump-dom", (out / "timeline.html").as_uri())
    assert "deja · timeline" in dom
    days = re.findall(r'<section class="day"><h2>([^<]+)</h2>', dom)
    assert days[:2] == ["2026-03-02", "2026-02-10"] or days[1:3] == ["2026-03-02", "2026-02-10"], days
    assert "why does checkout 500 on empty carts?" in dom and "work/api" in dom


def test_view_is_one_self_contained_file_with_search_and_filters(rendered, tmp_path):
    home, out = rendered
    page = out / "view.html"
    text = page.read_text()
    _no_network(text)
    assert "<script>alert(1)</script>" not in text, "transcript text cannot break out of the data block"
    assert "Content-Security-Policy" in text
    def shown(dom: str) -> str:  # the rendered list, not the inline data block
        return dom[dom.index('<main id="sessions">'):dom.index("</main>")]

    dom = browser(tmp_path, "--dump-dom", page.as_uri())
    assert dom.count('class="s"') == 3
    assert "3 of 3 sessions" in dom and "pgbouncer pool size must be 40" in dom
    assert "<option value=\"deja\">deja</option>" in dom and "<option value=\"src/shop\">src/shop</option>" in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom, "messages render as text"
    dom = browser(tmp_path, "--dump-dom", page.as_uri() + "#q=webhook%20secret")
    assert "1 of 3 sessions" in dom and "rotate the webhook secret" in shown(dom) and "empty carts" not in shown(dom)
    dom = browser(tmp_path, "--dump-dom", page.as_uri() + "#harness=deja")
    assert "1 of 3 sessions" in dom and "pgbouncer" in shown(dom) and "webhook" not in shown(dom)
    dom = browser(tmp_path, "--dump-dom", page.as_uri() + "#project=src/shop")
    assert "2 of 3 sessions" in dom
    # default location: beside the index; piped, it never tries to open a browser
    proc = home.run("view")
    assert Path(proc.stdout.strip()) == home.index / "view.html" and (home.index / "view.html").exists()
