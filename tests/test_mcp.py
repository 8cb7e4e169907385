"""`deja mcp` (cli-contract §4): the real server as a subprocess, spoken to
line by line over stdin/stdout like an agent does, against a temp HOME
holding real-shaped Claude Code and Codex transcripts and an indexed store."""

from __future__ import annotations

import json
import subprocess
import queue
import threading
import time

import pytest

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

S1 = "aaaa1111-0000-4000-8000-000000000001"
S2 = "aaaa1111-0000-4000-8000-000000000002"
POOL = "QueuePool limit of size 5 overflow 10 reached, connection timed out"


class Client:
    """One MCP connection: JSON-RPC lines to the server, its stdout lines back."""

    def __init__(self, env: dict):
        self.proc = subprocess.Popen(deja_cmd() + ["mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines: queue.Queue = queue.Queue()
        self.raw: list[bytes] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.raw.append(line)
            self.lines.put(json.loads(line))  # every stdout line is a JSON-RPC message
        self.lines.put(None)

    def send(self, obj) -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float = 90) -> dict:
        msg = self.lines.get(timeout=timeout)
        assert msg is not None, "the server closed its stdout"
        return msg

    def request(self, ident, method: str, params: dict | None = None) -> dict:
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, **({"params": params} if params is not None else {})})
        msg = self.recv()
        assert msg.get("id") == ident, msg
        return msg

    def call(self, ident, name: str, args: dict) -> dict:
        return self.request(ident, "tools/call", {"name": name, "arguments": args})

    def initialize(self) -> dict:
        res = self.request(0, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                             "clientInfo": {"name": "test", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return res

    def close(self) -> int:
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=60)
        return rc


def _text(msg: dict) -> str:
    return msg["result"]["content"][0]["text"]


@pytest.fixture
def indexed(tmp_path) -> Home:
    home = Home(tmp_path)
    write_jsonl(home.claude_file(S1), [
        claude_user(S1, "checkout returns 500 when the connection pool is exhausted", "2026-03-02T09:00:00Z", "u1"),
        claude_assistant(S1, [{"type": "text", "text": f"The log says {POOL}. Raise pool_size to 20 in "
                                                       "db/pool.py and release sessions in the checkout handler."}],
                         "2026-03-02T09:01:00Z", "a1", parent="u1"),
    ])
    write_jsonl(home.claude_file(S2, cwd="/home/dev/src/blog"), [
        claude_user(S2, "rename the draft posts folder", "2026-03-03T09:00:00Z", "u2", cwd="/home/dev/src/blog"),
        claude_assistant(S2, [{"type": "text", "text": "Renamed drafts to posts/drafts."}], "2026-03-03T09:01:00Z",
                         "a2", parent="u2", cwd="/home/dev/src/blog"),
    ])
    home.run("index")
    return home


@pytest.fixture
def client(indexed):
    c = Client(indexed.env)
    yield c
    if c.proc.poll() is None:
        c.proc.kill()
        c.proc.wait()


def test_initialize_names_the_server_and_tells_the_model_when_to_recall(client):
    res = client.initialize()["result"]
    assert res["protocolVersion"] == "2024-11-05"
    assert res["serverInfo"]["name"] == "deja"
    assert set(res["capabilities"]) >= {"tools", "resources"}
    assert "`recall`" in res["instructions"] and "building" not in res["instructions"]


def test_six_tools_with_schemas_and_annotations(client):
    client.initialize()
    tools = {t["name"]: t for t in client.request(1, "tools/list")["result"]["tools"]}
    assert set(tools) == {"recall", "recall_context", "blame", "fix", "how", "remember"}
    assert tools["recall"]["inputSchema"]["required"] == ["query"]
    assert tools["blame"]["inputSchema"]["required"] == ["path"]
    for name, t in tools.items():
        notes = t["annotations"]
        assert notes["title"] and notes["readOnlyHint"] is (name != "remember")
        if name != "remember":
            assert notes["openWorldHint"] is False


def test_recall_answers_framed_snippets_within_four_kilobytes(client):
    client.initialize()
    text = _text(client.call(1, "recall", {"query": "connection pool exhausted", "limit": "3"}))
    assert text.startswith("<deja-recall>") and text.rstrip().endswith("</deja-recall>")
    assert "QueuePool" in text and "deja show aaaa1111" in text
    assert "drafts" not in text  # the other session holds none of the words
    assert len(text.encode()) <= 4096
    nothing = _text(client.call(2, "recall", {"query": "kubernetes ingress annotation"}))
    assert "No past session matches" in nothing


def test_the_other_tools_answer_what_their_commands_print(client, indexed):
    client.initialize()
    ctx = _text(client.call(1, "recall_context", {"query": "connection pool"}))
    assert ctx.startswith("<deja-recall>") and "pool" in ctx and len(ctx.encode()) <= 8192
    rows = json.loads(_text(client.call(2, "blame", {"path": "db/pool.py"})))
    assert rows and rows[0]["session"]["id"] == S1
    fix = _text(client.call(3, "fix", {"error": "hello there"}))
    assert "does not read like an error line" in fix
    how = _text(client.call(4, "how", {"what": "kubectl"}))
    assert how == "No command on this machine mentions 'kubectl'."


def test_recall_context_keeps_to_the_harness_it_is_given(client):
    """One word and a harness was looked up as the id "<harness>:<word>" and
    then searched as that text (a real match missed); with more words the
    harness was dropped (another agent's session came back)."""
    client.initialize()
    assert "QueuePool" in _text(client.call(1, "recall_context", {"query": "QueuePool", "harness": "claude"}))
    assert "QueuePool" in _text(client.call(2, "recall_context", {"query": "connection pool", "harness": "claude"}))
    assert _text(client.call(3, "recall_context", {"query": "connection pool", "harness": "codex"})) \
        == "no session matches 'connection pool'"
    assert "QueuePool" in _text(client.call(4, "recall_context", {"query": S1, "harness": "claude"}))
    assert client.call(5, "recall_context", {"query": "pool", "harness": "nonesuch"})["error"]["code"] == -32602


def test_what_fix_and_how_found_in_transcripts_comes_in_the_untrusted_data_frame(tmp_path):
    home = Home(tmp_path)
    sid = "5e000000-0000-4000-8000-0000000000f1"
    write_jsonl(home.claude_file(sid), [
        claude_user(sid, "the tests fail", "2026-03-02T09:00:00Z", "u1"),
        claude_assistant(sid, [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                "input": {"command": "kubectl rollout restart deploy/api"}}],
                         "2026-03-02T09:01:00Z", "a1", parent="u1"),
        claude_user(sid, [{"type": "tool_result", "tool_use_id": "toolu_1",
                           "content": "deployment.apps/api restarted"}], "2026-03-02T09:01:05Z", "u2"),
    ])
    home.run("index")
    c = Client(home.env)
    try:
        c.initialize()
        how = _text(c.call(1, "how", {"what": "kubectl rollout"}))
        assert how.startswith("<deja-recall>") and how.endswith("</deja-recall>") and "kubectl rollout restart" in how
    finally:
        c.close()


