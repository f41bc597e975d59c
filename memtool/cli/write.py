"""Commands that write memory: init, log, compress, forget."""

from __future__ import annotations

import sys
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import List, Optional

import typer

from memtool import constants as C
from memtool.cli.common import PERSONAL_HELP, PRIVATE_HELP, echo, echo_lines, open_from, print_json, progress_bar, root_path, warn
from memtool.errors import BadInput

TRANSCRIPT_SUFFIXES = {".md", ".txt", ".jsonl", ".json", ".log"}


def init(
    ctx: typer.Context,
    personal: bool = typer.Option(False, "--personal", help="Create your personal memory ($XDG_DATA_HOME/memtool, setting personal_root) instead."),
) -> None:
    """Create the memory layout here (or at --root). Safe to run again: never overwrites a file."""
    from memtool.scaffold import init as do_init

    root = root_path(ctx)
    if personal:
        from memtool.app import personal_home
        from memtool.config import load_settings

        root = personal_home(load_settings(root))
    created = do_init(root)
    echo_lines(f"created {path.relative_to(root) if path.is_relative_to(root) else path}" for path in created)
    echo(f"memory root ready at {root}" + ("" if created else " (nothing to do)"))


def log(
    ctx: typer.Context,
    text: Optional[str] = typer.Argument(None, help="The note. Omit or pass '-' to read it from stdin."),
    source: str = typer.Option("user_explicit", help="Provenance: user_explicit, ai_inferred or system_auto."),
    agent: str = typer.Option("", help="Name of the agent writing the note."),
    session: str = typer.Option("", help="Session name or id."),
    personal: bool = typer.Option(False, "--personal", help=PERSONAL_HELP),
    private: bool = typer.Option(False, "--private", help=PRIVATE_HELP),
) -> None:
    """Append a timestamped line to today's daily log (memory/YYYY-MM-DD.md)."""
    mem = open_from(ctx, personal=personal, private=private)
    if text is None or text == "-":
        text = read_input("-", mem.settings.max_transcript_bytes, convert=False)[0]  # a note, even one that looks like JSON
    elif any("\udc80" <= ch <= "\udcff" for ch in text):  # bytes of the argument that were not UTF-8
        warn("the note is not valid UTF-8; undecodable bytes replaced with U+FFFD")
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", errors="replace")
    path = mem.log(text, source=source, agent=agent, session=session)
    echo(f"logged to {path}")


def read_input(path: str, limit: int, convert: bool = True) -> tuple[str, str, datetime | None]:
    """(text, name, start time the transcript states) of one transcript; invalid UTF-8 is replaced,
    with a warning; UTF-16/32 with a BOM is read as such.

    With `convert`, agent transcripts in JSON/JSONL are converted to Markdown: a file named
    .json/.jsonl (any case; JSON of no known format is refused), and stdin when it parses as a known
    format (anything else on stdin is text). Text over `limit` bytes (max_transcript_bytes) is
    refused before it is read into memory; JSON is measured after conversion (tool output shrinks a
    lot), so it is read whole. Lines of a JSONL transcript that are not JSON are skipped with a warning."""
    from memtool.transcripts import check_size, load_transcript, looks_like_json, transcript_from_bytes

    if path == "-":
        name = "<stdin>"
        stream = sys.stdin.buffer
        data = stream.read(limit + 1)
        is_json = convert and looks_like_json(data)
        if len(data) > limit:
            if not is_json:  # reading stopped at the limit: the real size is unknown
                check_size(len(data), limit, name, whole=False)
            data += stream.read()
        transcript = transcript_from_bytes(data, name, "sniff" if is_json else "text")
    else:
        p = Path(path)
        if not p.is_file():
            raise BadInput(f"{path}: no such file")
        name = str(p)
        transcript = load_transcript(p, limit, None if convert else "text")
    warn(*transcript.warnings)
    return transcript.render(), name, transcript.started if convert else None


