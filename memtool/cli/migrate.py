"""`memory migrate [--dry-run] [--json]`: move a store made by an older memtool to the current layout."""

from __future__ import annotations

import typer

from memtool.cli.common import echo_lines, print_json, root_path


def migrate(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would move."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Move a store made by an older memtool to the current layout, losslessly: transcripts and
    vectors into month folders, vectors from JSON floats to binary float16, index.json out of git
    (it is derived; each clone builds its own). Safe to interrupt and to run again."""
    from memtool.migrate import migrate as run

    report = run(root_path(ctx), dry_run=dry_run)
    if as_json:
        print_json(report.to_dict())
        return
    would = "would " if dry_run else ""
    if not report.moved and not report.index_untracked and not report.index_command:
        typer.echo("the store is already in the current layout: nothing to move")
    if report.transcripts:
        typer.echo(f"{would}move {report.transcripts} transcripts into month folders (memory/transcripts/YYYY-MM/)")
    if report.vectors:
        typer.echo(f"{would}write {report.vectors} vectors as binary float16 files in month folders (memory/index/embeddings/YYYY-MM/<id>.vec)")
    for path in report.set_aside:
        typer.echo(f"{would}set aside unreadable vector {path} in memory/quarantine/ (the next `memory reindex` embeds its entry again)")
    echo_lines(f"left in place: {line}" for line in report.left)
    if report.index_untracked:
        typer.echo(f"{would}untrack memory/index/index.json from git (git rm --cached; the file stays, git-ignored)")
    if report.index_command:
        typer.echo(f"index.json is derived and no longer versioned: run `{report.index_command}`")
    if not dry_run and (report.moved or report.index_untracked or report.attributes):
        typer.echo("commit the result (git add -A && git commit), so every clone gets the new layout")
