"""`memory forget`: an entry and every copy memtool keeps of it go; nothing else changes; bad ids
change nothing; what forget does not own (MEMORY.md lines) is named, not edited."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool import constants as C
from memtool.app import open_memory
from memtool.archive import archive
from memtool.cli.main import app
from memtool.dayfile import day_document, read_day
from memtool.doctor import Doctor
from memtool.entities import collect_entities, write_pages
from memtool.errors import BadInput, NotFound
from memtool.forget import forget
from memtool.fsutil import atomic_write_text
from memtool.promote import promote
from memtool.scaffold import init
from memtool.store import get_archived

runner = CliRunner()
SECRET = "Quillfeather"  # a word only the forgotten session holds
NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    return open_memory(root, embedder=fake_embedder)  # the real local compressor: it extracts entities


@pytest.fixture
def three(mem):
    """Three sessions on one day; the second names SECRET. A search has built the cache."""
    texts = [
        "Alice moved the billing tables to Postgres and wrote the migration.",
        f"Bob pasted the {SECRET} token into the Redis config by mistake; Carol rotated it.",
        "Dana shipped dark mode in the React dashboard after the contrast review.",
    ]
    ids = [mem.compress(t, when=NOW + timedelta(minutes=i), session=f"s{i}").id for i, t in enumerate(texts)]
    assert mem.search(SECRET)[0].id == ids[1]
    return ids


def files(root: Path, skip_cache: bool = False) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != C.LOCK_FILE and not (skip_cache and C.CACHE_DIR in p.parts)
    }


def holding(root: Path, word: str) -> list[str]:
    return [name for name, data in files(root).items() if word.lower().encode() in data.lower()]


def test_forget_removes_the_entry_and_every_copy(mem, root, three):
    write_pages(mem.layout, collect_entities(mem.store.iter_entries()))
    assert any(name.startswith("memory/areas/") for name in holding(root, "Bob"))
    before = files(root)
    report = forget(mem.layout, [three[1]], mem.settings.compressor)
    assert [e["id"] for e in report.entries] == [three[1]] and not report.entries[0]["archived"]
    month = f"{three[1][4:8]}-{three[1][8:10]}"
    removed = [f"memory/index/embeddings/{month}/{three[1]}.vec", f"memory/index/passages/{month}/{three[1]}.vec", f"memory/transcripts/{month}/{three[1]}.md"]
    assert sorted(report.removed) == removed
    assert {"memory/index/2026-03-01.json", "memory/index/index.json"} <= set(report.rewritten)
    assert "memory/.cache/memtool.sqlite" in report.caches
    assert holding(root, SECRET) == [] and holding(root, "Bob") == []  # entry, transcript, index.json, pages, caches
    after = files(root)
    for keep in (three[0], three[2]):  # the others' files are untouched, byte for byte
        for name in (mem.layout.rel(p) for p in mem.layout.entry_files(keep)):
            assert after[name] == before[name]
    assert [e.id for e in read_day(mem.layout.day_file("2026-03-01"))] == [three[0], three[2]]
    assert [e["id"] for e in json.loads((root / "memory/index/index.json").read_text())["entries"]] == [three[0], three[2]]
    mem.invalidate()
    assert all(h.id != three[1] for h in mem.search(f"{SECRET} token Redis config", limit=10))
    assert holding(root, SECRET) == []  # the rebuilt search cache does not bring it back
    assert Doctor(mem.layout, mem.settings, mem.embedder).diagnose().healthy
    assert [h.id for h in mem.search("dark mode dashboard")][:1] == [three[2]]


def test_a_bad_or_unknown_id_changes_nothing(mem, root, three):
    mem.search("billing")  # the cache exists: it must survive too
    before = files(root)
    with pytest.raises(NotFound, match="ctx-20260301-00000000"):
        forget(mem.layout, [three[0], "ctx-20260301-00000000"], mem.settings.compressor)
    with pytest.raises(BadInput, match="not an entry id"):
        forget(mem.layout, [three[0], "../memory/index/index"], mem.settings.compressor)
    assert files(root) == before


def test_dry_run_reports_the_same_and_changes_nothing(mem, root, three):
    before = files(root)
    plan = forget(mem.layout, [three[1], three[1]], mem.settings.compressor, dry_run=True)
    assert files(root) == before
    done = forget(mem.layout, [three[1]], mem.settings.compressor)
    assert replace(plan, dry_run=False) == done and len(done.entries) == 1


def test_lines_people_wrote_are_named_not_edited(mem, root, three):
    promote(mem, three[1])
    mem.log(f"asked to forget {three[1]}")
    set_aside = mem.layout.quarantine_dir / "20260301T120000" / "index" / "2026-03-01.json"
    set_aside.parent.mkdir(parents=True)
    set_aside.write_text(json.dumps({"entries": [{"id": three[1]}]}), encoding="utf-8")
    kept = {name: files(root)[name] for name in ("MEMORY.md", set_aside.relative_to(root).as_posix())}
    report = forget(mem.layout, [three[1]], mem.settings.compressor)
    assert {name: files(root)[name] for name in kept} == kept
    today = datetime.now().date().isoformat()
    assert [m.split(":")[0] for m in report.mentions] == ["MEMORY.md", f"memory/{today}.md", set_aside.relative_to(root).as_posix()]


def test_an_entry_filed_under_another_day_is_found(mem, root, three):
    """A hand edit moved it to another day file: that file is rewritten (kept, empty: a clone adding to
    that day then merges instead of meeting a modify/delete conflict)."""
    day = mem.layout.day_file("2026-03-01")
    entries = read_day(day)
    moved = next(e for e in entries if e.id == three[1])
    atomic_write_text(day, day_document("2026-03-01", [e for e in entries if e.id != moved.id]))
    atomic_write_text(mem.layout.day_file("2026-02-11"), day_document("2026-02-11", [moved]))
    report = forget(mem.layout, [three[1]], mem.settings.compressor)
    assert "memory/index/2026-02-11.json" in report.rewritten
    assert read_day(mem.layout.day_file("2026-02-11")) == [] and holding(root, SECRET) == []


def test_archived_entries_and_a_copy_both_live_and_archived(mem, root, three):
    old = mem.compress(f"Erin noted the {SECRET} vault path in the old runbook.", when=NOW - timedelta(days=400), session="old")
    archive(mem.layout, mem.settings, now=NOW)
    assert get_archived(mem.layout, old.id) is not None and mem.get(old.id) is None
    mem.store.write_entries([mem.store.get(three[1])])  # three[1] is live; put a copy of it in the archive too
    arch = root / "memory" / "archive" / "2026" / "index" / "2026-03-01.json"
    atomic_write_text(arch, day_document("2026-03-01", [mem.store.get(three[1])]))
    report = forget(mem.layout, [old.id, three[1]], mem.settings.compressor)
    assert [e["archived"] for e in report.entries] == [True, False]
    assert f"memory/archive/{old.day[:4]}/transcripts/{old.day[:7]}/{old.id}.md" in report.removed
    assert get_archived(mem.layout, old.id) is None and not arch.exists() and mem.get(three[1]) is None
    assert holding(root, SECRET) == []
    mem.invalidate()
    assert all(h.id not in (old.id, three[1]) for h in mem.search(SECRET, archive=True))


def test_a_run_cut_short_is_finished_by_the_next(mem, root, three, monkeypatch):
    """Transcript and vector go first; a crash before the day file is written leaves a valid entry."""
    import memtool.forget as forget_mod

    def crash(path, *a, **kw):
        if path.name != forget_mod.JOURNAL_FILE:
            raise OSError("power cut")
        atomic_write_text(path, *a, **kw)

    monkeypatch.setattr(forget_mod, "atomic_write_text", crash)
    with pytest.raises(OSError):
        forget(mem.layout, [three[1]], mem.settings.compressor)
    monkeypatch.undo()
    assert mem.get(three[1]) is not None and not mem.layout.transcript_file(three[1]).exists()
    report = forget(mem.layout, [three[1]], mem.settings.compressor)
    assert report.removed == [] and holding(root, SECRET) == []


def cut_after_the_day_file(monkeypatch, mem, entry_id: str) -> None:
    """A forget that dies once the entry has left its day file: before index.json and the caches."""
    import memtool.forget

    def crash(*a, **kw):
        raise OSError("power cut")

    monkeypatch.setattr(memtool.forget, "write_index", crash)
    with pytest.raises(OSError):
        forget(mem.layout, [entry_id], mem.settings.compressor)
    monkeypatch.undo()
    assert mem.get(entry_id) is None and (mem.layout.cache_dir / "forget-journal.json").is_file()


def test_a_rerun_completes_a_forget_whose_entry_is_already_gone(mem, root, three, monkeypatch):
    cut_after_the_day_file(monkeypatch, mem, three[1])
    assert SECRET.encode() in (root / "memory/index/index.json").read_bytes()  # the copies are still there
    report = forget(mem.layout, [three[1]], mem.settings.compressor)  # not "no entry with id ..."
    assert report.completed == [three[1]] and report.entries == [] and "memory/index/index.json" in report.rewritten
    assert holding(root, SECRET) == [] and not (mem.layout.cache_dir / "forget-journal.json").exists()
    with pytest.raises(NotFound):  # once finished, the id is unknown again
        forget(mem.layout, [three[1]], mem.settings.compressor)


def test_any_later_forget_or_doctor_fix_completes_an_interrupted_one(mem, root, three, monkeypatch):
    cut_after_the_day_file(monkeypatch, mem, three[1])
    report = forget(mem.layout, [three[0]], mem.settings.compressor)  # another id: the journal's is finished too
    assert [e["id"] for e in report.entries] == [three[0]] and report.completed == [three[1]]
    assert holding(root, SECRET) == [] and mem.get(three[2]) is not None

    cut_after_the_day_file(monkeypatch, mem, three[2])
    doctor = Doctor(mem.layout, mem.settings, mem.embedder)
    assert any(p.kind == "forget" for p in doctor.diagnose().problems)
    fixed = doctor.repair()
    assert fixed.healthy and any(three[2] in line for line in fixed.fixed), fixed.fixed
    assert not (mem.layout.cache_dir / "forget-journal.json").exists()
    assert json.loads((root / "memory/index/index.json").read_text())["entries"] == []


def vector_keys(root: Path) -> set[str]:
    """Every vector key the cache holds (passages: their text's hash; entries: entry:<id>:...)."""
    import sqlite3

    conn = sqlite3.connect(root / "memory/.cache/memtool.sqlite")
    try:
        return {k for (k,) in conn.execute("SELECT key FROM vectors")}
    finally:
        conn.close()


def test_forget_purges_passage_and_entry_vectors_live_and_archived(mem, root, three):
    from memtool.chunking import chunk_lines
    from memtool.session_vectors import chunk_key
    from memtool.sync import sync

    mem.compress(f"Erin stored the {SECRET} archive note about the old billing vault.", when=NOW - timedelta(days=800), session="old")
    archive(mem.layout, mem.settings, now=NOW)
    mem.invalidate()
    assert mem.search(SECRET, archive=True) and mem.search(SECRET)
    arch_id = next(h.id for h in mem.search(SECRET, archive=True) if h.id != three[1])
    transcripts = {i: mem.layout.transcript_file(i) for i in (three[1],)}
    arch_t = next((root / "memory/archive").rglob(f"{arch_id}.md"))
    passages = {chunk_key(c.text) for t in [*transcripts.values(), arch_t] for c in chunk_lines(t.read_text())}
    held = vector_keys(root)
    assert passages & held and any(k.startswith(f"entry:{three[1]}:") for k in held)

    forget(mem.layout, [three[1], arch_id], mem.settings.compressor)
    left = vector_keys(root)
    assert not passages & left and not any(three[1] in k or arch_id in k for k in left)
    assert any(k.startswith(f"entry:{three[0]}:") for k in left)  # the others' vectors stay: nothing to embed again
    mem.invalidate()
    sync(mem, full=True)  # `memory reindex --full`
    mem.search(SECRET, archive=True)
    assert not passages & vector_keys(root) and holding(root, SECRET) == []


def test_pages_are_kept_when_a_day_file_is_unreadable(mem, root, three):
    """Rewriting the entity pages then would drop the entities of that file: they are named instead."""
    write_pages(mem.layout, collect_entities(mem.store.iter_entries()))
    (mem.layout.index_dir / "2026-01-01.json").write_text("{ not json", encoding="utf-8")
    report = forget(mem.layout, [three[1]], mem.settings.compressor)
    assert not any(p.startswith("memory/areas/") for p in report.rewritten)
    assert any(m.startswith("memory/areas/") for m in report.mentions)


def test_cli_asks_for_yes_then_forgets(mem, root, three):
    before = files(root)
    refused = runner.invoke(app, ["forget", three[1]])
    assert refused.exit_code == 2 and "--yes" in refused.stderr and files(root) == before
    missing = runner.invoke(app, ["forget", "ctx-20260301-00000000", "--yes"])
    assert missing.exit_code == 9 and "nothing was forgotten" in missing.stderr and files(root) == before
    dry = runner.invoke(app, ["forget", three[1], "--dry-run"])
    assert dry.exit_code == 0 and f"would forget {three[1]}" in dry.stdout and files(root) == before
    done = runner.invoke(app, ["forget", three[1], "--yes", "--json"])
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["entries"][0]["id"] == three[1]
    assert holding(root, SECRET) == []


@pytest.mark.parametrize("answer, gone", [(b"n\n", False), (b"y\n", True)])
def test_cli_at_a_terminal_lists_and_asks(mem, root, three, answer, gone):
    main, tty = pty.openpty()
    os.write(main, answer)
    done = subprocess.run([sys.executable, "-m", "memtool", "forget", three[1]], stdin=tty, capture_output=True, text=True, timeout=120)
    os.close(tty)
    os.close(main)
    assert f"{three[1]}  2026-03-01T12:01" in done.stdout and "Forget 1 entry for good?" in done.stdout
    assert done.returncode == (0 if gone else 1), done.stderr
    assert (mem.get(three[1]) is None) == gone and (holding(root, SECRET) == []) == gone


def test_cli_forget_leaves_a_tombstone_and_says_git_history_keeps_the_bytes(mem, root, three):
    done = runner.invoke(app, ["forget", three[1], "--yes"])
    assert done.exit_code == 0, done.stderr
    assert "memory/index/tombstones.jsonl" in done.stdout
    assert "git history still holds the old bytes" in done.stderr and "git filter-repo" in done.stderr
    [tomb] = [json.loads(line) for line in (root / "memory/index/tombstones.jsonl").read_text().splitlines()]
    assert tomb["id"] == three[1] and tomb["time"] and tomb["who"]
    assert holding(root, SECRET) == []  # the tombstone names the id, never the text


def test_bury_removes_what_a_merge_brought_back_of_a_forgotten_entry(mem, root, three):
    """A merge with an older copy brings back a forgotten entry (its day file line and files) or only
    the files of another (transcript, vector): bury() (the next sync) removes both and names them."""
    from memtool.forget import bury

    back, stray = three[1], three[2]
    entry = mem.get(back)
    saved = {p: p.read_bytes() for i in (back, stray) for p in (mem.layout.transcript_file(i), mem.layout.embedding_file(i))}
    forget(mem.layout, [back, stray], "local")
    assert bury(mem.layout, "local") == []  # nothing came back yet
    day = mem.layout.day_file(entry.day)
    atomic_write_text(day, day_document(entry.day, [*read_day(day), entry]))  # the merge
    for path, data in saved.items():
        path.write_bytes(data)
    assert bury(mem.layout, "local") == sorted([back, stray])
    assert not any(p.exists() for p in saved) and [e.id for e in read_day(day)] == [three[0]]
    assert bury(mem.layout, "local") == []


def test_a_transcript_compressed_again_after_it_was_forgotten_is_refused_with_the_reason(mem, root):
    transcript = root / "t.md"
    transcript.write_text("Alice: we decided to drop the nightly CSV export; Bob deletes the cron job.\n")
    first = runner.invoke(app, ["compress", str(transcript), "--json"])
    assert first.exit_code == 0, first.stderr
    [entry] = json.loads(first.stdout)
    assert runner.invoke(app, ["forget", entry["id"], "--yes"]).exit_code == 0
    before = files(root, skip_cache=True)
    again = runner.invoke(app, ["compress", str(transcript)])  # the same file, the same mtime: the same id
    assert again.exit_code == BadInput.exit_code
    assert f"makes entry {entry['id']}, which was forgotten" in again.stderr and "--date" in again.stderr
    assert files(root, skip_cache=True) == before  # nothing stored that the next reindex would remove
    runner.invoke(app, ["reindex"])
    assert mem.store.get(entry["id"]) is None
    dated = runner.invoke(app, ["compress", str(transcript), "--date", "2026-01-05"])  # what the message offers
    assert dated.exit_code == 0, dated.stderr
