"""Answers from the work itself, through the real `deja` command: blame (and blame
path:line against a real git history), files, how, fix, friction; and the
failure-line rule they share (stages/failures.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl
from deja.stages import failures as fl

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def sid(n: int) -> str:
    return f"7a7a0000-0000-4000-8000-{n:012d}"


class Turns:
    """A Claude Code session built turn by turn, each at its own time."""

    def __init__(self, n: int, cwd: str, day: str = "2026-03-02", hour: int = 10):
        self.n, self.cwd, self.day, self.hour = n, cwd, day, hour
        self.s = sid(n)
        self.rows: list[dict] = []
        self.minute = 0
        self.last_tool = None

    def _ts(self, minute: int | None) -> str:
        m = self.minute if minute is None else minute
        self.minute = m + 1
        return f"{self.day}T{self.hour + m // 60:02d}:{m % 60:02d}:00Z"

    def _uid(self, kind: str) -> str:
        return f"{kind}{self.n}-{len(self.rows)}"

    def user(self, text: str, minute: int | None = None):
        self.rows.append(claude_user(self.s, text, self._ts(minute), self._uid("u"), cwd=self.cwd))
        return self

    def say(self, text: str, minute: int | None = None):
        self.rows.append(claude_assistant(self.s, [{"type": "text", "text": text}], self._ts(minute), self._uid("a"),
                                          msg_id=self._uid("m"), cwd=self.cwd))
        return self

    def tool(self, name: str, inp: dict, minute: int | None = None):
        self.last_tool = self._uid("t")
        self.rows.append(claude_assistant(self.s, [{"type": "tool_use", "id": self.last_tool, "name": name, "input": inp}],
                                          self._ts(minute), self._uid("a"), msg_id=self._uid("m"), cwd=self.cwd))
        return self

    def bash(self, cmd: str, output: str = "ok", code: int = 0, minute: int | None = None):
        self.tool("Bash", {"command": cmd}, minute)
        text = f"Exit code {code}\n{output}" if code else output
        return self.output(text, is_error=bool(code))

    def output(self, text: str, is_error: bool = False, minute: int | None = None):
        row = claude_user(self.s, "", self._ts(minute), self._uid("o"), cwd=self.cwd)
        row["message"] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": self.last_tool or "x",
                                                       "content": text, "is_error": is_error}]}
        self.rows.append(row)
        return self

    def edit(self, path: str, old: str, new: str, minute: int | None = None):
        return self.tool("Edit", {"file_path": path, "old_string": old, "new_string": new}, minute)

    def read(self, path: str, minute: int | None = None):
        return self.tool("Read", {"file_path": path}, minute)

    def write(self, home: Home) -> str:
        write_jsonl(home.claude_file(self.s, cwd=self.cwd), self.rows)
        return self.s


def codex_session(home: Home, session: str, cwd: str, steps: list[tuple[str, str]], ts: str = "2026-03-04T09:00:00"):
    rows = [{"timestamp": ts + ".000Z", "type": "session_meta",
             "payload": {"id": session, "cwd": cwd, "cli_version": "0.118.0", "git": {"branch": "main"}}}]
    for i, (kind, text) in enumerate(steps):
        t = f"{ts[:-2]}{10 + i:02d}.000Z"
        if kind == "user":
            rows.append({"timestamp": t, "type": "response_item", "payload": {
                "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}})
        elif kind == "shell":
            rows.append({"timestamp": t, "type": "response_item", "payload": {
                "type": "function_call", "name": "exec_command", "call_id": f"c{i}",
                "arguments": json.dumps({"cmd": text})}})
        elif kind == "output":
            rows.append({"timestamp": t, "type": "response_item", "payload": {
                "type": "function_call_output", "call_id": f"c{i - 1}", "output": text}})
    write_jsonl(home.codex_file(session, day=ts[:10].replace("-", "/"), stamp=ts.replace(":", "-")), rows)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args], cwd=repo,
                          env=env, capture_output=True, text=True, check=True)
    return proc.stdout


def run_in(home: Home, *args: str, cwd: Path | None = None, stdin: str | None = None):
    return subprocess.run(deja_cmd() + list(args), env=home.env, cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=120)


CART_V1 = """def total(items):
    # the cart total: every item's price, before any discount is applied
    return sum(item.price for item in items)
