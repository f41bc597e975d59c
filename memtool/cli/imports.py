"""`memory import`: the agents' earlier sessions of this project, found, shown and compressed (memtool.importer)."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, List, Optional

import typer

from memtool.cli.common import echo_lines, open_from, print_json, warn

if TYPE_CHECKING:
    from memtool.agent_history import FoundSession
    from memtool.importer import ImportPlan


def import_sessions(
    ctx: typer.Context,
    agent: Optional[List[str]] = typer.Option(
        None, "--agent", help="Only this agent's sessions: claude-code, codex or gemini (repeatable). Default: all three."
    ),
    since: Optional[str] = typer.Option(
        None, "--since", help="Only sessions whose transcript changed at or after this time (ISO, '1 March 2026', 'last week')."
    ),
    all_projects: bool = typer.Option(False, "--all-projects", help="Sessions of every project on this machine, not only those that ran in the memory root."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Only show what was found: sessions, date range and size per agent. Nothing is read whole or stored."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before importing (never asked when stdin is not a terminal)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was found (and, unless --dry-run, what was stored) as JSON."),
) -> None:
    """Import the sessions Claude Code, Codex CLI and Gemini CLI already keep on disk for this project:
    each is compressed as the hooks compress a session at its end, dated by its own timestamps, oldest
    first. Sessions memory already holds (by the agent's session id) are skipped, so it is safe to run
    again, and an import that was stopped goes on where it left off."""
    from memtool.agent_history import AGENTS
    from memtool.dates import parse_when
    from memtool.importer import plan_import, run_import

    mem = open_from(ctx)
    cutoff = parse_when(since) if since else None
    plan = plan_import(mem, mem.layout.root, agent or AGENTS, cutoff, all_projects)
    warn(*plan.warnings)
    if as_json and dry_run:
        print_json(plan.to_dict())
        return
    if not as_json:
        _show_plan(plan, agent or AGENTS)
    if dry_run or not plan.todo:
        if dry_run and plan.todo and not as_json:
            typer.echo(f"dry run: nothing stored; `memory import` would compress {len(plan.todo)} session{_s(len(plan.todo))}")
        if as_json:
            print_json(plan.to_dict() | {"result": None})
        return
    if not yes and sys.stdin.isatty() and not typer.confirm(f"Import {len(plan.todo)} session{_s(len(plan.todo))}?", default=True):
        raise typer.Exit(1)
    began = time.monotonic()
    with _progress(len(plan.todo), shown=not as_json) as advance:
        result = run_import(mem, plan, advance)
    took = time.monotonic() - began
    warn(*dict.fromkeys(result.warnings))
    warn(*(f"skipped: {why}" for _, why in result.failed))
    if as_json:
        print_json(plan.to_dict() | {"result": result.to_dict(), "seconds": round(took, 3)})
        return
    for found, entry in result.stored:
        typer.echo(f"{entry.id}  {entry.timestamp[:16]}  {found.agent:<11}  {entry.summary[:60]}")
    echo_lines(f"{s.agent} {s.session_id}: already stored (the same transcript); nothing added" for s in result.repeats)
    echo_lines(f"{s.agent} {s.session_id}: its entry was forgotten (`memory forget`); not imported again" for s in result.forgotten)
    rate = f" ({len(plan.todo) / took:.1f} sessions/s)" if took > 0 else ""
    typer.echo(
        f"imported {len(result.stored)} session{_s(len(result.stored))} in {took:.1f} s{rate}"
        + (f"; {len(result.failed)} could not be read" if result.failed else "")
    )


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _show_plan(plan: "ImportPlan", agents: list[str] | tuple[str, ...]) -> None:
    from memtool.stats import human_bytes

    where = "any project" if plan.all_projects else str(plan.project)
    if not plan.found:
        typer.echo(f"no sessions of {', '.join(agents)} found for {where}")
        return
    held = f"; {len(plan.held)} already in memory, skipped" if plan.held else ""
    typer.echo(f"found {len(plan.found)} session{_s(len(plan.found))} of {where}{held}:")
    for a in plan.by_agent():
        span = f"{a.first:%Y-%m-%d} .. {a.last:%Y-%m-%d}" if a.first and a.last else ""
        typer.echo(f"  {a.agent:<11}  {a.sessions:>5} session{_s(a.sessions):<1}  {a.new:>5} new  {human_bytes(a.new_bytes):>10}  {span}")


@contextmanager
def _progress(total: int, shown: bool) -> Iterator[Callable[["FoundSession"], None] | None]:
    """A progress bar on stderr with the rate and the time left, while the import runs (a terminal only)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    err = Console(stderr=True)
    if not shown or not err.is_terminal:
        yield None
        return
    columns = (
        TextColumn("importing {task.fields[agent]:<11}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("[progress.data.speed]{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("import", total=total, agent="", rate="")

        def advance(found: "FoundSession") -> None:
            bar.advance(task)
            speed = bar.tasks[0].speed
            bar.update(task, agent=found.agent, rate=f"{speed:.1f} sessions/s" if speed else "")

        yield advance
