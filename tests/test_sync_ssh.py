"""deja sync ssh and bare deja sync against a real sshd on loopback, started
by the test (Debian's openssh-server; .ci/run installs it). The peer is the
same user on 127.0.0.1 whose deja runs with another HOME and machine name
(DEJA_SYNC_REMOTE), so two stores stand for two machines."""

from __future__ import annotations

import getpass
import json
import os
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import _free_port, deja_cmd
from test_sync import SA, SB, machine, session

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)


@pytest.fixture
def sshd(tmp_path):
    """An sshd on 127.0.0.1 taking one key, and an ssh config naming it ``peer-b``."""
    if not SSHD or not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        pytest.skip("no sshd/ssh on this machine: .ci/run installs Debian's openssh-server")
    d = tmp_path / "sshd"
    d.mkdir()
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    os.chmod(d / "authorized_keys", 0o600)
    port = _free_port()
    (d / "sshd_config").write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {d / 'host'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "StrictModes no", "UsePAM no",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin yes",
        f"PidFile {d / 'pid'}", "LogLevel ERROR", "Subsystem sftp internal-sftp",
    ]) + "\n")
    Path("/run/sshd").mkdir(exist_ok=True) if os.geteuid() == 0 else None  # privilege separation's folder
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=open(d / "log", "w"))
    (d / "ssh_config").write_text("\n".join([
        "Host peer-b", "  HostName 127.0.0.1", f"  Port {port}", f"  User {getpass.getuser()}",
        f"  IdentityFile {d / 'client'}", "  IdentitiesOnly yes", "  StrictHostKeyChecking no",
        "  UserKnownHostsFile /dev/null", "  LogLevel ERROR",
    ]) + "\n")
    deadline = time.time() + 15
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.skip(f"sshd would not start here: {(d / 'log').read_text().strip()[-300:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield d / "ssh_config"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def pair(tmp_path, sshd):
    a, b = machine(tmp_path / "a", "alpha"), machine(tmp_path / "b", "beta")
    remote = " ".join(["env"] + [f"{k}={shlex.quote(v)}" for k, v in b.env.items()] + [shlex.quote(c) for c in deja_cmd()])
    a.env.update(DEJA_SSH_OPTIONS=f"-F {sshd}", DEJA_SYNC_REMOTE=remote)
    return a, b


def test_a_push_over_ssh_reaches_the_peers_store_and_moves_its_watermark(pair):
    a, b = pair
    session(a, SA, "the upload times out behind nginx", "raised client_max_body_size to 50m")
    a.run("index")
    got = json.loads(a.run("sync", "ssh", "peer-b", "--json").stdout)
    assert (got["push"]["sent"], got["push"]["sessions"]) == (2, 1)
    hit = b.search("client_max_body_size")["hits"][0]["session"]
    assert (hit["orig_id"], hit["from"]) == (SA, "alpha")
    # recorded against the peer, so the next push sends only what is new
    again = json.loads(a.run("sync", "ssh", "peer-b", "--json").stdout)
    assert again["push"]["sent"] == 0
    peers = json.loads(a.run("sync", "peers", "--json").stdout)["peers"]
    assert [p["host"] for p in peers] == ["peer-b"] and peers[0]["last_push"]


def test_a_pull_brings_the_peers_sessions_and_learns_the_name_it_gives_itself(pair):
    a, b = pair
    session(b, SB, "the css build is slow", "switched the bundler to esbuild", cwd="/home/dev/src/web")
    b.run("index")
    got = json.loads(a.run("sync", "ssh", "peer-b", "--pull", "--json").stdout)
    assert (got["pull"]["received"], got["pull"]["name"]) == (2, "beta")
    hit = a.search("esbuild")["hits"][0]["session"]
    assert (hit["orig_id"], hit["from"]) == (SB, "beta")
    peers = json.loads(a.run("sync", "peers", "--json").stdout)["peers"]
    assert (peers[0]["host"], peers[0]["name"]) == ("peer-b", "beta")
    # the peer kept its watermark for this machine: a second pull brings nothing
    assert json.loads(a.run("sync", "ssh", "peer-b", "--pull", "--json").stdout)["pull"]["received"] == 0
    # the alias it is reached by stands for that name
    last = json.loads(a.run("last", "--json", "--from", "peer-b").stdout)["sessions"]
    assert [s["orig_id"] for s in last] == [SB]
    # doctor counts what came from the peer under the alias it is reached by
    sync = json.loads(a.run("doctor", "--json").stdout)["sync"]
    assert sync["peers"][0]["sessions"] == 1 and sync["imported_sessions"] == {"beta": 1}


def test_bare_sync_exchanges_with_every_peer_both_ways_without_echo(pair):
    a, b = pair
    session(a, SA, "migrations hang on deploy", "we added a lock_timeout")
    session(b, SB, "redis evictions at noon", "set allkeys-lru")
    a.run("index")
    b.run("index")
    a.run("sync", "ssh", "peer-b")  # adds the peer
    a.run("sync")  # both ways with every peer
    assert a.search("allkeys-lru")["hits"][0]["session"]["from"] == "beta"
    assert b.search("lock_timeout")["hits"][0]["session"]["from"] == "alpha"
    # nothing comes back to where it started, however often they sync
    a.run("sync")
    assert [h["session"]["id"] for h in a.search("lock_timeout")["hits"]] == [SA]
    assert [h["session"]["id"] for h in b.search("allkeys-lru")["hits"]] == [SB]


def test_a_host_typed_in_another_case_is_the_stored_peer(pair):
    a, _ = pair
    session(a, SA, "flaky test in CI", "the temp dir was shared between workers")
    a.run("index")
    a.run("sync", "ssh", "peer-b")
    # (ssh's own config matches Host patterns without case too; the row keeps its first spelling)
    got = json.loads(a.run("sync", "ssh", "PEER-B", "--json").stdout)
    assert got["push"]["host"] == "peer-b" and got["push"]["sent"] == 0
    assert len(json.loads(a.run("sync", "peers", "--json").stdout)["peers"]) == 1
    a.run("sync", "forget", "Peer-B")
    assert json.loads(a.run("sync", "peers", "--json").stdout)["peers"] == []


def test_an_unreachable_peer_is_one_line_and_the_watermark_stays(pair, tmp_path):
    a, _ = pair
    session(a, SA, "flaky test in CI", "the temp dir was shared between workers")
    a.run("index")
    bad = a.run("sync", "ssh", "nobody@127.0.0.1", check=False, extra_env={"DEJA_SSH_OPTIONS": "-o ConnectTimeout=3 -o Port=1"})
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    # nothing was delivered, so nothing is marked sent
    assert json.loads(a.run("sync", "ssh", "peer-b", "--json").stdout)["push"]["sent"] == 2
