"""`deja sync`: moving memory between machines (logic in deja.pipeline.sync and
deja.pipeline.sync_ssh)."""

from __future__ import annotations

# typer reads the commands' annotations from this module's names
from typing import Optional  # noqa: F401

from deja.pipeline.cli_common import HELP_JSON, Fail, out_json, say

ACTIONS = ("export", "import", "ssh", "peers", "forget")


def register(app) -> None:
    import typer

    @app.command("sync")
    def sync_cmd(
        action: Optional[str] = typer.Argument(None, metavar="ACTION", help="export DIR, import DIR, ssh HOST, peers, forget HOST; none: every peer, both ways."),
        target: Optional[str] = typer.Argument(None, metavar="DIR|HOST", help="The folder of batches, or the peer (as ssh names it)."),
        full: bool = typer.Option(False, "--full", help="Send everything, not only what the peer has not had."),
        peer: Optional[str] = typer.Option(None, "--peer", metavar="NAME", help="export: the machine the batch is for (its own watermark)."),
        pull: bool = typer.Option(False, "--pull", help="ssh: bring the peer's sessions here instead of sending ours."),
        both: bool = typer.Option(False, "--both", help="ssh: both ways."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
    ) -> None:
        """Move memory between machines: redacted JSONL batches, imported sessions namespaced and marked with the machine they came from."""
        from deja.pipeline import sync, sync_ssh

        if action is not None and action not in ACTIONS:
            raise Fail(f"unknown sync action {action!r} (one of: {', '.join(ACTIONS)}; none syncs with every peer)")
        if action in ("export", "import", "ssh", "forget") and not target:
            raise Fail(f"deja sync {action} needs a {'folder' if action in ('export', 'import') else 'host'}")
        if action == "export":
            got = sync.export(target, peer=peer, full=full, notice=say)
            got.pop("watermarks")
            if as_json:
                out_json({"schema_version": 2, **got})
            elif got["path"]:
                print(f"exported {got['records']} records of {got['sessions']} sessions to {got['path']}")
            else:
                print("nothing new to export" + (f" for {peer}" if peer else ""))
        elif action == "import":
            got = sync.import_batches(target, notice=say)
            if as_json:
                out_json({"schema_version": 2, **got})
            else:
                print(f"imported {got['records']} records of {got['sessions']} sessions"
                      + (f" ({got['duplicates']} already here)" if got["duplicates"] else "")
                      + (f"; {got['echoed']} of this machine's own left out" if got["echoed"] else ""))
        elif action == "ssh":
            got = sync_ssh.exchange(target, send=not pull or both, receive=pull or both, full=full, notice=say)
            if as_json:
                out_json({"schema_version": 2, **got})
            else:
                _say_exchange(got)
        elif action == "peers":
            rows = sync.load_peers()
            if as_json:
                out_json({"schema_version": 2, "peers": rows})
                return
            if not rows:
                print(f"no peers yet; `deja sync ssh <host>` adds one ({sync.peers_path()})")
            for r in rows:
                name = f" (calls itself {r['name']})" if r.get("name") and r["name"] != r["host"] else ""
                print(f"{r['host']}{name}  pushed {r.get('last_push') or 'never'}, pulled {r.get('last_pull') or 'never'}")
        elif action == "forget":
            row = sync.forget_peer(target)
            if as_json:
                out_json({"schema_version": 2, "forgot": row})
            else:
                print(f"forgot peer {row['host']}; what came from it stays")
        else:
            done = sync_ssh.sync_all(full=full, notice=say)
            if as_json:
                out_json({"schema_version": 2, "peers": done})
            else:
                for got in done:
                    _say_exchange(got)
            if any("error" in d for d in done):
                raise Fail("some peers could not be reached (said above)")


def _say_exchange(got: dict) -> None:
    if "error" in got:
        return
    if "pull" in got:
        p = got["pull"]
        print(f"{got['host']}: received {p['received']} records of {p['sessions']} sessions"
              + (f" from {p['name']}" if p.get("name") and p["name"] != got["host"] else ""))
    if "push" in got:
        p = got["push"]
        print(f"{got['host']}: sent {p['sent']} records of {p['sessions']} sessions")
