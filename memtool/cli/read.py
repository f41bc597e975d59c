"""Commands that read memory: search, context, show, stats."""

from __future__ import annotations

from typing import Optional

import typer

from memtool import constants as C
from memtool.cli.common import PERSONAL_READ_HELP, console, echo, echo_lines, markup, open_from, print_json, root_of, warn
from memtool.errors import BadInput, NotFound


def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help=f"Number of hits (default {C.DEFAULT_LIMIT}, setting 'search_limit')."),
    since: Optional[str] = typer.Option(None, help="Only hits from this date/period on: 2026-02-01, yesterday, 'last week'..."),
    until: Optional[str] = typer.Option(None, help="Only hits up to the end of this date/period."),
    topic: Optional[str] = typer.Option(None, help="Only entries with this topic."),
    importance: Optional[str] = typer.Option(None, help="Only entries of at least this importance: low, medium, high, critical."),
    kind: Optional[str] = typer.Option(None, help="Only this kind: entry, log or memory."),
    no_transcripts: bool = typer.Option(False, "--no-transcripts", help="Match entries on their compressed fields only, not their kept transcripts."),
    trusted_only: bool = typer.Option(False, "--trusted-only", help="Leave out memories whose text came from untrusted input."),
    archive: bool = typer.Option(False, "--archive", help="Also search what `memory archive` moved to memory/archive/."),
    as_json: bool = typer.Option(False, "--json", help="Print hits as JSON."),
) -> None:
    """Search entries (and their kept transcripts), daily logs and Layer 3 Markdown: BM25 first; vectors fill in when word matches run short."""
    from memtool.dates import parse_period
    from memtool.search.engine import Query

    if importance and importance not in C.IMPORTANCE_LEVELS:
        raise BadInput(f"--importance must be one of {', '.join(C.IMPORTANCE_LEVELS)}")
    kinds = {"entry": ("entry", "transcript"), "log": ("log",), "memory": ("memory",), None: ("entry", "transcript", "log", "memory")}
    if kind not in kinds:
        raise BadInput("--kind must be entry, log or memory")
    chosen = tuple(k for k in kinds[kind] if not (no_transcripts and k == "transcript"))
    start = parse_period(since)[0] if since else None
    end = parse_period(until)[1] if until else None
    mem = open_from(ctx)
    if limit is None:  # an explicit --limit wins over the setting (at least 1: memtool.config checks it)
        limit = mem.settings.search_limit
    q = Query(text=query, limit=limit, kinds=chosen, since=start, until=end, topic=topic, min_importance=importance, trusted_only=trusted_only, archive=archive)
    found = mem.search(q)
    hits = found.hits
    warn(*found.warnings)  # a file read with replacement characters, an embedder that is down
    from memtool.search.typos import fix_notes

    echo_lines(fix_notes(found.typo_fixes), err=True)  # on stderr: --json output stays the hits alone
    if as_json:
        print_json(hits)
        return
    if not hits:
        echo("no matches")
        return
    from rich.table import Table

    from memtool.context import replaced_note
    from memtool.quoting import one_line

    table = Table(show_lines=False, box=None)
    for col in ("score", "kind", "id", "when"):  # never wrapped: an id must copy whole
        table.add_column(col, no_wrap=True, min_width=max((len(h.id) for h in hits), default=0) if col == "id" else None)
    for col in ("session", "text"):
        table.add_column(col, overflow="fold")
    for h in hits:  # stored text is data, not markup: "[brackets]" in a note must show as typed
        text = markup(h.text) if not h.passage else f"{markup(h.text)}\n[dim]> {markup(h.passage[:200])}[/dim]"
        if h.superseded_by:  # an older version: its open items are the newer entry's, not its own passage's
            text = f"[yellow]{markup(replaced_note(h))}[/yellow] {markup(h.text)}"
        if h.label:  # from the personal memory, or private to this machine
            text = f"[magenta]{markup(f'[{h.label}]')}[/magenta] {text}"
        table.add_row(f"{h.score:.3f}", h.kind, h.id, h.timestamp[:10], markup(one_line(h.source_session)), text)
    console().print(table)


def context(
    ctx: typer.Context,
    query: Optional[str] = typer.Argument(None, help="What this session is about. Omit for the most recent entries."),
    budget: Optional[int] = typer.Option(None, help=f"Token budget (default {C.DEFAULT_BUDGET}, setting 'budget')."),
    template: Optional[str] = typer.Option(None, help="chat, detailed or summary."),
    limit: int = typer.Option(8, help="Search hits considered."),
    as_json: bool = typer.Option(False, "--json", help="Print the bundle and its accounting as JSON."),
) -> None:
    """The session-start bundle: MEMORY.md, USER.md, top hits and today's log, within the budget."""
    mem = open_from(ctx)
    res = mem.context(query, budget=budget, template=template, limit=limit)
    warn(*res.warnings)  # e.g. the provider's token count failed; the offline count was used
    if as_json:
        print_json(res)
        return
    echo(res.text)
    note = f"[{res.tokens}/{res.budget} tokens, template {res.template}"
    if res.dropped:
        note += "; dropped to fit: " + "; ".join(res.dropped)
    echo(note + "]", err=True)