def test_remember_keeps_a_note_that_recall_then_finds(client):
    client.initialize()
    assert _text(client.call(1, "remember", {"text": "the staging VPN needs split tunnelling off",
                                             "tags": ["vpn"]})) == "Remembered under notes."
    assert "split tunnelling" in _text(client.call(2, "recall", {"query": "staging VPN tunnelling"}))


def test_bad_arguments_and_unknown_tools_are_invalid_params_and_the_server_keeps_serving(client):
    client.initialize()
    assert client.call(1, "recall", {})["error"] == {"code": -32602, "message": "query required"}
    assert client.call(2, "recall", {"query": "pool", "limit": "many"})["error"]["code"] == -32602
    assert client.call(3, "recall", {"query": "pool", "harness": "nonesuch"})["error"]["code"] == -32602
    assert client.call(4, "frobnicate", {"x": 1})["error"]["code"] == -32602
    assert client.request(5, "prompts/get", {"name": "x"})["error"]["code"] == -32601
    assert "QueuePool" in _text(client.call(6, "recall", {"query": "connection pool"}))


def test_garbage_and_oversized_frames_get_parse_errors_and_null_ids_no_reply(client):
    client.initialize()
    client.send(b"this is not json")
    assert client.recv()["error"]["code"] == -32700
    client.send(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": ' + b"[" * 5 + b"x" * (11 << 20))
    big = client.recv()
    assert big["error"]["code"] == -32700 and big["id"] is None
    client.send({"jsonrpc": "2.0", "id": None, "method": "tools/list"})  # a notification: never answered
    assert client.request(8, "tools/list")["result"]["tools"]
    assert client.close() == 0
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in client.raw)


def test_an_id_that_is_no_string_or_integer_or_json_nested_past_the_stack_is_answered_and_the_server_goes_on(client):
    """An object id used to end the server, a float or true id was never
    answered (and the server never left when stdin closed), JSON nested
    50,000 deep ended it."""
    client.initialize()
    for ident in ({"a": 1}, [1], True, 1.5):
        client.send({"jsonrpc": "2.0", "id": ident, "method": "ping"})
        got = client.recv()
        assert got["error"]["code"] == -32600 and got["id"] is None, got
    client.send(b"[" * 50000 + b"]" * 50000)
    assert client.recv()["error"]["code"] == -32700
    assert client.request(9, "ping")["result"] == {}
    assert client.close() == 0


def test_half_a_utf16_pair_or_an_infinite_number_is_answered_and_the_server_goes_on(client):
    """JSON may escape a lone surrogate ("\\ud800"), which no UTF-8 can
    carry: as a request's id or method it ended the server, in an argument it
    came back as an internal error. "inf" as a number was an internal error."""
    client.initialize()
    client.send(b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}')
    assert client.recv()["result"] == {}
    client.send(b'{"jsonrpc":"2.0","id":"m","method":"\\ud800"}')
    assert client.recv()["error"]["code"] == -32601
    client.send(b'{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"recall",'
                b'"arguments":{"query":"connection pool \\udc00"}}}')
    got = client.recv()
    assert got["id"] == "r" and "QueuePool" in _text(got)
    for n, bad in enumerate(("inf", "-Infinity", 1e300 * 10)):
        assert client.call(20 + n, "recall", {"query": "pool", "limit": bad})["error"] == \
            {"code": -32602, "message": "limit must be a number from 1 to 20"}
    assert client.request(9, "ping")["result"] == {}
    assert client.close() == 0


def test_requests_in_flight_when_stdin_closes_are_still_answered(client):
    client.initialize()
    client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "recall", "arguments": {"query": "connection pool"}}})
    client.proc.stdin.close()
    assert "QueuePool" in _text(client.recv())
    assert client.proc.wait(timeout=60) == 0


