"""Provider follow-up commands: retry."""

from __future__ import annotations

from typing import Optional

import typer

from memtool.cli.common import echo_lines, open_from, print_json, progress_bar


def retry(
    ctx: typer.Context,
    provider: Optional[str] = typer.Option(
        None, "--provider", help="Compressor for pending entries: gemini, or local to keep the local summaries. Default: from config."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was done as JSON."),
) -> None:
    """Complete pending entries (saved with a local stand-in when the provider failed) and embed entries saved without vectors.

    Exits non-zero when something is still pending, with the reason."""
    from memtool.retry import retry as run
    from memtool.retry import work

    mem = open_from(ctx)
    pending, unembedded = work(mem)
    total = len(pending) + len(unembedded)
    with progress_bar("retrying", total, total > 1 and not as_json) as advance:
        report = run(mem, provider, progress=advance)
    if as_json:
        print_json(report.to_dict())
    else:
        echo_lines(f"{entry_id}  completed with {model}" for entry_id, model in report.completed.items())
        if report.embedded:
            typer.echo(f"{len(report.embedded)} entr{'y' if len(report.embedded) == 1 else 'ies'} embedded with {mem.embedder.model}")
        if report.skipped:
            typer.echo(f"{len(report.skipped)} entries changed while retrying; left alone: {', '.join(report.skipped)}")
        if not total:
            typer.echo("nothing to retry: no pending entries, and every entry has its vector")
        for title, failures in (("still pending", report.pending), ("still without a vector", report.unembedded)):
            by_reason: dict[str, list[str]] = {}
            for entry_id, failure in failures.items():
                by_reason.setdefault(failure.reason, []).append(entry_id)
            for reason, ids in by_reason.items():
                typer.echo(f"error: {title} ({len(ids)}: {', '.join(ids[:5])}{' …' if len(ids) > 5 else ''}): {reason}", err=True)
    if not report.ok:
        raise typer.Exit(report.exit_code)


COMMANDS = (retry,)  # registered in this order by memtool.cli.main
