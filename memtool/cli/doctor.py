"""`memory doctor [--fix] [--json]`: check the store, repair what can be repaired without loss."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from memtool.cli.common import PERSONAL_READ_HELP, echo, echo_lines, print_json, root_of, root_path

if TYPE_CHECKING:
    from memtool.doctor import Report


def doctor(
    ctx: typer.Context,
    fix: bool = typer.Option(False, "--fix", help="Repair what can be repaired without loss; move what cannot into memory/quarantine/<timestamp>/."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    personal: bool = typer.Option(False, "--personal", help=PERSONAL_READ_HELP),
) -> None:
    """Check index.json, day files, embeddings and transcripts against each other, in memory/ and memory/archive/. Exit 0 when healthy."""
    from memtool.doctor import open_doctor
    from memtool.errors import StoreCorrupt

    if personal:
        from memtool.app import existing_personal

        doc = open_doctor(existing_personal(root_of(ctx)))
    else:
        doc = open_doctor(root_path(ctx))
    report = doc.repair() if fix else doc.diagnose()
    if as_json:
        print_json(report.to_dict())
    else:
        _render(report, fix)
    if not report.healthy:
        raise typer.Exit(StoreCorrupt.exit_code)


def _render(report: "Report", fix: bool) -> None:
    counts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in report.counts.items())
    echo(f"memory doctor: {report.root}\n  {counts}")
    echo_lines(f"  fixed: {line}" for line in report.fixed)
    echo_lines(f"  quarantined: {path}" for path in report.quarantined)
    for p in report.problems:
        todo = f"  [--fix: {p.fix}]" if p.fix and not fix else ""
        echo(f"  {p.severity:7} {p.kind:10} {p.where()}: {p.message}{todo}")
    errors = sum(p.severity == "error" for p in report.problems)
    if report.healthy:
        echo("healthy" + (f" ({len(report.problems)} warnings)" if report.problems else ""))
    elif fix:
        echo(f"{errors} problems need a person (see above)")
    else:
        echo(f"{errors} problems; `memory doctor --fix` repairs those marked [--fix: ...]")


COMMANDS = (doctor,)  # registered in this order by memtool.cli.main
