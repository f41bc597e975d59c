"""Commands for a store that lives a long time: archive, entities, entity, export, backup, restore, report, migrate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from memtool import constants as C
from memtool.cli.common import console, echo, echo_lines, layout_of, markup, open_from, print_json, root_of, root_path, warn

if TYPE_CHECKING:
    from memtool.memory import Memory
    from memtool.models import Entry

TABLE_LIMIT = 25  # names per kind in the `memory entities` table unless --limit says otherwise


def archive(
    ctx: typer.Context,
    ids: Optional[List[str]] = typer.Argument(None, help="Entry ids to archive now, whatever their age (pinned ones too). Default: by age."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would move."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    personal: bool = typer.Option(False, "--personal", help="By age: archive your personal memory's old logs and entries, not the project's."),
) -> None:
    """Move daily logs older than log_retention_days and entries older than entry_retention_days
    to memory/archive/YYYY/. Pinned, high and critical entries stay. Nothing is deleted, and
    `memory search --archive` still finds what moved. With ids: only those entries move, now."""
    from memtool.archive import archive as run
    from memtool.archive import archive_ids
    from memtool.config import load_settings
    from memtool.search.engine import origin_label

    if ids:  # in the root that holds them: the project's, its private part, or the personal memory
        home = open_from(ctx).holder_of_all(ids)
        layout, settings = home.layout, home.settings
        where = "" if home.shared else f"in the {origin_label(home.origin, home.private)} memory: {layout.root}"
        report = archive_ids(layout, settings, ids, dry_run=dry_run)
    elif personal:
        from memtool.app import existing_personal

        existing_personal(root_of(ctx))  # NotFound before it exists: archiving makes nothing
        home = open_from(ctx, personal=True)
        layout, settings = home.layout, home.settings
        where = f"in the personal memory: {layout.root}"
        report = run(layout, settings, dry_run=dry_run)
    else:
        layout, where = layout_of(ctx), ""
        settings = load_settings(layout.root)
        report = run(layout, settings, dry_run=dry_run)
    if as_json:
        print_json(report)
        return
    if where:
        echo(where)
    verb = "would move" if dry_run else "moved"
    echo_lines(f"{'would resolve' if dry_run else 'resolved'}: {line}" for line in report.resolved)
    echo_lines(f"{verb} {line}" for line in report.logs)
    echo_lines(f"{verb} entry {entry_id} -> memory/archive/{entry_id[4:8]}/" for entry_id in report.entries)
    kept = [f"{len(report.kept_pinned)} pinned"] * bool(report.kept_pinned) + [f"{len(report.kept_important)} high/critical"] * bool(report.kept_important)
    windows = "named by id" if ids else f"logs older than {settings.log_retention_days} days, entries older than {settings.entry_retention_days} days"
    if not report.logs and not report.entries:
        echo(f"nothing to archive ({windows})" + (f"; kept live: {', '.join(kept)}" if kept else ""))
        return
    summary = f"{len(report.logs)} daily logs and {len(report.entries)} entries ({windows})"
    echo(f"{'would archive' if dry_run else 'archived'} {summary}" + (f"; kept live: {', '.join(kept)} entries" if kept else ""))
    if not dry_run:
        echo("`memory search --archive` searches them")


def _entries(ctx: typer.Context) -> "tuple[Memory, list[Entry]]":
    mem = open_from(ctx)
    errors: list[str] = []
    entries = list(mem.store.iter_entries(errors))
    warn(*(f"skipped: {message}" for message in errors))
    return mem, entries


def entities(
    ctx: typer.Context,
    kind: Optional[str] = typer.Option(None, "--kind", help=f"Only this kind: {', '.join(C.ENTITY_KINDS)}."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help=f"Names per kind (default: {TABLE_LIMIT} in the table, all with --json; 0: all)."),
    pages: bool = typer.Option(False, "--pages", help="Write Markdown pages to memory/areas/ (people and systems, with an index)."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """People, systems, dates and topics named across entries, with counts and first/last seen."""
    from memtool.entities import check_kind, collect_entities, write_pages

    kinds = check_kind(kind)
    mem, entries = _entries(ctx)
    if pages:
        with mem.store.lock():
            rep = write_pages(mem.layout, collect_entities(entries))
        if as_json:
            print_json(rep)
            return
        index = mem.layout.memory_dir / C.AREAS_DIR / C.AREA_INDEX_FILE
        echo(f"{len(rep.written)} page(s) written, {rep.unchanged} unchanged, {len(rep.removed)} removed; start at {index}")
        return
    found = collect_entities(entries, kinds)
    cap = limit if limit is not None else (0 if as_json else TABLE_LIMIT)
    if as_json:
        print_json({k: [e.summary_dict() for e in (ents[:cap] if cap else ents)] for k, ents in found.items()})
        return
    from rich.table import Table

    out = console()
    for k, ents in found.items():
        shown = ents[:cap] if cap else ents
        table = Table(title=f"{k} ({len(ents)})", title_justify="left", box=None)
        for col, justify in (("name", "left"), ("entries", "right"), ("first seen", "left"), ("last seen", "left")):
            table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
        for e in shown:
            table.add_row(markup(e.name), str(e.count), e.first_seen, e.last_seen)
        if not ents:
            table.add_row("[dim]none yet[/dim]", "", "", "")
        out.print(table)
        if len(shown) < len(ents):
            out.print(f"[dim]... and {len(ents) - len(shown)} more (--limit 0 shows all)[/dim]")
        out.print()


def entity(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A person, system, date or topic, any case (or its page folder name)."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """The timeline of one name: every entry mentioning it, with date, session, summary and decisions."""
    from memtool.entities import collect_entities, timeline

    _, entries = _entries(ctx)
    t = timeline(collect_entities(entries), name)
    data = t.to_dict()
    if as_json:
        print_json(data)
        return
    out = console()

    out.print(f"[bold]{markup(t.name)}[/bold] ({', '.join(t.kinds)}): {data['count']} entries, {data['first_seen']} to {data['last_seen']}")
    for item in data["timeline"]:
        out.print(f"\n[bold]{item['date']}[/bold] [dim]session[/dim] {markup(item['session'])} [dim]{item['id']} · {item['importance']}[/dim]")
        out.print(markup(item["summary"]), soft_wrap=False)
        for d in item["decisions"]:
            out.print(f"  [green]decision:[/green] {markup(d)}")


def export(
    ctx: typer.Context,
    fmt: str = typer.Option(
        "jsonl", "--format", "-f", help=f"One of {', '.join(C.EXPORT_FORMATS)}: one JSON entry per line, a CSV table, or a Markdown digest by day."
    ),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file (atomically) instead of stdout."),
    archived: bool = typer.Option(False, "--archived", help="Also export the entries `memory archive` moved to memory/archive/."),
    include_private: bool = typer.Option(
        False, "--include-private", help="Also export the private entries (memory/.private/), which stay on this machine otherwise."
    ),
) -> None:
    """Export every live entry, oldest first (with --archived, the archived ones too; without it, stderr says how many were left out)."""
    from memtool.export import export_text
    from memtool.fsutil import atomic_write_bytes
    from memtool.store import archived_entries

    mem, entries = _entries(ctx)
    errors: list[str] = []
    old = archived_entries(mem.layout, errors)
    private = mem.private_part()
    if include_private and private is not None:
        entries += list(private.store.iter_entries(errors))
    elif private is not None and (held := sum(1 for _ in private.store.iter_entries())):
        warn(f"{held} private entr{'y' if held == 1 else 'ies'} left out (in memory/.private/); `memory export --include-private` includes them")
    warn(*(f"skipped: {message}" for message in errors))
    if archived:
        entries += old
    elif old:
        warn(f"{len(old)} archived entr{'y' if len(old) == 1 else 'ies'} left out (in memory/archive/); `memory export --archived` includes them")
    text = export_text(entries, fmt)
    if output is None:
        sys.stdout.write(text)
        return
    atomic_write_bytes(output, text.encode("utf-8"))
    echo(f"exported {len(entries)} entries to {output}", err=True)


def backup(
    ctx: typer.Context,
    archive: Path = typer.Argument(..., help="The archive to write, e.g. memory-backup.tar.gz."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    include_private: bool = typer.Option(False, "--include-private", help="Also back up the private entries and log lines (memory/.private/)."),
) -> None:
    """Back up the versioned files (MEMORY.md, USER.md, AGENTS.md, memory/ without .cache, .lock and .private) to a .tar.gz."""
    from memtool.backup import backup as do_backup
    from memtool.stats import human_bytes

    rep = do_backup(layout_of(ctx, require=False), archive, include_private=include_private)
    if as_json:
        print_json(rep)
        return
    echo(f"backed up {rep.files} files ({human_bytes(rep.bytes)}) to {rep.path} ({human_bytes(rep.archive_bytes)})")
    warn(*(f"not backed up: {why}" for why in rep.skipped))


def restore(
    ctx: typer.Context,
    archive: Path = typer.Argument(..., help="An archive written by `memory backup`."),
    force: bool = typer.Option(False, "--force", help="Replace files that differ from the backup; the current ones go to memory/quarantine/<timestamp>/."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Restore a backup into the memory root. Refuses to replace a file unless --force."""
    from memtool.backup import restore as do_restore

    rep = do_restore(layout_of(ctx, require=False), archive, force=force)
    if as_json:
        print_json(rep)
        return
    echo(f"restored {len(rep.restored)} files, {rep.unchanged} already identical")
    if rep.quarantined:
        echo(f"kept the {len(rep.quarantined)} replaced files in {'/'.join(rep.quarantined[0].split('/')[:3])}/")
    if rep.not_in_backup:
        warn(
            f"{len(rep.not_in_backup)} files here are not in the backup and were left alone, e.g. {rep.not_in_backup[0]}; "
            "`memory reindex` brings the index up to date with them"
        )


