"""`memory config show|check|trust|untrust`: the settings in effect, and approving a repository's config.

Thin layer over memtool.config: parse options, call it, render. Errors (a bad value, a config that
is not a regular file, a malformed trusted.json) are ConfigError, exit 5, with file and line.
"""

from __future__ import annotations

import typer

from memtool.cli.common import command_group, echo, echo_lines, print_json, root_path, warn

app = command_group("Show the settings in effect and where each came from; approve (trust) this repository's memory/config.yaml.")


def _report(root, loaded, lines=()) -> None:
    """Both config files and their state, then `lines`; on stderr what the repository's config may not set."""
    from memtool.config import trust_file, withheld_message

    user, repo = loaded.user, loaded.repo
    if repo.data is None:
        state = "none"
    elif not repo.needing_trust():
        state = f"{len(repo.values)} setting(s); none needs approval"
    elif loaded.repo_trusted:
        state = f"approved in {trust_file()}; its protected settings apply"
    else:
        state = "NOT approved: its protected settings are ignored"
    users = f"{len(user.values)} setting(s)" if user.data is not None else "none"
    echo_lines([f"user config: {user.path} ({users})", f"repository config: {repo.path} ({state})", *lines])
    if loaded.withheld:
        warn(withheld_message(root, loaded))


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print each setting's value, origin and description as JSON."),
) -> None:
    """Every setting in effect, and where it came from: default, your config, the repository's config, or the environment."""
    from dataclasses import asdict

    from memtool.config import FIELDS, load, protection, shown

    root = root_path(ctx)
    loaded = load(root)
    values = asdict(loaded.settings)
    if as_json:
        print_json(
            {
                "user_config": str(loaded.user.path),
                "repo_config": str(loaded.repo.path),
                "repo_trusted": loaded.repo_trusted,
                "settings": {
                    name: {"value": values[name], "origin": loaded.origins[name], "protected": protection(name), "description": FIELDS[name].metadata["help"]}
                    for name in FIELDS
                },
                "ignored": loaded.withheld,
            }
        )
        return
    width = max(map(len, FIELDS))
    _report(root, loaded, [f"{name:<{width}}  {shown(values[name])}  ({loaded.origins[name]})" for name in FIELDS])


@app.command("check")
def check(ctx: typer.Context) -> None:
    """Check your config, the repository's and MEMTOOL_* variables (types, ranges, YAML limits); say whether the repository's config is approved.

    Exits 5 on a bad setting, naming the file and line or the variable."""
    from memtool.config import load

    root = root_path(ctx)
    _report(root, load(root))
    echo("ok: every setting is valid")


@app.command("trust")
def trust_cmd(ctx: typer.Context) -> None:
    """Approve this repository's memory/config.yaml as it is now, so that its protected settings apply.

    Read the file first: it came with the repository. Any later change to it withdraws the approval."""
    from memtool.config import approve, shown, trust_file

    approval = approve(root_path(ctx))
    echo(f"trusted {approval.path} (sha256 {approval.digest[:12]}…), recorded in {trust_file()}")
    if approval.protected:
        echo("its protected settings now apply: " + ", ".join(f"{name}: {shown(value)}" for name, value in approval.protected.items()))
    else:
        echo("it sets no protected setting today; an edit that adds one will need `memory config trust` again")


@app.command("untrust")
def untrust_cmd(ctx: typer.Context) -> None:
    """Withdraw the approval of this repository's memory/config.yaml: its protected settings are ignored again."""
    from memtool.config import repo_config_path, withdraw

    root = root_path(ctx)
    echo(f"{'no longer trusted' if withdraw(root) else 'was not trusted'}: {repo_config_path(root)}")
