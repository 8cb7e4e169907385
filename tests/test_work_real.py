"""Issue 13, the work answers on real history: every command an agent ran is a
record (`how`, `show`), `fix` takes the error lines people paste, and `blame`
matches a path as a path. Real-shaped Claude Code and Codex transcripts in a
temp HOME, through the real `deja` command; the error lines are the ones the
real corpus holds (../shared/corpus/real)."""

from __future__ import annotations

import json

import pytest

from conftest import Home, claude_assistant, claude_user, write_jsonl
from deja.stages import failures as fl
from deja.stages import work_records as work

GO_LINE = ("/Users/xuwentao/go/pkg/mod/volcano.sh/apis@v1.12.1/pkg/client/applyconfiguration/utils.go:163:56: "
           "undefined: testing.TypeConverter")
C_LINE = "dl/3rdparty_net_snmp/ies-auto-mibs/net_mx_vlan_setup.c:14:45: error: unknown type name 'JSON_Value'"
EISDIR = "EISDIR: illegal operation on a directory, read"
PYTEST_LINE = "FAILED tests/test_x.py::test_y - TimeoutError: timed out after 30 seconds waiting for the broker"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
CODEX_ID = "019d6d75-b03d-7f83-a2c7-c3478007d5e0"


def sid(n: int) -> str:
    return f"5e5e0000-0000-4000-8000-{n:012d}"


class Claude:
    """A Claude Code session as the harness writes it: Bash tool_use, then its tool_result."""

    def __init__(self, n: int, cwd: str, day: str):
        self.s, self.cwd, self.day, self.rows, self.k = sid(n), cwd, day, [], 0

    def _ts(self) -> str:
        self.k += 1
        return f"{self.day}T10:{self.k:02d}:00.000Z"

    def user(self, text: str):
        self.rows.append(claude_user(self.s, text, self._ts(), f"u{self.s[-4:]}{self.k}", cwd=self.cwd))
        return self

    def bash(self, cmd: str, output: str, code: int = 0):
        tid = f"toolu_{self.s[-6:]}{self.k}"
        self.rows.append(claude_assistant(self.s, [{"type": "tool_use", "id": tid, "name": "Bash",
                                                    "input": {"command": cmd, "description": "run"}}],
                                          self._ts(), f"a{self.s[-4:]}{self.k}", msg_id=f"msg_{self.k}", cwd=self.cwd))
        text = f"Exit code {code}\n{output}" if code else output
        row = claude_user(self.s, "", self._ts(), f"o{self.s[-4:]}{self.k}", cwd=self.cwd)
        row["message"] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": text,
                                                       "is_error": bool(code)}]}
        self.rows.append(row)
        return self

    def say(self, text: str):
        self.rows.append(claude_assistant(self.s, [{"type": "text", "text": text}], self._ts(),
                                          f"s{self.s[-4:]}{self.k}", msg_id=f"msg_{self.k}", cwd=self.cwd))
        return self

    def edit(self, path: str, old: str, new: str):
        tid = f"toolu_{self.s[-6:]}{self.k}"
        self.rows.append(claude_assistant(self.s, [{"type": "tool_use", "id": tid, "name": "Edit", "input": {
            "file_path": path, "old_string": old, "new_string": new}}], self._ts(), f"e{self.s[-4:]}{self.k}",
            msg_id=f"msg_{self.k}", cwd=self.cwd))
        return self

    def write(self, home: Home) -> str:
        write_jsonl(home.claude_file(self.s, cwd=self.cwd), self.rows)
        return self.s


