"""`deja restore` (the text an agent's edit replaced, from the recorded `edit`
records) and `deja share` (a session as sanitised markdown for a colleague),
run as the real command against a temp HOME whose store was indexed without
redaction, so both must redact on the way out."""

from __future__ import annotations

import json

import pytest

from conftest import Home
from handover_home import OLD_TOTAL, S_NEW, S_OLD, build, run_in

SECRET = "sk_live_51HxQmR2eZvKYlo2C8f3d9a7b6c5e4d3"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("restore"))
    project = build(home)
    return home, project


# --------------------------------------------------------------------------- restore


def test_restore_lists_the_edits_to_the_file_newest_first(store):
    home, project = store
    proc = run_in(home, project, "restore", "src/cart.py")
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("  1  2026-03-03 10:00  claude " + S_NEW)
    assert lines[1].startswith("  2  2026-03-01 10:00  claude " + S_OLD)
    assert "(holds redacted values)" in lines[0] and "redacted" not in lines[1]
    assert SECRET not in proc.stdout
    assert "--edit N" in proc.stderr


def test_restore_edit_prints_the_text_it_replaced(store):
    home, project = store
    assert run_in(home, project, "restore", "src/cart.py", "--edit", "2").stdout == OLD_TOTAL
    # the same file named by its absolute path, from anywhere
    assert run_in(home, home.root, "restore", str(project / "src" / "cart.py"), "--edit", "2").stdout == OLD_TOTAL
    newest = run_in(home, project, "restore", "src/cart.py", "--edit", "1").stdout
    assert newest.startswith("ROUNDING = 'half-up'\n") and SECRET not in newest and "[redacted:" in newest


def test_restore_json_carries_every_edit_with_its_session(store):
    home, project = store
    got = json.loads(run_in(home, project, "restore", "src/cart.py", "--json").stdout)
    assert got["path"] == str(project / "src" / "cart.py")
    assert [e["n"] for e in got["edits"]] == [1, 2]
    assert [e["session"]["id"] for e in got["edits"]] == [S_NEW, S_OLD]
    assert got["edits"][1]["text"] == OLD_TOTAL and got["edits"][1]["lines"] == 3
    assert [e["redacted"] for e in got["edits"]] == [True, False]


def test_restore_out_writes_a_new_file_and_never_over_one(store, tmp_path):
    home, project = store
    original = (project / "src" / "cart.py").read_bytes()
    dest = tmp_path / "cart.before.py"
    proc = run_in(home, project, "restore", "src/cart.py", "--edit", "2", "-o", str(dest))
    assert dest.read_text() == OLD_TOTAL and proc.stdout == ""
    # an existing file, the written one or the original itself, is refused and left as it was
    again = run_in(home, project, "restore", "src/cart.py", "--edit", "1", "-o", str(dest), check=False)
    assert again.returncode == 1 and dest.read_text() == OLD_TOTAL
    assert again.stderr == f"deja: {dest} exists; restore writes only to a new file (name another with -o)\n"
    over = run_in(home, project, "restore", "src/cart.py", "--edit", "2", "-o", "src/cart.py", check=False)
    assert over.returncode == 1 and over.stderr.count("\n") == 1 and "never writes over the original" in over.stderr
    assert (project / "src" / "cart.py").read_bytes() == original


def test_restore_of_a_file_no_edit_touched_says_so(store):
    home, project = store
    proc = run_in(home, project, "restore", "src/other.py")
    assert proc.stdout == "" and proc.stderr == "deja: no recorded edit replaced text in other.py\n"
    bad = run_in(home, project, "restore", "src/cart.py", "--edit", "9", check=False)
    assert bad.returncode == 1
    assert bad.stderr == "deja: --edit takes a number from 1 to 2 (the edits to cart.py, newest first)\n"


# --------------------------------------------------------------------------- share


def test_share_writes_a_sanitised_markdown_digest(store):
    home, project = store
    md = run_in(home, project, "share", S_NEW[:13]).stdout
    assert md.startswith("# drop the hard-coded stripe key from cart.py\n")
    assert f"claude session `{S_NEW}`" in md and "project work/shop" in md and "2026-03-03 10:00 UTC" in md
    for section in ("## Conversation", "## Outcome", "## Commands run", "## Files touched"):
        assert section in md
    assert "- **person:** drop the hard-coded stripe key from cart.py" in md
    assert "`python -m pytest -q tests/test_cart.py`" in md
    # redacted again on the way out (the store holds the key: indexed with DEJA_NO_REDACT=1),
    # and the home folder is not given away
    assert SECRET not in md and "api_key=[redacted:" in md
    assert str(home.home) not in md and "`~/work/shop/src/cart.py`" in md


def test_share_names_the_decision_and_writes_to_a_file(store, tmp_path):
    home, project = store
    out = tmp_path / "share.md"
    proc = run_in(home, home.root, "share", f"claude:{S_OLD}", "-o", str(out))
    md = out.read_text()
    assert proc.stdout == "" and md.startswith("# make cart totals round to cents\n")
    assert "The fix: totals are rounded to cents in total()" in md


def test_share_of_an_unknown_id_is_one_line(store):
    home, _ = store
    proc = run_in(home, home.root, "share", "ffffffff", check=False)
    assert proc.returncode == 1 and proc.stderr == "deja: no session matches id 'ffffffff'\n"
