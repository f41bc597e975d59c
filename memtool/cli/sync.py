"""Commands that keep the index in line with the files: reindex, watch, reembed."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator, Optional

import typer

from memtool import constants as C
from memtool.cli.common import open_from, print_json, warn

PROGRESS_AFTER = 64  # show a progress bar only for work at least this large


def register(app: typer.Typer) -> None:
    app.command("reindex")(reindex)
    app.command("watch")(watch)
    app.command("reembed")(reembed)


@contextmanager
def _progress(enabled: bool) -> Iterator:
    """A rich progress bar on stderr, imported and shown only on a terminal and once there is long work."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    state: dict = {"bar": None, "tasks": {}}

    def update(task: str, done: int, total: int) -> None:
        tasks = state["tasks"]
        if task not in tasks:
            if total and total < PROGRESS_AFTER:
                return
            if state["bar"] is None:
                from rich.console import Console
                from rich.progress import Progress

                state["bar"] = Progress(console=Console(stderr=True), transient=True)
                state["bar"].start()
            for earlier in tasks.values():  # one line at a time: the current step
                state["bar"].update(earlier, visible=False)
            tasks[task] = state["bar"].add_task(task, total=total or None)
        state["bar"].update(tasks[task], completed=done)

    try:
        yield update
    finally:
        if state["bar"] is not None:
            state["bar"].stop()


def _render(report, as_json: bool) -> None:
    if as_json:
        print_json(report.to_dict())
        return
    typer.echo(report.line())
    for problem in [*report.warnings, *report.errors]:
        warn(problem)


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

    from memtool.search.fill import fill_vectors, run_background
    from memtool.search.store import refresh_index

    mem = open_from(ctx)
    problems: list[str] = []
    refresh_index(mem.layout, mem.embedder, errors=problems)  # the documents as the files are now (words only: cheap)
    if background:
        run_background(mem.layout, mem.embedder, lambda line: typer.echo(f"{datetime.now():%Y-%m-%d %H:%M:%S} {line}"))
        return
    with _progress(not as_json) as progress:
        step = (lambda done, total: progress("embedding documents", done, total)) if progress else None
        report = fill_vectors(mem.layout, mem.embedder, step, batch or C.FILL_BATCH, from_end=True, words_batch=batch or C.WORDS_FILL_BATCH)
    report.errors[:0] = problems
    if as_json:
        print_json(vars(report))
        return
    indexed = f"{report.indexed} kept transcripts indexed, " if report.indexed else ""
    typer.echo(f"{indexed}{report.filled} documents embedded, {report.left} without a vector")
    for problem in report.errors:
        warn(problem)


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
        typer.echo(f"{report.embedder_set}: embedder set to {provider}")
    _render(report, as_json)


def watch(
    ctx: typer.Context,
    once: bool = typer.Option(False, "--once", help="Exit after the first sync triggered by a change."),
    debounce: float = typer.Option(C.WATCH_DEBOUNCE_S, "--debounce", min=0.0, help="Seconds of quiet before a sync."),
) -> None:
    """Watch the root and sync on every change (debounced). One status line per sync; entries left
    pending by a provider failure are retried at start and after changes (at most every 5 minutes). Ctrl-C stops."""
    from datetime import datetime

    from memtool.watch import Watcher

    mem = open_from(ctx)

    def on_sync(report) -> None:
        typer.echo(f"{datetime.now():%H:%M:%S} {report.line()}")
        for problem in report.errors:
            warn(problem)

    def on_error(exc) -> None:
        typer.echo(f"{datetime.now():%H:%M:%S} sync failed: {exc}", err=True)

    def on_warning(message: str) -> None:  # memory/ gone for a while, a folder that cannot be watched
        typer.echo(f"{datetime.now():%H:%M:%S} warning: {message}", err=True)

    def on_retry(report) -> None:  # entries a provider failure left pending (`memory retry`)
        still = {**report.pending, **report.unembedded}
        line = f"retry: {len(report.completed)} completed, {len(report.embedded)} embedded"
        if still:
            line += f", {len(still)} still pending ({next(iter(still.values())).reason})"
        typer.echo(f"{datetime.now():%H:%M:%S} {line}")

    typer.echo(f"watching {mem.layout.root} (Ctrl-C to stop)", err=True)
    try:
        watcher = Watcher(
            mem,
            debounce=debounce,
            max_latency=max(C.WATCH_MAX_LATENCY_S, debounce),
            on_sync=on_sync,
            on_error=on_error,
            reopen=lambda: open_from(ctx),
            on_retry=on_retry,
            on_warning=on_warning,
        )
        watcher.run(once=once)
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)
