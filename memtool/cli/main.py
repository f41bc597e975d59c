"""Entry point of the `memory` command. Each command group lives in its own module."""

from __future__ import annotations

from typing import Optional

import typer

from memtool.cli import config as config_cli
from memtool.cli import demo, doctor, hooks, imports, lifecycle, read, serve, ui, write
from memtool.cli import git as git_cli
from memtool.cli import sync as sync_cli
from memtool.cli.common import command_group, echo

app = command_group("File-first memory for AI coding agents: daily logs, a compressed index, hybrid search, token-budgeted context.")


def version() -> str:
    """The installed package's version (its metadata), else the source tree's."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version("memtool")
    except PackageNotFoundError:  # run from a source tree that is not installed
        from memtool import __version__

        return __version__


def _print_version(given: bool) -> None:
    if given:
        echo(f"memory (memtool) {version()}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    root: Optional[str] = typer.Option(
        None, "--root", help="Memory root folder (default: $MEMTOOL_ROOT, else the nearest folder up from here holding memory/, else here)."
    ),
    show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
) -> None:
    ctx.obj = {"root": root}


for module in (write, read, lifecycle, sync_cli, doctor, serve, ui, demo):
    for command in module.COMMANDS:  # named after the function
        app.command()(command)
app.command(name="import")(imports.import_sessions)  # `import` is a Python keyword
app.add_typer(hooks.app, name="hooks")
app.add_typer(config_cli.app, name="config")
git_cli.register(app)
app.command()(lifecycle.migrate)


def run() -> None:
    app()


if __name__ == "__main__":
    run()