def codex_session(home: Home, session: str, cwd: str, steps: list[tuple[str, str, int]]) -> None:
    """A Codex rollout of the shell_command generation: function_call, then its framed output."""
    rows = [{"timestamp": "2026-04-08T14:18:42.000Z", "type": "session_meta",
             "payload": {"id": session, "timestamp": "2026-04-08T14:18:42.000Z", "cwd": cwd,
                         "originator": "codex_cli_rs", "cli_version": "0.118.0", "git": {"branch": "main"}}},
            {"timestamp": "2026-04-08T14:18:43.000Z", "type": "response_item", "payload": {
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "apply my dotfiles and check what changed"}]}}]
    for i, (cmd, out, code) in enumerate(steps):
        t = f"2026-04-08T14:{20 + i:02d}:00.000Z"
        rows.append({"timestamp": t, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell_command", "call_id": f"call_{i}",
            "arguments": json.dumps({"command": cmd, "workdir": cwd})}})
        rows.append({"timestamp": t, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": f"call_{i}",
            "output": f"Exit code: {code}\nWall time: 0.4 seconds\nOutput:\n{out}\n"}})
    write_jsonl(home.codex_file(session, day="2026/04/08", stamp="2026-04-08T22-18-42"), rows)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("real"))
    codex_session(home, CODEX_ID, "/home/dev/dotfiles", [
        ("chezmoi apply --verbose", "diff --git a/.zshrc b/.zshrc", 0),
        ("ls -la ~/.config", "total 8", 0),
        ("grep make Makefile", "all: make", 0),
        ("cat Makefile", "all:\n\tmake -C build", 0),
        ("cd build && make -j4", "[100%] Built target app", 0),
        ("sudo FOO=1 make install", "Install the project...", 0),
        (f"GITHUB_TOKEN={TOKEN} chezmoi init --apply dev", "done", 0),
    ])
    # the Go session of the corpus: the build breaks on a module, grep looks, go mod tidy and go build mend it
    Claude(1, "/home/dev/src/paas-controller", "2026-04-01").user("run the controller tests") \
        .bash("go test ./pkg/apiserver/k8s/controller/... -run TestDevMachinesSuite -v 2>&1",
              "# volcano.sh/apis/pkg/client/applyconfiguration\n" + GO_LINE + "\n"
              + GO_LINE.replace(":163:56:", ":164:18:") + "\nFAIL\tpaas-controller/pkg/apiserver/k8s/controller "
              "[build failed]\nFAIL", code=1) \
        .bash('grep -n "testing.TypeConverter" /Users/xuwentao/go/pkg/mod/volcano.sh/apis@v1.12.1/pkg/client/'
              "applyconfiguration/utils.go | head -5", "163:\tfunc NewTypeConverter() testing.TypeConverter") \
        .bash("go mod tidy 2>&1 | tail -20", "go: downloading volcano.sh/apis v1.13.1") \
        .bash("go build ./pkg/apiserver/k8s/controller/... 2>&1", "") \
        .write(home)
    Claude(2, "/home/dev/src/buildroot", "2026-04-02").user("build the snmp agent") \
        .bash("make net-snmp", C_LINE + "\nmake[1]: *** [Makefile:12: net_mx_vlan_setup.o] Error 1", code=2) \
        .bash("make parson && make net-snmp", "built net-snmp") \
        .write(home)
    Claude(3, "/home/dev/src/site", "2026-04-03").user("read the config") \
        .bash("node scripts/read-config.js ./config", EISDIR, code=1) \
        .bash("node scripts/read-config.js ./config/site.json", "{ ok: true }") \
        .write(home)
    Claude(4, "/home/dev/src/broker", "2026-04-04").user("run the broker tests") \
        .bash("pytest tests/test_x.py -q", "F\n=== short test summary info ===\n" + PYTEST_LINE + "\n1 failed", code=1) \
        .bash("pytest tests/test_x.py -q --timeout 120", "1 passed") \
        .write(home)
    # says "file" as a loose word: a path argument must not find it
    Claude(5, "/home/dev/src/notes", "2026-04-05").user("which file holds the notes?") \
        .bash("echo done", "done").write(home)
    home.run("index")
    return home


# ------------------------------------------------------------- commands the agents ran
def test_every_command_is_a_record_on_one_line_capped():
    assert work.command_record("chezmoi apply") == "$ chezmoi apply"
    assert work.command_record("ls -la", 2) == "$ ls -la  → exit 2"
    assert work.command_record("cat <<EOF > x\npytest\nEOF") == "$ cat <<EOF > x ⏎ pytest ⏎ EOF"
    assert work.command_record("docker run \\\n  -v a:b img") == "$ docker run -v a:b img"
    long = work.command_record("echo " + "x" * 5000)
    assert "\n" not in long and len(long) <= work.COMMAND_CAP + 2 and long.endswith("…")


