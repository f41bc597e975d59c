"""`memory ui`: the local browser viewer (memtool/ui/)."""

from __future__ import annotations

import threading

import typer

from memtool.cli.common import open_from, warn


def ui(
    ctx: typer.Context,
    no_browser: bool = typer.Option(False, "--no-browser", help="Only print the URL to open (it holds this run's token)."),
    no_watch: bool = typer.Option(False, "--no-watch", help="Do not sync on file changes (no live updates)."),
) -> None:
    """Browse, search and correct this root's memory in the browser: served on 127.0.0.1 at a free
    port, for this run only (a token in the URL), until Ctrl-C."""
    from memtool.extras import require

    require("ui", "`memory ui` (the browser viewer)")
    from memtool.ui.server import Server, watch

    mem = open_from(ctx)
    server = Server(mem)
    stop = threading.Event()
    if not no_watch:
        watch(mem, server.hub, stop, lambda: open_from(ctx), warn)
    typer.echo(f"memory ui for {mem.layout.root}\n{server.url}\n(Ctrl-C stops it; the link works for this run only)")
    if not no_browser:
        import webbrowser

        threading.Timer(0.3, webbrowser.open, args=(server.url,)).start()
    try:
        server.run()
    finally:
        stop.set()


COMMANDS = (ui,)  # registered by memtool.cli.main