def show(
    ctx: typer.Context, entry_id: str = typer.Argument(..., help="Entry id, e.g. ctx-20260207-1a2b3c4d."), as_json: bool = typer.Option(False, "--json")
) -> None:
    """Show one entry (an archived one too)."""
    from memtool.search.engine import origin_label

    shown = open_from(ctx).show(entry_id)
    if shown is None:
        raise NotFound(f"no entry with id {entry_id}. `memory search` lists ids (`--archive`: archived ones too).")
    data = shown.entry.to_dict()
    if as_json:
        print_json(data)
        return
    for key, value in data.items():
        if value in ("", [], False) or (isinstance(value, dict) and not any(value.values())):
            continue
        echo(f"{key}: {value}")
    if shown.origin != "project" or shown.private:
        echo(f"from: {origin_label(shown.origin, shown.private)} memory ({shown.day_file})")
    if shown.archived:
        echo(f"archived: {shown.day_file}")
    if shown.transcript is not None:
        echo(f"transcript: {shown.transcript}")


def stats(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json"), personal: bool = typer.Option(False, "--personal", help=PERSONAL_READ_HELP)
) -> None:
    """At a glance: entries per week, topics, compression ratios, store size, pending work."""
    from memtool.stats import collect, human_bytes, week_series

    if personal:
        from memtool.app import existing_personal

        existing_personal(root_of(ctx))  # NotFound before it exists: a read makes nothing
    d = collect(open_from(ctx, personal=personal))
    if as_json:
        print_json(d)
        return
    from rich.table import Table

    out = console()
    lo, hi = d["compression_ratio_range"]
    rows = [
        ("entries", f"{d['entries']} in {d['days_with_entries']} days · {d['daily_logs']} daily logs · {d['transcripts']} transcripts"),
        (
            "pending",
            f"{d['pending_compression']} compression · {d['pending_embeddings']} embeddings"
            + (" [yellow](`memory retry`)[/yellow]" if d["pending_compression"] or d["pending_embeddings"] else ""),
        ),
        (
            "compression",
            f"mean {d['mean_compression_ratio']}:1 · median {d['median_compression_ratio']}:1 · range {lo}-{hi}:1 · "
            f"{d['tokens_original']:,} -> {d['tokens_compressed']:,} tokens",
        ),
        ("store", f"{human_bytes(d['store_bytes'])} (+ {human_bytes(d['cache_bytes'])} derived cache)"),
        ("importance", " · ".join(f"{n} {k}" for k in C.IMPORTANCE_LEVELS if (n := d["importance"].get(k)))),
        ("names", " · ".join(f"{n} {k}" for k, n in d["entities"].items())),
        ("embedder", markup(d["embedder"])),
    ]
    table = Table(box=None, show_header=False, title=markup(f"memory stats: {d['root']}"), title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    weeks = week_series(d["entries_per_week"])[-C.STATS_WEEKS_SHOWN :]
    if weeks:
        table.add_row("per week", week_line(weeks))
    out.print(table)
    if d["top_topics"]:
        out.print("\n[bold]top topics[/bold]")
        out.print(_bars({markup(k): v for k, v in list(d["top_topics"].items())[: C.STATS_TOP_SHOWN]}))
    if d["entries"]:
        out.print("\n[bold]compression ratios[/bold]")
        out.print(_bars(d["compression_ratio_histogram"]))
    warn(*d["problems"])


def week_line(weeks: list[tuple[str, int]]) -> str:
    """Entries per week as one line: `2026-W45 ▁▃█ 2026-W47 (3 weeks, peak 4)`, or `2026-W48: 5 entries` for one week."""
    from memtool.stats import sparkline

    if len(weeks) == 1:
        label, n = weeks[0]
        return f"{label}: {n} {'entry' if n == 1 else 'entries'}"
    peak = max(n for _, n in weeks)
    return f"{weeks[0][0]} [cyan]{sparkline([n for _, n in weeks])}[/cyan] {weeks[-1][0]} ({len(weeks)} weeks, peak {peak})"


def _bars(items: dict[str, int], width: int = 24):
    from rich.table import Table

    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(overflow="fold", max_width=28)
    table.add_column()
    table.add_column(justify="right")
    peak = max(items.values(), default=0) or 1
    for label, n in items.items():
        table.add_row(label, "[cyan]" + "█" * max(round(width * n / peak), 1 if n else 0) + "[/cyan]", str(n))
    return table


COMMANDS = (search, context, show, stats)  # registered in this order by memtool.cli.main
