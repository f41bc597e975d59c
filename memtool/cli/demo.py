"""`memory demo`: the main job, offline, in one command, on a throwaway root."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Optional

import typer

from memtool.cli.common import console, markup

DEMO_QUERY = "why did we move to Auth0 and what are the next steps"
RELEVANT_SHARE = 0.5  # the demo shows hits scoring at least this share of the best one (scores are relative)
NEXT_COMMANDS = (
    ("memory init", "start a memory in your project"),
    ("memory hooks install --agent claude-code", "wire in your agent (or codex, gemini)"),
    ('memory search "why did we drop Redis"', "look something up (memory --help)"),
)


def demo(
    keep: Optional[Path] = typer.Option(None, "--keep", help="Build the demo root in this folder and keep it (default: a temp folder, deleted after)."),
    query: str = typer.Option(DEMO_QUERY, help="The query to search and build context for."),
) -> None:
    """Build a throwaway memory from example sessions, then search it and build a session-start context."""
    from datetime import datetime
    from importlib import resources

    from rich.panel import Panel
    from rich.table import Table

    from memtool.app import open_memory
    from memtool.memory import Session
    from memtool.scaffold import init

    out = console()
    root = keep or Path(tempfile.mkdtemp(prefix="memtool-demo-"))
    try:
        init(root)
        mem = open_memory(root)
        examples = sorted((p for p in resources.files("memtool").joinpath("examples").iterdir() if p.name.endswith(".md")), key=lambda p: p.name)
        sessions = [
            Session(text=p.read_text(encoding="utf-8"), when=datetime.fromisoformat(p.name[:10] + "T16:00").astimezone(), session=p.name[11:-3], agent="demo")
            for p in examples
        ]
        out.print(f"[bold]1. compress[/bold] {len(sessions)} example sessions into {root}")
        entries = mem.compress_many(sessions).entries
        table = Table(box=None)
        table.add_column("id", no_wrap=True, min_width=len(entries[0].id) if entries else None)
        for col in ("session", "ratio", "summary"):
            table.add_column(col, overflow="fold")
        for e in entries:
            table.add_row(e.id, e.source_session, e.compression_ratio, e.summary[:90])
        out.print(table)
        mem.log("Demo: started work on refresh token rotation tests.", agent="demo")
        out.print(f"\n[bold]2. search[/bold] {query!r}")
        hits = mem.search(query, limit=3).hits
        shown = relevant(hits)
        for h in shown:
            out.print(f"  {h.score:.3f}  {h.kind:6} {h.id}  {markup(h.text[:100])}", overflow="ellipsis", no_wrap=True, crop=True)
        if len(shown) < len(hits):
            out.print(f"  ({len(hits) - len(shown)} weaker hits left out: below {RELEVANT_SHARE:.0%} of the best score)")
        res = mem.context(query, budget=600, limit=max(len(shown), 1))
        out.print(f"\n[bold]3. context[/bold] for a new session ({res.tokens}/{res.budget} tokens, template {res.template})")
        out.print(Panel(res.text, expand=False), markup=False)
        if res.dropped:
            out.print("dropped to fit: " + "; ".join(res.dropped), markup=False)
        out.print(f"\nFiles are plain Markdown and JSON: look in {root / 'memory'}" + ("" if keep else " (deleted now; use --keep DIR to keep them)"))
        out.print("\n[bold]Next[/bold], in your project:")
        for command, what in NEXT_COMMANDS:
            out.print(f"  {command:<41} {what}", markup=False)
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def relevant(hits: list) -> list:
    """The hits worth showing: something matched (score above 0) and at least RELEVANT_SHARE of the best."""
    best = max((h.score for h in hits), default=0.0)
    return [h for h in hits if h.score > 0 and h.score >= RELEVANT_SHARE * best]


COMMANDS = (demo,)  # registered in this order by memtool.cli.main
