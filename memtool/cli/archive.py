"""`memory archive [--dry-run] [--json]`: move old daily logs and entries to memory/archive/YYYY/."""

from __future__ import annotations

import typer

from memtool.cli.common import echo_lines, layout_of, print_json


def archive(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would move."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Move daily logs older than log_retention_days and entries older than entry_retention_days
    to memory/archive/YYYY/. Pinned, high and critical entries stay. Nothing is deleted, and
    `memory search --archive` still finds what moved."""
    from memtool.archive import archive as run
    from memtool.config import load_settings

    layout = layout_of(ctx)
    settings = load_settings(layout.root)
    report = run(layout, settings, dry_run=dry_run)
    if as_json:
        print_json(report.to_dict())
        return
    verb = "would move" if dry_run else "moved"
    echo_lines(f"{'would resolve' if dry_run else 'resolved'}: {line}" for line in report.resolved)
    echo_lines(f"{verb} {line}" for line in report.logs)
    echo_lines(f"{verb} entry {entry_id} -> memory/archive/{entry_id[4:8]}/" for entry_id in report.entries)
    kept = [f"{len(report.kept_pinned)} pinned"] * bool(report.kept_pinned) + [f"{len(report.kept_important)} high/critical"] * bool(report.kept_important)
    windows = f"logs older than {settings.log_retention_days} days, entries older than {settings.entry_retention_days} days"
    if not report.logs and not report.entries:
        typer.echo(f"nothing to archive ({windows})" + (f"; kept live: {', '.join(kept)}" if kept else ""))
        return
    summary = f"{len(report.logs)} daily logs and {len(report.entries)} entries ({windows})"
    typer.echo(f"{'would archive' if dry_run else 'archived'} {summary}" + (f"; kept live: {', '.join(kept)} entries" if kept else ""))
    if not dry_run:
        typer.echo("`memory search --archive` searches them")


COMMANDS = (archive,)  # registered in this order by memtool.cli.main
