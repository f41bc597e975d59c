"""`memory hooks install|uninstall|run`: wire memtool into an agent's own session hooks.

Thin layer: parse options, call memtool.hooks, render the result (rich text or --json).
`hooks run` is what the installed hooks execute; it must start fast, print nothing to
stdout except the agent's JSON, and never fail the agent's session. memtool.hooks is
imported inside the commands: the full CLI (a cold `memory search`) does not load it.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Optional

import typer

from memtool.cli.common import command_group, echo, print_json, warn
from memtool.errors import MemtoolError

if TYPE_CHECKING:
    from memtool.hooks.common import HookPlan
    from memtool.hooks.doctor import HooksReport

app = command_group("Make a coding agent load memory at session start and compress its transcript at session end.")


Agent = Literal["claude-code", "codex", "gemini"]  # memtool.hooks.AGENTS, not imported here
Scope = Literal["project", "user"]

AGENT_OPTION = typer.Option(..., "--agent", help="The agent whose configuration to edit.")
SCOPE_OPTION = typer.Option("project", "--scope", help="project: files in the project folder; user: files under $HOME.")
DRY_RUN_OPTION = typer.Option(False, "--dry-run", help="Show the change as a diff; write nothing.")
PROJECT_OPTION = typer.Option(None, "--project-dir", help="Project folder for --scope project (default: the current folder).")
JSON_OPTION = typer.Option(False, "--json", help="Print the result as JSON.")


@app.command()
def install(
    agent: Agent = AGENT_OPTION,
    scope: Scope = SCOPE_OPTION,
    dry_run: bool = DRY_RUN_OPTION,
    project_dir: Optional[Path] = PROJECT_OPTION,
    memory: Optional[Path] = typer.Option(
        None,
        "--memory",
        help="The `memory` program the hooks run, e.g. ~/.local/bin/memory (default: the one running this command). Written as an absolute path.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Add memtool's session-start and session-end hooks to the agent's configuration (merging, idempotent).

    The hooks run this install's `memory` by its absolute path, so they work whatever PATH the agent has."""
    from memtool import hooks

    runner = shlex.quote(str(memory.expanduser().absolute())) if memory else None
    plan, written = hooks.install(agent, scope, dry_run=dry_run, project_dir=project_dir, runner=runner)
    _render(plan, dry_run, written, as_json)


