"""Commands that keep the index in line with the files: reindex, watch, reembed; retry what a provider failure left pending."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator, Optional

import typer

from memtool import constants as C
from memtool.cli.common import echo, echo_lines, open_from, print_json, progress_bar, warn

PROGRESS_AFTER = 64  # show a progress bar only for work at least this large


@contextmanager
def _progress(enabled: bool) -> Iterator:
    """A rich progress bar on stderr, imported and shown only on a terminal and once there is long work."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, TaskID

    bar = Progress(console=Console(stderr=True), transient=True)  # started by the first long step
    tasks: dict[str, TaskID] = {}

    def update(task: str, done: int, total: int) -> None:
        if task not in tasks:
            if total and total < PROGRESS_AFTER:
                return
            bar.start()
            for earlier in tasks.values():  # one line at a time: the current step
                bar.update(earlier, visible=False)
            tasks[task] = bar.add_task(task, total=total or None)
        bar.update(tasks[task], completed=done)

    try:
        yield update
    finally:
        if bar.live.is_started:
            bar.stop()


def _render(report, as_json: bool) -> None:
    if as_json:
        print_json(report.to_dict())
        return
    echo(report.line())
    warn(*report.warnings, *report.errors)


def reindex(
    ctx: typer.Context,
    full: bool = typer.Option(False, "--full", help="Rebuild everything: index.json, every embedding, the search cache."),
    vectors: bool = typer.Option(False, "--vectors", help="Only the fill: transcripts a search left out, then missing vectors (a batch per transaction)."),
    background: bool = typer.Option(False, "--background", hidden=True, help="As the background fill a search starts: one at a time, at low priority."),
    batch: Optional[int] = typer.Option(None, "--batch", min=1, help="With --vectors: documents (entries) per transaction (what an interruption keeps)."),
    as_json: bool = typer.Option(False, "--json", help="Print the sync report as JSON."),
) -> None:
    """Bring index.json, the embeddings and the search cache in line with the files (only what changed),
    then embed the search cache's documents that have no vector yet."""
    if vectors:
        return _fill(ctx, background, batch, as_json)
    from memtool.sync import sync

    mem = open_from(ctx)
    with _progress(not as_json) as progress:
        report = sync(mem, full=full, progress=progress)
    _render(report, as_json)


def _fill(ctx: typer.Context, background: bool, batch: int | None, as_json: bool) -> None:
    """`reindex --vectors`: the vector fill (memtool/search/fill.py) alone, in the foreground with
    progress, or as the background fill a search started (its output goes to memory/.cache/embed.log)."""
    from datetime import datetime

    from memtool.search.build import refresh_cache
    from memtool.search.fill import fill_vectors, run_background

    mem = open_from(ctx)
    problems: list[str] = []
    refresh_cache(mem.layout, mem.embedder, errors=problems)  # the documents as the files are now (words only: cheap)
    if background:
        run_background(mem.layout, mem.embedder, lambda line: echo(f"{datetime.now():%Y-%m-%d %H:%M:%S} {line}"))
        return
    with _progress(not as_json) as progress:
        step = (lambda done, total: progress("embedding documents", done, total)) if progress else None
        size, words = batch or C.FILL_BATCH, batch or C.WORDS_FILL_BATCH
        report = fill_vectors(mem.layout, mem.embedder, step, size, from_end=True, words_batch=words, every_file=True)
    report.errors[:0] = problems
    if as_json:
        print_json(vars(report))
        return
    indexed = f"{report.indexed} kept transcripts indexed, " if report.indexed else ""
    files = f", {report.passage_files} passages files written" if report.passage_files else ""
    echo(f"{indexed}{report.filled} documents embedded, {report.left} without a vector{files}")
    warn(*report.errors)


def reembed(
    ctx: typer.Context,
    provider: Optional[str] = typer.Option(None, "--provider", help="Embedder to switch to (e5, wordllama, gemini...). Default: the configured one."),
    as_json: bool = typer.Option(False, "--json", help="Print the sync report as JSON."),
) -> None:
    """Re-embed every entry whose vector is not from the embedder. With --provider, switch to it (written to
    memory/config.yaml first, so a running `memory watch` follows). Incremental and resumable: run it again."""
    from memtool.sync import reembed as run

    mem = open_from(ctx, embedder=provider) if provider else open_from(ctx)
    with _progress(not as_json) as progress:
        report = run(mem, provider, progress=progress)
    if report.embedder_set and not as_json:
        echo(f"{report.embedder_set}: embedder set to {provider}")
    _render(report, as_json)


def watch(
    ctx: typer.Context,
    once: bool = typer.Option(False, "--once", help="Sync once (and retry pending entries) and exit, without waiting for a change."),
    debounce: float = typer.Option(C.WATCH_DEBOUNCE_S, "--debounce", min=0.0, help="Seconds of quiet before a sync."),
) -> None:
    """Watch the root and sync on every change (debounced). One status line per sync; entries left
    pending by a provider failure are retried at start and after changes (at most every 5 minutes). Ctrl-C stops."""
    from datetime import datetime

    from memtool.watch import Watcher

    mem = open_from(ctx)

    def say(line: str, err: bool = False) -> None:
        echo(f"{datetime.now():%H:%M:%S} {line}", err=err)

    def on_sync(report) -> None:
        say(report.line())
        warn(*report.errors)

    def on_retry(report) -> None:  # entries a provider failure left pending (`memory retry`)
        still = {**report.pending, **report.unembedded}
        line = f"retry: {len(report.completed)} completed, {len(report.embedded)} embedded"
        say(line + (f", {len(still)} still pending ({next(iter(still.values())).reason})" if still else ""))

    if not once:
        echo(f"watching {mem.layout.root} (Ctrl-C to stop)", err=True)
    try:
        watcher = Watcher(
            mem,
            debounce=debounce,
            max_latency=max(C.WATCH_MAX_LATENCY_S, debounce),
            on_sync=on_sync,
            on_error=lambda exc: say(f"sync failed: {exc}", err=True),
            reopen=lambda: open_from(ctx),
            on_retry=on_retry,
            on_warning=lambda message: say(f"warning: {message}", err=True),  # memory/ gone, a folder that cannot be watched
        )
        watcher.run(once=once)
    except KeyboardInterrupt:
        echo("stopped", err=True)


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
            echo(f"{len(report.embedded)} entr{'y' if len(report.embedded) == 1 else 'ies'} embedded with {mem.embedder.model}")
        if report.skipped:
            echo(f"{len(report.skipped)} entries changed while retrying; left alone: {', '.join(report.skipped)}")
        if not total:
            echo("nothing to retry: no pending entries, and every entry has its vector")
        for title, failures in (("still pending", report.pending), ("still without a vector", report.unembedded)):
            for reason in dict.fromkeys(f.reason for f in failures.values()):  # one line per reason, in order of first failure
                ids = [entry_id for entry_id, f in failures.items() if f.reason == reason]
                echo(f"error: {title} ({len(ids)}: {', '.join(ids[:5])}{' …' if len(ids) > 5 else ''}): {reason}", err=True)
    if not report.ok:
        raise typer.Exit(report.exit_code)


COMMANDS = (retry, reindex, watch, reembed)  # registered in this order by memtool.cli.main
