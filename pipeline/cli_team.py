"""`deja team`: the team store (logic in deja.pipeline.team)."""

from __future__ import annotations

# typer reads the commands' annotations from this module's names
from typing import Optional  # noqa: F401

from deja.pipeline.cli_common import HELP_JSON, Fail, out_json, say

ACTIONS = ("init", "publish", "pull", "status")


def register(app) -> None:
    import typer

    @app.command("team")
    def team_cmd(
        action: str = typer.Argument(..., metavar="ACTION", help="init, publish, pull or status."),
        catalog: Optional[str] = typer.Option(None, "--catalog", metavar="DSN", help="init: the Postgres the Iceberg catalog lives in (no password: PGPASSWORD or ~/.pgpass)."),
        data: Optional[str] = typer.Option(None, "--data", metavar="FOLDER|s3://BUCKET/PREFIX", help="init: where the tables' data files go."),
        machine: Optional[str] = typer.Option(None, "--machine", metavar="NAME", help="init: this machine's name in the tables (default: DEJA_MACHINE or the host name)."),
        full: bool = typer.Option(False, "--full", help="publish: replace everything this machine has in the tables."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
    ) -> None:
        """Share memory with a team: Iceberg tables on a Postgres catalog that every machine publishes to and pulls from."""
        from deja.pipeline import team

        if action not in ACTIONS:
            raise Fail(f"unknown team action {action!r} (one of: {', '.join(ACTIONS)})")
        if action == "init":
            if not catalog or not data:
                raise Fail("deja team init needs --catalog DSN and --data FOLDER (or s3://bucket/prefix)")
            got = team.init(catalog, data, machine)
            if as_json:
                out_json({"schema_version": 2, **got})
            else:
                print(f"team store ready: {got['warehouse']} (catalog {got['catalog']}); "
                      f"this machine is {got['machine']}; settings in {got['config']}")
        elif action == "publish":
            got = team.publish(full=full, notice=say)
            if as_json:
                out_json({"schema_version": 2, **got})
            else:
                print(f"published {got['records']} records of {got['sessions']} sessions as {got['machine']}"
                      + (f"; {got['retracted']} forgotten sessions removed" if got["retracted"] else ""))
        elif action == "pull":
            got = team.pull(notice=say)
            if as_json:
                out_json({"schema_version": 2, **got})
            else:
                print(f"pulled {got['records']} records of {got['sessions']} sessions"
                      + (f" from {', '.join(sorted(got['machines']))}" if got["machines"] else "")
                      + (f" ({got['duplicates']} already here)" if got["duplicates"] else ""))
        else:
            t = team.load_team()
            got = {"config": str(team.config_path()), "catalog": t.uri, "warehouse": t.warehouse, "machine": t.machine}
            if as_json:
                out_json({"schema_version": 2, **got})
            else:
                print(f"team store {got['warehouse']}, catalog {got['catalog']}, this machine {got['machine']}")