"""
CART_OLD_LINE = "    return sum(item.price for item in items)"
CART_V2 = CART_V1.replace(CART_OLD_LINE, "    return sum(item.price * item.quantity for item in items)")
TAX_V1 = """RATE = 0.2
def tax(amount):
    return round(amount * RATE, 2)  # rounded to cents for the invoice
"""
TAX_V2 = TAX_V1.replace("    return round(amount * RATE, 2)  # rounded to cents for the invoice",
                        "    return amount * RATE")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("work")
    home = Home(root)
    repo = root / "repo"
    (repo / "src" / "shop").mkdir(parents=True)
    cart, tax = repo / "src" / "shop" / "cart.py", repo / "src" / "shop" / "tax.py"
    cart.write_text(CART_V1)
    tax.write_text(TAX_V1)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial cart")
    # the agent's Edit replaced the return line; a later commit recorded exactly that change
    cart.write_text(CART_V2)
    git(repo, "commit", "-q", "-am", "cart totals count quantity")
    # a change no session made
    tax.write_text(TAX_V2)
    git(repo, "commit", "-q", "-am", "tax unrounded")
    (repo / "src" / "shop" / "scratch.py").write_text("x = 1\n")  # untracked
    loose = root / "loose"
    loose.mkdir()
    (loose / "notes.py").write_text("a = 1\nb = 2\n")
    cwd = str(repo)

    # --- blame -------------------------------------------------------------------
    Turns(1, cwd, hour=9).user("cart totals ignore quantity, fix src/shop/cart.py") \
        .edit(str(cart), CART_OLD_LINE, "    return sum(item.price * item.quantity for item in items)") \
        .say("The fix was to multiply each price by its quantity in the cart total.").write(home)
    # a decoy: edits cart.py too, but nothing it replaced is what the commits deleted
    Turns(2, cwd, hour=11).user("rename the total helper") \
        .edit(str(cart), "def total(items):", "def cart_total(items):").say("Renamed it.").write(home)
    Turns(3, "/home/dev/src/other", hour=10).user("what does shop/cart.py do in the other checkout?") \
        .say("It sums prices.").write(home)
    Turns(4, "/home/dev/src/other", hour=10).user("is cart.py tested at all?").say("Not yet.").write(home)
    Turns(5, "/home/dev/src/other", hour=10).user("mycart.py and cart.pyc are unrelated files").say("Yes.").write(home)
    Turns(6, cwd, hour=8).user("is cart.py tested here?").say("Not yet.").write(home)

    # --- how ---------------------------------------------------------------------
    Turns(10, "/home/dev/src/api", day="2026-03-03").user("run the cart tests") \
        .bash("pytest -x tests/test_cart.py -q", "3 passed").write(home)
    Turns(11, "/home/dev/src/api", day="2026-03-05").user("again") \
        .bash("pytest -x tests/test_cart.py -q", "3 passed").write(home)
    Turns(12, "/home/dev/src/api", day="2026-03-06").user("rerun the failures") \
        .bash("pytest --lf -q", "1 failed", code=1).bash("pytest --lf -q", "1 failed", code=1) \
        .bash("pytest --lf -q", "1 failed", code=1).write(home)
    Turns(13, "/home/dev/src/web", day="2026-03-04").user("build it") \
        .bash("npm run build -- --mode production", "built").write(home)

    # --- fix ---------------------------------------------------------------------
    yaml_err = "ModuleNotFoundError: No module named 'yaml'"
    Turns(20, "/home/dev/src/etl", day="2026-03-07").user("run the loader") \
        .bash("python -m loader", "Traceback (most recent call last):\n  File \"/home/dev/src/etl/loader.py\", "
              "line 3, in <module>\n" + yaml_err, code=1) \
        .bash("pip install pyyaml", "Successfully installed PyYAML-6.0.1") \
        .bash("python -m loader", "loaded 40 rows").write(home)
    # the same error answered by a reset in two sessions: without the guard it would be served
    for n, day in ((21, "2026-03-08"), (22, "2026-03-09")):
        Turns(n, "/home/dev/src/etl", day=day).user("loader again") \
            .bash("python -m loader", yaml_err, code=1) \
            .bash("git reset --hard origin/main", "HEAD is now at abc1234") \
            .bash("python -m loader", "loaded 40 rows").write(home)
    # a command after which the error came back is no fix
    Turns(23, "/home/dev/src/etl", day="2026-03-10").user("loader once more") \
        .bash("python -m loader", yaml_err, code=1) \
        .bash("pip install yaml-tools", "Successfully installed yaml-tools-0.1") \
        .bash("python -m loader", yaml_err, code=1).write(home)

    # --- friction ----------------------------------------------------------------
    # one error, three sessions, two harnesses, a moved line and another checkout each time
    Turns(30, "/home/dev/src/db", day="2026-03-11").user("start the app") \
        .bash("make run", "/srv/build-1234/app/db.py:42: connection refused by 10.0.0.5:5432", code=2).write(home)
    Turns(31, "/home/dev/src/db", day="2026-03-12").user("start it again") \
        .bash("make run", "/home/ci/work/app/db.py:57: connection refused by 10.0.0.7:5432", code=2).write(home)
    codex_session(home, "019c0000-0000-7000-8000-000000000031", "/home/dev/src/db", [
        ("user", "why does the app not start"), ("shell", "make run"),
        ("output", "/Users/me/app/db.py:61: connection refused by 10.0.0.9:5432")], ts="2026-03-13T09:00:00")
    # only two sessions: below the threshold
    for n in (32, 33):
        Turns(n, "/home/dev/src/db", day="2026-03-14").user("push") \
            .bash("git push", "fatal: could not read Username for github.com: terminal prompts disabled", code=128) \
            .write(home)
    # prose about an error, in three languages, in three sessions each: never friction
    prose = ["The error was that pnpm: command not found on the CI runner, so we pinned it.",
             "Ошибка была в том, что на CI pnpm: command not found, поэтому мы его закрепили.",
             "Der Fehler lag daran, dass pnpm: command not found auf dem CI-Runner kam."]
    for n in (34, 35, 36):
        Turns(n, "/home/dev/src/ci", day="2026-03-15").user("what happened on CI?") \
            .bash("git log -1 --format=%B", "\n".join(prose)).write(home)

    # --- files -------------------------------------------------------------------
    for n, day in ((40, "2026-03-16"), (41, "2026-03-17")):
        Turns(n, cwd, day=day).user("discount rounding is off by a cent", minute=0) \
            .read(str(repo / "src" / "shop" / "discount.py"), minute=5) \
            .read(str(repo / "README.md"), minute=6) \
            .read("/tmp/scratch-output.txt", minute=7) \
            .read(str(repo / "src" / "shop" / "late.py"), minute=90).write(home)
    for n in (42, 43, 44):  # README is touched everywhere: not specific to the topic
        Turns(n, cwd, day="2026-03-18").user("update the changelog").read(str(repo / "README.md")).write(home)

    home.run("index")
    return {"home": home, "repo": repo, "cart": cart, "tax": tax, "loose": loose}


# ================================================================== failure lines
ERRORS = [
    "bash: foo: command not found",
    "ModuleNotFoundError: No module named 'requests'",
    "ls: cannot access '/tmp/x': No such file or directory",
    "fatal: not a git repository (or any of the parent directories): .git",
    "panic: runtime error: index out of range [3] with length 3",
    "Segmentation fault (core dumped)",
    "zsh:1: command not found: pnpm",
    "bash: строка 1: foo: команда не найдена",
    "ls: невозможно получить доступ к '/tmp/x': Нет такого файла или каталога",
    "bash: foo: Befehl nicht gefunden",
    "ls: Zugriff auf '/tmp/x' nicht möglich: Datei oder Verzeichnis nicht gefunden",
]
PROSE = [
    # English
    "The error was that the connection refused every request from the worker.",
    "We got permission denied because the script was not executable.",
    "It failed with permission denied on the deploy key, so I regenerated it.",
    # Russian
    "Ошибка была в том, что скрипт падал с permission denied.",
    "Ошибка была в том, что файл не найден: нет такого файла или каталога",
    "Проблема оказалась в конфиге: connection refused от базы",
    # German
    "Der Fehler lag daran, dass der Server connection refused meldete.",
    "Das Problem war, dass bash: Befehl nicht gefunden kam",
    "Es kam immer wieder zu Permission denied beim Schreiben in das Verzeichnis.",
]


@pytest.mark.parametrize("line", ERRORS)
def test_error_lines_qualify(line):
    assert fl.failure_line(line)


@pytest.mark.parametrize("line", PROSE)
def test_prose_about_an_error_is_not_an_error(line):
    assert fl.failure_line(line) is None


def test_failure_line_rules_of_the_contract():
    assert fl.failure_line("zsh:1: command not found: pnpm") == "command not found: pnpm"  # <where>:<n>: dropped
    assert fl.failure_line("x: not found: y") is None  # shorter than 20 characters
    assert fl.failure_line("bash: " + "x" * 120 + ": command not found") is None  # longer than 120
    assert fl.failure_line("Traceback (most recent call last):") is None  # a generic head, nothing more
    # issue 13: `error: `/`Error: ` head a message and are judged by it (they were refused as generic)
    assert fl.failure_line("Error: ENOENT: no such file or directory, open x.json")
    assert fl.failure_line('echo "bash: foo: command not found"') is None  # source code
    assert fl.failure_line("# bash: foo: command not found is expected here") is None  # comment
    assert fl.failure_line("3 sessions  bash: foo: command not found  · claude") is None  # our own report
    assert fl.failure_line("everything is fine, 3 tests passed today") is None  # no needle


def test_one_signature_for_a_moved_line_another_path_another_number():
    a = fl.failure_line("/srv/build-1234/app/db.py:42: connection refused by 10.0.0.5:5432")
    b = fl.failure_line("/home/ci/work/app/db.py:57: connection refused by 10.0.0.7:5432")
    c = fl.failure_line("  /Users/me/app/db.py:61:7: connection refused by 10.0.0.9:5432")
    assert a and b and c
    assert fl.signature(a) == fl.signature(b) == fl.signature(c)
    # a different file or a different message stays different
    assert fl.signature(a) != fl.signature(fl.failure_line("/srv/app/cache.py:42: connection refused by 10.0.0.5:5432"))
    assert fl.signature("bash: foo: command not found") != fl.signature("bash: bar: command not found")
    assert 0 <= fl.signature(a) < 2 ** 64


@pytest.mark.parametrize("cmd", [
    "git push --force origin main", "git push -f", "git reset --hard HEAD~1", "rm -rf node_modules", "rm -fr build",
    "git clean -fdx", "git merge origin/main", "psql -c 'DROP TABLE users'", "git checkout -- .",
    "kubectl delete pod api-0", "terraform destroy",
])
def test_destructive_commands_are_recognised(cmd):
    assert fl.destructive(cmd)


@pytest.mark.parametrize("cmd", ["git push origin main", "pip install pyyaml", "rm build.log", "git status",
                                 "pytest -x", "npm run build"])
def test_ordinary_commands_are_not_destructive(cmd):
    assert not fl.destructive(cmd)


# ================================================================== blame path:line
def test_blame_line_names_the_session_whose_edit_the_commit_recorded(world):
    home, cart = world["home"], world["cart"]
    proc = home.run("blame", f"{cart}:3")
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"line 3 of {cart} comes from commit ") and "this session made that change" in first
    assert sid(1) in proc.stdout.splitlines()[1]
    out = json.loads(home.run("blame", "--json", f"{cart}:3").stdout)
    assert isinstance(out, list)
    assert out[0]["tier"] == "line" and out[0]["session"]["id"] == sid(1) and out[0]["line"] == 3
    assert "decision" not in out[0]  # a conclusion is not the reason for one line
    head = git(world["repo"], "log", "-1", "--format=%H", "--", "src/shop/cart.py").strip()
    assert out[0]["commit"] == head
    assert [r["session"]["id"] for r in out].count(sid(1)) == 1  # not listed twice


def test_blame_line_relative_path_from_the_repo(world):
    proc = run_in(world["home"], "blame", "src/shop/cart.py:3", cwd=world["repo"])
    assert proc.returncode == 0, proc.stderr
    assert "this session made that change" in proc.stdout and sid(1) in proc.stdout


def test_blame_line_declines_when_no_session_edit_matches(world):
    home = world["home"]
    # line 1 comes from the initial commit, which replaced nothing
    out = home.run("blame", f"{world['cart']}:1").stdout.splitlines()[0]
    assert "comes from commit" in out and "no session's edit" in out and sid(2) not in out
    # tax.py line 3 was changed by a commit no session made
    out = home.run("blame", f"{world['tax']}:3").stdout.splitlines()[0]
    assert "comes from commit" in out and "no session's edit on this machine replaced the text that commit deleted" in out
    js = json.loads(home.run("blame", "--json", f"{world['tax']}:3").stdout)
    assert all(r["tier"] != "line" for r in js)


def test_blame_line_declines_outside_git(world):
    home = world["home"]
    notes = world["loose"] / "notes.py"
    proc = home.run("blame", f"{notes}:1")
    assert proc.stdout.splitlines()[0] == f"{notes} is not in a git repository, so git cannot name the commit behind line 1."
    scratch = world["repo"] / "src" / "shop" / "scratch.py"
    assert "is not tracked by git" in home.run("blame", f"{scratch}:1").stdout.splitlines()[0]


def test_blame_line_past_the_end_says_the_line_count(world):
    proc = world["home"].run("blame", f"{world['cart']}:99")
    assert proc.stdout.splitlines()[0] == f"line 99 is past the end of {world['cart']} (it has 3 lines)."


# ================================================================== blame listing
def test_blame_ranks_full_path_over_suffix_over_basename(world):
    out = json.loads(world["home"].run("blame", "--json", str(world["cart"])).stdout)
    ids = [r["session"]["id"] for r in out]
    assert sid(5) not in ids  # mycart.py and cart.pyc do not mention cart.py
    assert ids.index(sid(3)) < ids.index(sid(4))  # shop/cart.py beats a bare cart.py
    by = {r["session"]["id"]: r for r in out}
    assert by[sid(1)]["tier"] == "exact" and by[sid(3)]["tier"] == "suffix" and by[sid(4)]["tier"] == "basename"
    assert ids[0] == sid(1)
    assert by[sid(1)]["decision"].startswith("The fix was to multiply")
    assert set(by[sid(1)]) >= {"session", "title", "count", "snippets", "score", "tier"}
    assert by[sid(1)]["snippets"] and len(by[sid(1)]["snippets"]) <= 2


def test_blame_project_match_lifts_the_same_mention(world):
    out = json.loads(world["home"].run("blame", "--json", str(world["cart"])).stdout)
    ids = [r["session"]["id"] for r in out]
    # sessions 4 and 6 both say "cart.py" once, the same day; 6 ran in the file's repository
    assert ids.index(sid(6)) < ids.index(sid(4))


def test_blame_filters_and_text_output(world):
    home = world["home"]
    out = json.loads(home.run("blame", "--json", "--project", "src/other", str(world["cart"])).stdout)
    assert {r["session"]["id"] for r in out} == {sid(3), sid(4)}
    text = home.run("blame", str(world["cart"])).stdout
    assert "decided: The fix was to multiply" in text
    proc = home.run("blame", "nothing_like_this.py")
    assert proc.stdout == "" and "no session mentions nothing_like_this.py" in proc.stderr
    assert home.run("blame", "--harness", "nope", "x.py", check=False).returncode == 1


# ================================================================== how
def test_how_every_word_successful_and_most_used_first(world):
    home = world["home"]
    lines = home.run("how", "pytest").stdout.splitlines()
    assert lines[0] == "pytest -x tests/test_cart.py -q"
    assert lines[1] == "  ran 2 times in 2 sessions, last 2026-03-05"
    # ran more often, but it never succeeded: after the one that works, marked
    assert lines[2] == "pytest --lf -q  → exit 1"
    assert lines[3] == "  ran 3 times in 1 session, last 2026-03-06"
    assert home.run("how", "pytest", "lf").stdout.splitlines()[0] == "pytest --lf -q  → exit 1"
    assert home.run("how", "the", "npm", "build").stdout.splitlines()[0] == "npm run build -- --mode production"
    assert home.run("how", "pytest", "--project", "web").stdout == ""
    proc = home.run("how", "cargo", "nextest")
    assert proc.stdout == "" and "No command on this machine mentions" in proc.stderr


def test_how_asked_a_pasted_page_still_wants_every_word_and_answers_it_in_a_line(world):
    home = world["home"]
    many = ["pytest"] * 3000 + ["lf"] * 3000
    assert home.run("how", *many).stdout.splitlines()[0] == "pytest --lf -q  → exit 1"
    words = ["pytest", "tests/test_cart.py"] + [f"w{i}" for i in range(300)]
    proc = home.run("how", *words)  # (the longest words narrow the scan; the rest still must be there)
    assert proc.stdout == "" and len(proc.stderr) < 300 and "mentions 'pytest tests/test_cart.py" in proc.stderr


# ================================================================== fix
TRACE = ("Traceback (most recent call last):\n  File \"/srv/other/job.py\", line 9, in <module>\n"
         "ModuleNotFoundError: No module named 'yaml'\n")


def test_fix_offers_what_settled_the_same_error(world):
    lines = world["home"].run("fix", TRACE).stdout.splitlines()
    assert lines == ["ModuleNotFoundError: No module named 'yaml' (2026-03-07)", "  ran next: pip install pyyaml"]


def test_fix_never_offers_destructive_or_unsettling_commands(world):
    out = world["home"].run("fix", "ModuleNotFoundError: No module named 'yaml'", "--limit", "10").stdout
    assert "reset" not in out  # seen after the error in two sessions, and still never served
    assert "yaml-tools" not in out  # the error came back after it
    assert "pip install pyyaml" in out


def test_fix_reads_stdin_and_says_why_when_silent(world):
    home = world["home"]
    proc = run_in(home, "fix", stdin=TRACE)
    assert proc.returncode == 0 and "ran next: pip install pyyaml" in proc.stdout
    proc = home.run("fix", "the build feels slow today")
    assert proc.stdout == "" and "does not read like an error line" in proc.stderr
    proc = home.run("fix", "bash: kubectx: command not found")
    assert proc.stdout == "" and "No session on this machine ran a command after that error." in proc.stderr
    # prose about the error is not a pasted error either
    proc = home.run("fix", "Ошибка была в том, что No module named yaml не находился")
    assert proc.stdout == "" and "does not read like an error line" in proc.stderr


# ================================================================== friction
def test_friction_three_sessions_moved_lines_and_harnesses(world):
    proc = world["home"].run("friction")
    lines = proc.stdout.splitlines()
    assert len(lines) == 2, proc.stdout
    # sorted by sessions: the yaml error of the fix sessions (4), then the refused connection (3)
    assert lines[0] == "4 sessions  ModuleNotFoundError: No module named 'yaml'  · claude · last Mar 10"
    assert lines[1].startswith("3 sessions  ") and "connection refused" in lines[1]
    assert "· claude, codex · last Mar 13" in lines[1]
    assert "could not read Username" not in proc.stdout  # two sessions only
    assert "pnpm" not in proc.stdout  # prose in three languages, three sessions each


def test_friction_empty_says_how_many_sessions_had_output(tmp_path):
    home = Home(tmp_path)
    Turns(1, "/home/dev/src/a").user("x").bash("make run", "bash: foo: command not found", code=127).write(home)
    home.run("index")
    proc = home.run("friction")
    assert proc.stdout == "" and "(1 session had tool output)" in proc.stderr


# ================================================================== files
def test_files_near_the_topic_ranked_by_specificity(world):
    proc = world["home"].run("files", "discount", "rounding")
    paths = [ln.split("  · ")[0] for ln in proc.stdout.splitlines()]
    repo = world["repo"]
    assert paths[0] == str(repo / "src" / "shop" / "discount.py")
    assert str(repo / "README.md") in paths and paths.index(str(repo / "README.md")) > 0
    assert "/tmp/scratch-output.txt" not in paths  # outside the project, in a temp folder
    assert str(repo / "src" / "shop" / "late.py") not in paths  # touched 90 minutes later
    assert "near it in 2 sessions" in proc.stdout.splitlines()[0]
    assert world["home"].run("files", "discount", "rounding", "--limit", "1").stdout.count("\n") == 1
    proc = world["home"].run("files", "zebra", "migration", "quux")
    assert proc.stdout == ""