def test_recent_sessions_are_resources_readable_as_their_digest(client):
    client.initialize()
    found = client.request(1, "resources/list")["result"]["resources"]
    uris = [r["uri"] for r in found]
    assert f"deja://session/claude:{S1}" in uris and all(r["mimeType"] == "text/markdown" for r in found)
    one = next(r for r in found if r["uri"].endswith(S1))
    assert "shop" in one["description"]
    body = client.request(2, "resources/read", {"uri": one["uri"]})["result"]["contents"][0]["text"]
    assert body.startswith("<deja-recall>") and "pool" in body
    assert client.request(3, "resources/read", {"uri": "deja://nope"})["error"]["code"] == -32602


def test_without_an_index_tools_say_it_is_building_and_start_the_build(tmp_path):
    home = Home(tmp_path)
    c = Client(home.env)
    try:
        assert "building" in c.initialize()["result"]["instructions"]
        assert "still building its index" in _text(c.call(1, "recall", {"query": "pool"}))
        deadline, n, answer = time.monotonic() + 90, 2, ""
        while "No past session matches" not in answer and time.monotonic() < deadline:
            time.sleep(0.5)  # (an answer may say it is building, or busy, until the background run is done)
            msg = c.call(n, "recall", {"query": "pool"})
            answer, n = (_text(msg) if "result" in msg else ""), n + 1
        assert "No past session matches" in answer
    finally:
        c.close()


def test_the_sdks_own_client_many_calls_and_a_store_reindexed_between_them(indexed):
    """The official SDK's stdio client against the server: the handshake, the
    tools, thirty recalls in a row from one process, an error for bad
    arguments, and a store re-indexed underneath that the next call reads."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    s3 = "aaaa1111-0000-4000-8000-000000000003"

    async def main():
        cmd = deja_cmd()
        params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp"], env=indexed.env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.server_info.name == "deja"
                names = {t.name for t in (await session.list_tools()).tools}
                assert names == {"recall", "recall_context", "blame", "fix", "how", "remember"}
                for _ in range(30):
                    res = await session.call_tool("recall", {"query": "connection pool", "limit": 2})
                    assert "QueuePool" in res.content[0].text
                with pytest.raises(Exception, match="query required"):
                    await session.call_tool("recall", {})
                write_jsonl(indexed.claude_file(s3), [
                    claude_user(s3, "the zebra migration stalls on the orders table", "2026-03-04T09:00:00Z", "u3"),
                    claude_assistant(s3, [{"type": "text", "text": "Batch the zebra backfill in 10k rows."}],
                                     "2026-03-04T09:01:00Z", "a3", parent="u3"),
                ])
                await anyio.to_thread.run_sync(lambda: indexed.run("index", "--rebuild"))
                res = await session.call_tool("recall", {"query": "zebra backfill"})
                assert "zebra" in res.content[0].text and "No past session" not in res.content[0].text
                found = (await session.list_resources()).resources
                assert any(str(r.uri).endswith(s3) for r in found)

    anyio.run(main)
