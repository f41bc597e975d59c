"""`memory git setup` and `memory merge-driver`: a memory shared through git (memtool/gitmerge.py)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import typer

from memtool.cli.common import command_group, echo, layout_of, print_json

app = command_group("Share the memory through git: merge rules and the merge driver.")


def register(main: typer.Typer) -> None:
    main.add_typer(app, name="git")
    main.command("merge-driver", hidden=True)(merge_driver)


@app.command()
def setup(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Write .gitattributes (how git merges logs, entries, vectors, MEMORY.md), register memtool's
    merge driver in this clone's git config, derive index.json (git-ignored) when it is missing and pin
    the store's embedder in memory/config.yaml when it is left to `auto`. Run once in every fresh
    clone; safe to run again."""
    from memtool.gitmerge import setup_git
    from memtool.scaffold import pin_embedder

    layout = layout_of(ctx)
    done = setup_git(layout.root)
    pinned = pin_embedder(layout.root)  # one model for everyone: written into the shared memory/config.yaml
    if as_json:  # GitSetup's fields (paths as text), embedder_pinned before the last one
        print_json({k: v for k, v in asdict(done).items() if k != "index_built"} | {"embedder_pinned": pinned, "index_built": done.index_built})
        return
    if pinned:
        echo(f"embedder: {pinned} written to {layout.config_file.relative_to(layout.root)} (commit it: every clone then uses that model)")
    echo(f"{'wrote' if done.wrote_attributes else 'kept'} {done.attributes}")
    if done.index_built:
        echo(f"derived {layout.index_file.relative_to(layout.root)} from the day files (git-ignored: each clone builds its own)")
    if done.registered:
        echo(f"registered the memtool merge driver in {done.repository}/.git/config")
    else:
        echo(f"{layout.root} is not inside a git work tree: run `memory git setup` again after `git init` or `git clone`")


def merge_driver(
    base: Path = typer.Argument(..., help="%O: the common ancestor's version."),
    ours: Path = typer.Argument(..., help="%A: ours; the merge is written here."),
    theirs: Path = typer.Argument(..., help="%B: theirs."),
    path: str = typer.Argument(..., help="%P: the file's path in the repository."),
) -> None:
    """Run by git (registered by `memory git setup`): merge one file of the memory. Exit 1 on a real conflict."""
    from memtool.gitmerge import run_driver

    raise typer.Exit(run_driver(base, ours, theirs, path))