def test_how_finds_a_program_deja_has_no_rule_for(world):
    proc = world.run("how", "chezmoi")
    assert "chezmoi apply --verbose" in proc.stdout.splitlines()[::2], proc.stderr


def test_how_matches_the_program_word_not_a_substring(world):
    out = world.run("how", "make").stdout
    commands = out.splitlines()[::2]
    assert "cd build && make -j4" in commands and "sudo FOO=1 make install" in commands
    assert "grep make Makefile" not in out and "cat Makefile" not in out
    assert world.run("how", "grep", "make").stdout.splitlines()[0] == "grep make Makefile"


def test_show_prints_runs_of_every_program(world):
    out = world.run("show", CODEX_ID).stdout
    assert "$ chezmoi apply --verbose" in out and "$ ls -la ~/.config" in out


def test_stats_and_ctx_list_the_commands_that_did_something(world):
    """Every command is stored; the lists a person reads leave out the ones that only looked."""
    text = world.run("stats").stdout
    assert "chezmoi apply --verbose" in text and "ls -la" not in text and "cat Makefile" not in text, text
    brief = world.run("ctx", CODEX_ID).stdout
    assert "chezmoi apply --verbose" in brief and "ls -la" not in brief and "cat Makefile" not in brief, brief


def test_command_records_are_redacted(world):
    out = world.run("show", CODEX_ID).stdout
    assert TOKEN not in out and "chezmoi init --apply dev" in out and "[redacted" in out


# ------------------------------------------------------------- fix takes pasted errors
@pytest.mark.parametrize("line", [
    "error: unknown type name 'JSON_Value'", EISDIR, GO_LINE, "./internal/conv/conv.go:42:17: undefined: testing.TypeConverter",
    "FAILED tests/test_x.py::test_y - TimeoutError: timed out after 30 seconds waiting for the broker",
])
def test_pasted_error_lines_are_error_lines(line):
    f = fl.failure_line(line)
    assert f and fl.MIN_LEN <= len(fl.error_part(f)) <= fl.MAX_LEN


def test_error_part_drops_the_location_and_keeps_the_message():
    assert fl.error_part(GO_LINE) == "undefined: testing.TypeConverter"
    assert fl.error_part(C_LINE) == "error: unknown type name 'JSON_Value'"
    assert fl.error_part(PYTEST_LINE).startswith("TimeoutError: timed out")
    # one error wherever it was printed, for fix; friction still tells files apart
    assert fl.signature(GO_LINE, located=False) == fl.signature("undefined: testing.TypeConverter", located=False)


def test_the_hooks_judge_an_error_by_the_same_rule():
    from deja.hooks import tool

    for text in (GO_LINE, "something broke: see the log above for the error", "Exit code 1\n" + C_LINE):
        assert tool._first_failure(text) == (fl.first_failure(text) or "")


def test_fix_finds_the_go_session_that_ran_go_mod_tidy(world):
    proc = world.run("fix", "undefined: testing.TypeConverter")
    assert "ran next: go mod tidy 2>&1 | tail -20" in proc.stdout, proc.stderr
    assert "grep" not in proc.stdout  # looking is not fixing


@pytest.mark.parametrize("cmd, looks", [
    ("go version && cat go.mod | grep -E '^go |volcano'", True),
    ("gsed --version 2>&1 | head -1; which gsed", True),
    ("git stash list", True),
    ("git log --oneline -5 -- go.mod 2>&1", True),
    ("git stash", False),  # puts work away: it changes the tree
    ("go mod tidy 2>&1 | tail -20", False),
    ("go test -v ./...", False),
])
def test_a_command_that_only_asks_a_program_about_itself_is_a_look(cmd, looks):
    assert work.inspects(cmd) is looks