def expand(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if p != "-" and Path(p).is_dir():
            found = sorted(str(f) for f in Path(p).rglob("*") if f.is_file() and f.suffix.lower() in TRANSCRIPT_SUFFIXES)
            if not found:
                raise BadInput(f"{p}: no transcript files ({', '.join(sorted(TRANSCRIPT_SUFFIXES))}) in this folder")
            out.extend(found)
        else:
            out.append(p)
    return out


def compress(
    ctx: typer.Context,
    paths: List[str] = typer.Argument(..., help="Transcript file(s) or folder(s); '-' reads stdin."),
    date: Optional[str] = typer.Option(
        None,
        "--date",
        help="When the session happened (ISO, '18 May 2023', 'yesterday'...). Default: the transcript's own start time "
        "(its first timestamp, or a date stated in its first lines), else the file's modification time, or now for stdin.",
    ),
    session: Optional[str] = typer.Option(None, "--session", help="source_session name. Default: 'main' for one input, the file name for several."),
    importance: Optional[str] = typer.Option(None, "--importance", help="low, medium, high or critical. Default: inferred."),
    provider: Optional[str] = typer.Option(None, "--provider", help="Compressor: local or gemini. Default: from config."),
    source: str = typer.Option("system_auto", help="Provenance: user_explicit, ai_inferred or system_auto."),
    agent: str = typer.Option("", help="Name of the agent that produced the transcript."),
    untrusted: bool = typer.Option(
        False, "--untrusted", help="The text came from untrusted input (tool output, web pages); it will be quoted as data, never as instructions."
    ),
    no_transcript: bool = typer.Option(False, "--no-transcript", help="Do not keep the raw transcript under memory/transcripts/."),
    supersedes: Optional[List[str]] = typer.Option(
        None, "--supersedes", help="Id of an entry this session replaces (repeatable): search ranks the new one first and marks the old one."
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print the entries as JSON, each once: its fields, status (stored, or duplicate: already stored, nothing added) "
        "and inputs (the transcripts that gave it).",
    ),
    personal: bool = typer.Option(False, "--personal", help=PERSONAL_HELP),
    private: bool = typer.Option(False, "--private", help=PRIVATE_HELP),
) -> None:
    """Compress session transcript(s) into structured entries, embed them, and write the files."""
    from memtool.dates import parse_when
    from memtool.memory import Session

    files = expand(paths)
    overrides = {"keep_transcripts": False} if no_transcript else {}
    mem = open_from(ctx, personal=personal, private=private, **overrides)
    when = parse_when(date) if date else None

    given = partial(Session, importance=importance, source=source, agent=agent, trusted=not untrusted)  # what every input shares
    failed: list[str] = []
    names: list[str] = []  # of the sessions compressed, in input order (one result each)

    def sessions():
        for f in files:
            try:
                text, name, started = read_input(f, mem.settings.max_transcript_bytes)
                mem.check_text(text, name)
            except BadInput as exc:
                if len(files) == 1:
                    raise
                warn(f"skipped: {exc}")
                failed.append(f)
                continue
            ts = when or started or (datetime.fromtimestamp(Path(f).stat().st_mtime).astimezone() if f != "-" else None)
            name_session = session or (C.DEFAULT_SESSION if len(files) == 1 else Path(f).stem)
            names.append(name)
            yield given(text=text, when=ts, session=name_session, name=name, supersedes=list(supersedes or []))

    with progress_bar("compressing", len(files), len(files) > 1 and not as_json) as advance:
        stored = mem.compress_many(sessions(), provider=provider, progress=advance)
    entries = stored.entries
    warn(*dict.fromkeys(stored.warnings))  # provider fallbacks: stored, but pending or without vectors
    for name, why in stored.refused:  # a session whose entry was forgotten
        if len(files) == 1:
            raise BadInput(why)
        warn(f"skipped: {why}")
        names.remove(name)
        failed.append(name)
    repeats = stored.repeats
    if as_json:
        print_json(_outcomes(entries, repeats, names))
        echo_lines((f"note: {dup.message()}" for dup in stored.duplicates), err=True)
    for i, e in enumerate([] if as_json else entries):
        flag = "  [pending: compressed locally, run `memory retry`]" if e.pending else ""
        if i in repeats:
            flag += "  [duplicate: this transcript was already stored; nothing added]"
        elif e.supersedes:
            flag += f"  [supersedes {', '.join(e.supersedes)}]"
        echo(f"{e.id}  {e.compression_ratio} ({e.tokens_original} -> {e.tokens_compressed} tokens)  {e.summary[:70]}{flag}")
    if len(entries) > 1 and not as_json:
        stored = [e for i, e in enumerate(entries) if i not in repeats]
        total_o = sum(e.tokens_original for e in stored)
        total_c = sum(e.tokens_compressed for e in stored)
        dups = f" ({len(repeats)} duplicate{'s' if len(repeats) != 1 else ''} added nothing)" if repeats else ""
        ratio = f", overall compression {total_o / max(total_c, 1):.1f}:1" if stored else ""
        echo(f"{len(stored)} entr{'ies' if len(stored) != 1 else 'y'} stored{dups}{ratio}")
    if failed:
        raise BadInput(f"{len(failed)} of {len(files)} inputs were skipped (see warnings above); the others were stored")


def _outcomes(entries: list, repeats: set[int], names: list[str]) -> list[dict]:
    """Each entry once, in input order, with what happened to it: "stored" by this call, or "duplicate"
    (already stored, nothing added), and the inputs that gave it (a file given twice, or two files
    holding the same transcript, give one entry)."""
    out: dict[str, dict] = {}
    for i, (e, name) in enumerate(zip(entries, names)):
        item = out.setdefault(e.id, e.to_dict() | {"status": "duplicate", "inputs": []})
        if i not in repeats:
            item["status"] = "stored"
        item["inputs"].append(name)
    return list(out.values())


def forget(
    ctx: typer.Context,
    ids: List[str] = typer.Argument(..., help="Entry ids, e.g. ctx-20260207-1a2b3c4d (`memory search --archive` lists them)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask (required when stdin is not a terminal)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be removed."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Remove entries for good, live or archived: the entry, its transcript and its vector, and the
    copies in index.json, entity pages and caches. Lines of MEMORY.md or logs naming them are listed,
    not changed. Git history keeps old versions of the files."""
    from memtool.forget import forget as run
    from memtool.search.engine import origin_label
    from memtool.transcripts import _clip

    home = open_from(ctx).holder_of_all(ids)  # the project's, its private part, or the personal memory
    layout, compressor = home.layout, home.settings.compressor
    if not (yes or dry_run):
        plan = run(layout, ids, compressor, dry_run=True)  # checks every id before asking
        if not sys.stdin.isatty():
            raise BadInput("memory forget removes entries for good: pass --yes to confirm (or --dry-run to see what it would remove).")
        echo_lines(f"{e['id']}  {e['timestamp'][:16]}  {_clip(e['summary'], 70)}" for e in plan.entries)
        if not typer.confirm(f"Forget {len(plan.entries)} entr{'y' if len(plan.entries) == 1 else 'ies'} for good?"):
            raise typer.Exit(1)
    report = run(layout, ids, compressor, dry_run=dry_run)
    if as_json:
        print_json(report)
        return

    def verb(now: str, past: str) -> str:
        return f"would {now}" if dry_run else past

    label = origin_label(home.origin, home.private)
    if not home.shared:  # the paths below are in that root
        echo(f"in the {label} memory: {layout.root}")
    for e in report.entries:
        echo(f"{verb('forget', 'forgot')} {e['id']} ({e['timestamp'][:16]}{', archived' if e['archived'] else ''}): {_clip(e['summary'], 70)}")
    echo_lines(f"{verb('finish', 'finished')} forgetting {entry_id} (an interrupted forget had removed its entry)" for entry_id in report.completed)
    echo_lines(f"{verb('remove', 'removed')} {path}" for path in report.removed)
    echo_lines(f"{verb('rewrite', 'rewrote')} {path}" for path in report.rewritten)
    echo_lines(f"{verb('purge', 'purged')} {path} (derived: rebuilt on next use)" for path in report.caches)
    warn(*(f"still named in {line}" for line in report.mentions))
    if report.mentions:
        warn("edit those lines by hand if they should go too")
    if dry_run:
        return
    from memtool.tombstones import tombstones_file

    if not home.shared:  # the personal memory, private entries: no file of theirs is in git
        echo(f"recorded in {tombstones_file(layout.root)} ({label} memory: not in git, nothing to commit)")
    else:
        echo(f"recorded in {tombstones_file(Path('.')).as_posix()}: commit it, and every clone's next `memory reindex` removes these entries too")
        warn(
            "git history still holds the old bytes of these entries. To purge them: `git filter-repo --invert-paths --path <each removed file>` "
            "and `--replace-text` with the summary text (it is in the day file and index.json), then force-push; every clone must clone again"
        )


def edit(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., help="Entry id, e.g. ctx-20260207-1a2b3c4d."),
    summary: Optional[str] = typer.Option(None, "--summary", help="The new summary."),
    decisions: Optional[List[str]] = typer.Option(None, "--decision", help="A decision (repeatable; replaces the list). --no-decisions empties it."),
    no_decisions: bool = typer.Option(False, "--no-decisions", help="Empty the list of decisions."),
    action_items: Optional[List[str]] = typer.Option(None, "--action-item", help="An action item (repeatable; replaces the list)."),
    no_action_items: bool = typer.Option(False, "--no-action-items", help="Empty the list of action items."),
    importance: Optional[str] = typer.Option(None, "--importance", help="low, medium, high or critical."),
    pinned: Optional[bool] = typer.Option(None, "--pin/--unpin", help="Pin the entry (never archived, never decayed), or unpin it."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Correct fields of a stored entry in its day file, as a hand edit would: nothing else of it changes."""
    from memtool.edit import edit_entry

    changes: dict = {"summary": summary, "importance": importance, "pinned": pinned}
    changes["decisions"] = [] if no_decisions else decisions
    changes["action_items"] = [] if no_action_items else action_items
    done = edit_entry(open_from(ctx), entry_id, {k: v for k, v in changes.items() if v is not None})
    if as_json:
        print_json(done)
        return
    typer.echo(f"edited {done.id}: {', '.join(done.changed)} in {done.day_file}" if done.changed else f"{done.id}: already so; nothing changed")


COMMANDS = (init, log, compress, forget, edit)  # registered in this order by memtool.cli.main