def report(
    ctx: typer.Context,
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help=f"Where to write the page (default {C.MEMORY_DIR}/{C.CACHE_DIR}/{C.REPORT_FILE}: derived, git-ignored, never committed)."
    ),
) -> None:
    """Write one self-contained HTML page with the numbers of `memory stats` as charts."""
    from memtool.report import write_report

    path, data = write_report(open_from(ctx), output)
    echo(f"wrote {path} ({data['entries']} entries)")


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
        print_json(report)
        return
    would = "would " if dry_run else ""
    if not report.moved and not report.index_untracked and not report.index_command:
        echo("the store is already in the current layout: nothing to move")
    if report.transcripts:
        echo(f"{would}move {report.transcripts} transcripts into month folders (memory/transcripts/YYYY-MM/)")
    if report.vectors:
        echo(f"{would}write {report.vectors} vectors as binary float16 files in month folders (memory/index/embeddings/YYYY-MM/<id>.vec)")
    for path in report.set_aside:
        echo(f"{would}set aside unreadable vector {path} in memory/quarantine/ (the next `memory reindex` embeds its entry again)")
    echo_lines(f"left in place: {line}" for line in report.left)
    if report.index_untracked:
        echo(f"{would}untrack memory/index/index.json from git (git rm --cached; the file stays, git-ignored)")
    if report.index_command:
        echo(f"index.json is derived and no longer versioned: run `{report.index_command}`")
    if not dry_run and (report.moved or report.index_untracked or report.attributes):
        echo("commit the result (git add -A && git commit), so every clone gets the new layout")


COMMANDS = (archive, entities, entity, export, backup, restore, report)  # registered in this order by memtool.cli.main (migrate last)