@app.command()
def uninstall(
    agent: Agent = AGENT_OPTION,
    scope: Scope = SCOPE_OPTION,
    dry_run: bool = DRY_RUN_OPTION,
    project_dir: Optional[Path] = PROJECT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove exactly the hooks memtool added; everything else in the file stays as it is."""
    from memtool import hooks

    plan, written = hooks.uninstall(agent, scope, dry_run=dry_run, project_dir=project_dir)
    _render(plan, dry_run, written, as_json)


@app.command()
def doctor(
    agent: Optional[Agent] = typer.Option(None, "--agent", help="Check only this agent's hooks (default: all three)."),
    project_dir: Optional[Path] = typer.Option(None, "--project-dir", help="The project the agent works in (default: the current folder)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Run each installed memtool hook as its agent would (same command, a sample payload, the project as
    working folder, the virtual environment off PATH) and report what fails, with the fix. Exit 1 if any fails."""
    from memtool.hooks import AGENTS
    from memtool.hooks.doctor import check_hooks

    report = check_hooks(project_dir or Path.cwd(), (agent,) if agent else AGENTS)
    if as_json:
        print_json(report.to_dict())
    else:
        _render_doctor(report)
    if not report.ok:
        raise typer.Exit(1)


@app.command(hidden=True)
def run(
    event: Literal["session-start", "session-end", "prompt", "pre-compact"] = typer.Argument(..., help="session-start, session-end, prompt or pre-compact."),
    agent: Agent = AGENT_OPTION,
    foreground: bool = typer.Option(False, "--foreground", hidden=True, help="session-end: compress now and wait; pre-compact: catch up now."),
) -> None:
    """Run by the installed hooks: reads the agent's JSON payload on stdin."""
    from memtool.hooks import session, spec

    raw = session.read_payload(sys.stdin)
    quiet = spec(agent).stderr_shown  # the agent shows stderr as a message: say nothing when all is well
    try:
        payload = session.parse_payload(raw)
        if event == "session-start":
            output, message = session.run_session_start(payload, agent)
            if message:
                echo(message, err=True)
            if output:
                sys.stdout.write(output + "\n")
            session.spawn_catch_up(raw, payload, agent)
            return
        if event == "prompt":
            output = session.run_prompt(payload, agent)
            if output:
                sys.stdout.write(output + "\n")
            return
        if event == "pre-compact":
            if foreground:
                raise typer.Exit(session.run_catch_up(payload, agent))
            session.spawn_catch_up(raw, payload, agent)
            return
        if foreground:  # then the sessions whose end hook never ran (this one's end is one more chance for them)
            code = session.run_session_end(payload, agent)
            raise typer.Exit(session.run_catch_up(payload, agent, wait=True) or code)
        if payload.transcript_path is None:
            note = "memtool: the agent sent no transcript_path; nothing to compress."
        elif session.memory_root_for(payload) is None:
            note = "memtool: no memory/ here or above (`memory init` starts one); this session is not saved."
        else:
            log = session.spawn_worker(raw, payload, agent, "session-end")
            note = "" if quiet else f"memtool: compressing the session in the background (log: {log})"
        if note:
            echo(note, err=True)
    except (MemtoolError, OSError) as exc:
        if foreground:
            raise
        # A hook must never fail the agent's session: report and exit 0.
        echo(f"memtool: {event} hook skipped: {exc}", err=True)


def _render(plan: HookPlan, dry_run: bool, written: bool, as_json: bool) -> None:
    if as_json:
        print_json(plan.to_json(dry_run, written))
        return
    from rich.console import Console

    from memtool.hooks import spec
    from memtool.quoting import terminal_safe

    out = Console(highlight=False, soft_wrap=True)
    label = spec(plan.agent).label
    if plan.changed and dry_run:
        for line in plan.diff().splitlines():
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
            out.print(terminal_safe(line), style=style, markup=False)  # the agent's settings file, as found
        out.print(f"(dry run: {plan.path} not written)")
    elif plan.changed and plan.action == "uninstall" and plan.new_text is None:
        out.print(f"{label}: removed memtool hooks, and {plan.path}, which install had created")
    elif plan.changed:
        out.print(f"{label}: installed memtool hooks in {plan.path}" if plan.action == "install" else f"{label}: removed memtool hooks from {plan.path}")
    elif plan.action == "install":
        out.print(f"{label}: memtool hooks already installed in {plan.path}; nothing to do.")
    else:
        out.print(f"{label}: " + (f"{plan.path} does not exist" if plan.old_text is None else f"no memtool hooks in {plan.path}") + "; nothing to remove.")
    if plan.action == "install":
        for event, command in plan.commands.items():
            out.print(f"  {event:<13} {command}", markup=False)
        for note in plan.notes:
            out.print(f"  note: {note}", markup=False)
    warn(*plan.warnings)


def _render_doctor(report: HooksReport) -> None:
    if not report.checks:
        echo(f"no memtool hooks installed for {report.project} (nor for this user): `memory hooks install --agent NAME`")
        return
    for c in report.checks:
        echo(f"{'ok  ' if c.ok else 'FAIL'} {c.agent} ({c.scope}) {c.event}: {c.detail}")
        if not c.ok:
            echo(f"     command: {c.command}\n     in: {c.config}\n     fix: {c.fix}")
    failed = sum(not c.ok for c in report.checks)
    echo(f"{len(report.checks) - failed} of {len(report.checks)} hooks ok" + (f"; {failed} failing (see fix above)" if failed else ""))