def test_fix_reads_past_a_long_investigation_to_what_settled_it(tmp_path):
    # the corpus session as it went: a retry that fails the same way, a dozen looks
    # (grep, git log/show, `go version`), a sed that failed, an edit of go.mod,
    # then go mod tidy and go build, and a later test run failing on another error
    home = Home(tmp_path)
    mod = "/home/dev/src/paas-controller/go.mod"
    c = Claude(7, "/home/dev/src/paas-controller", "2026-03-28").user("run the dev machines suite")
    c.bash("go test ./pkg/apiserver/k8s/controller/... -run TestDevMachinesSuite -v 2>&1",
           "# volcano.sh/apis/pkg/client/applyconfiguration\n" + GO_LINE, code=1)
    c.say("This is a known problem of the volcano dependency; checking how the project avoids it:")
    c.bash("go test ./pkg/apiserver/k8s/controller/... -run TestDevMachinesSuite -v -tags '!ignore_volcano' 2>&1 "
           "| head -20", "# volcano.sh/apis/pkg/client/applyconfiguration\n" + GO_LINE)
    c.bash("head -5 /Users/xuwentao/go/pkg/mod/volcano.sh/apis@v1.12.1/pkg/client/applyconfiguration/utils.go", "/*")
    c.bash('go version && cat go.mod | grep -E "^go |volcano"', "go version go1.24.9 darwin/arm64\ngo 1.24.9")
    for look in ("git log --oneline -5 -- go.mod 2>&1", "git show b2d1fa59 --stat 2>&1 | head -20",
                 "git show b2d1fa59 -- go.mod | grep volcano 2>&1", 'grep "volcano" go.mod',
                 "git log --oneline master..HEAD 2>&1", "git show master:go.mod | grep volcano",
                 'git log --all --oneline --format="%H %s" | grep -i volcano | head -5'):
        c.bash(look, "volcano.sh/apis v1.12.1")
    c.say("The worktree still uses the old volcano version; updating the dependency:")
    c.bash("sed -i '' 's|volcano.sh/apis v1.12.1|volcano.sh/apis v1.13.1|g' go.mod",
           "gsed: can't read s|volcano.sh/apis v1.12.1|volcano.sh/apis v1.13.1|g: No such file or directory", code=2)
    c.bash("gsed --version 2>&1 | head -1; which gsed", "gsed (GNU sed) 4.9\n/opt/homebrew/bin/gsed")
    c.edit(mod, "\tvolcano.sh/apis v1.12.1", "\tvolcano.sh/apis v1.13.1")
    c.bash("go mod tidy 2>&1 | tail -20", "(Bash completed with no output)")
    c.bash("go build ./pkg/apiserver/k8s/controller/... 2>&1", "(Bash completed with no output)")
    c.bash("go test ./pkg/apiserver/k8s/controller/... -run TestDevMachinesSuite -v 2>&1",
           "pkg/apiserver/k8s/controller/suite_test.go:41:148: not enough arguments in call to NewController", code=1)
    c.write(home)
    home.run("index")
    proc = home.run("fix", "undefined: testing.TypeConverter")
    assert "ran next: go mod tidy 2>&1 | tail -20" in proc.stdout, (proc.stdout, proc.stderr)


@pytest.mark.parametrize("pasted, fixed_by", [
    ("error: unknown type name 'JSON_Value'", "make parson && make net-snmp"),
    (EISDIR, "node scripts/read-config.js ./config/site.json"),
    (GO_LINE, "go mod tidy"),
    ("./internal/conv/conv.go:42:17: undefined: testing.TypeConverter", "go mod tidy"),
    ("FAILED tests/test_x.py::test_y - TimeoutError: timed out after 30 seconds waiting for the broker",
     "pytest tests/test_x.py -q --timeout 120"),
])
def test_fix_takes_the_errors_people_paste(world, pasted, fixed_by):
    proc = world.run("fix", pasted)
    assert "does not read like an error line" not in proc.stderr
    assert f"ran next: {fixed_by}" in proc.stdout, proc.stderr


# ------------------------------------------------------------- blame a path
def test_blame_a_missing_path_is_not_the_word_file(world):
    proc = world.run("blame", "/no/such/file")
    assert proc.returncode == 0 and proc.stdout == ""
    assert "no session mentions /no/such/file" in proc.stderr
    assert json.loads(world.run("blame", "--json", "/no/such/file").stdout) == []
