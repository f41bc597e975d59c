"""`memory doctor [--fix]`: each kind of damage is reported, repaired without loss or quarantined."""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool.app import open_memory
from memtool.archive import archive
from memtool.cli.main import app
from memtool.dayfile import read_day
from memtool.doctor import Doctor
from memtool.doctor.repair import conflict_sides
from memtool.errors import StoreCorrupt
from memtool.index_json import write_index
from memtool.scaffold import init
from memtool.search.engine import Query
from memtool.store import ArchiveLayout, vector_bytes
from tests.conftest import FakeEmbedder, embedding_path, read_vector_at, transcript_path

AUTH = "Alice: We decided to use Auth0 instead of custom JWT handling. Sarah owns the migration."
DB = "Bob: The invoices query in Postgres was slow; we added an index on customer_id."
ART = "Carol: I painted a sunset over the lake and joined a pottery class."


def when(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 2, day, hour, tzinfo=timezone.utc)


@pytest.fixture
def mem(root):
    init(root)
    return open_memory(root, embedder=FakeEmbedder())


@pytest.fixture
def doctor(mem):
    return Doctor(mem.layout, mem.settings, mem.embedder)


def kinds(report) -> list[str]:
    return sorted(p.kind for p in report.problems if p.severity == "error")


def contents(folder: Path) -> dict[str, int]:
    """Multiset of file contents under a folder (sha256 -> count), to prove nothing was deleted."""
    out: dict[str, int] = {}
    for p in folder.rglob("*"):
        if p.is_file() and ".cache" not in p.parts and p.name != ".lock":
            h = hashlib.sha256(p.read_bytes()).hexdigest()
            out[h] = out.get(h, 0) + 1
    return out


def kept_everything(before: dict[str, int], after: dict[str, int]) -> bool:
    return all(after.get(h, 0) >= n for h, n in before.items())


def test_a_fresh_and_a_used_store_are_healthy(mem, doctor, root):
    assert doctor.diagnose().healthy and doctor.diagnose().problems == []
    a = mem.compress(AUTH, when=when(7))
    mem.compress(DB, when=when(8))
    mem.log("deployed the fix", agent="claude")
    report = doctor.diagnose()
    assert report.healthy and report.problems == []
    assert report.counts == {"entries": 2, "day_files": 2, "embeddings": 2, "transcripts": 2, "passages_files": 2}
    assert doctor.repair().fixed == []  # nothing to do, nothing touched
    assert transcript_path(root, a.id).is_file()


def test_temp_files_and_orphans_are_removed_or_quarantined(mem, doctor, root):
    e = mem.compress(AUTH, when=when(7))
    tmp = root / "memory/index/.2026-02-07.json.k3j2.tmp"
    tmp.write_text('{"date": "2026-02-07", "entr')  # what a killed writer leaves
    orphan_vec = mem.layout.embedding_file("ctx-20260207-deadbeef")
    orphan_vec.write_bytes(vector_bytes("ctx-20260207-deadbeef", "fake-hash-64", "0" * 16, [1.0]))
    orphan_tr = mem.layout.transcript_file("ctx-20260207-deadbeef")
    orphan_tr.write_text("a transcript whose entry never made it\n")
    before = contents(root / "memory")

    report = doctor.diagnose()
    assert kinds(report) == ["orphan", "orphan", "temp"] and not report.healthy
    fixed = doctor.repair()
    assert fixed.healthy, fixed.problems
    assert not tmp.exists() and not orphan_vec.exists() and not orphan_tr.exists()
    moved = sorted(fixed.quarantined)
    assert len(moved) == 2 and all(m.startswith("memory/quarantine/") for m in moved)
    assert moved[0].endswith("/index/embeddings/2026-02/ctx-20260207-deadbeef.vec") and moved[1].endswith("/transcripts/2026-02/ctx-20260207-deadbeef.md")
    assert (root / moved[1]).read_text() == "a transcript whose entry never made it\n"
    del before[hashlib.sha256(b'{"date": "2026-02-07", "entr').hexdigest()]  # the temp file is the only thing removed
    assert kept_everything(before, contents(root / "memory"))
    assert mem.get(e.id) is not None and transcript_path(root, e.id).is_file()


def test_invalid_index_json_is_reported_search_still_works_and_fix_rebuilds(mem, doctor, root):
    e = mem.compress(AUTH, when=when(7))
    index = root / "memory/index/index.json"
    index.write_text(index.read_text()[:-40] + "\n  oops\n")
    report = doctor.diagnose()
    [problem] = report.problems
    assert (problem.kind, problem.path, problem.fix) == ("unparsable", "memory/index/index.json", "rebuild from the day files")
    assert problem.line and "invalid JSON" in problem.message

    hits = open_memory(root, embedder=FakeEmbedder()).search(Query("Auth0 migration", kinds=("entry",)))
    assert [h.id for h in hits] == [e.id]  # the day files are the truth

    fixed = doctor.repair()
    assert fixed.healthy and [x["id"] for x in json.loads(index.read_text())["entries"]] == [e.id]
    assert any(m.endswith("/index/index.json") for m in fixed.quarantined)  # the hand-edited one is kept


def test_stale_index_is_rebuilt(mem, doctor, root):
    a = mem.compress(AUTH, when=when(7))
    index = root / "memory/index/index.json"
    stale = index.read_text()
    b = mem.compress(DB, when=when(8))
    index.write_text(stale)  # as if the writer died between the day file and index.json
    report = doctor.diagnose()
    [p] = report.problems
    assert p.kind == "index" and "1 entries missing" in p.message
    assert p.severity == "warning" and report.healthy and "normal after a git pull" in p.message  # derived: what every pull leaves, not an error
    assert doctor.repair().healthy
    assert {x["id"] for x in json.loads(index.read_text())["entries"]} == {a.id, b.id}


def test_unparsable_day_file_is_quarantined_and_restored_from_index(mem, doctor, root):
    a = mem.compress(AUTH, when=when(7))
    b = mem.compress(DB, when=when(7, 15))
    day = root / "memory/index/2026-02-07.json"
    broken = day.read_text()[:200]  # truncated by hand or by a tool
    day.write_text(broken)
    report = doctor.diagnose()
    bad = [p for p in report.problems if p.kind == "unparsable"]
    assert bad[0].path == "memory/index/2026-02-07.json" and bad[0].line
    fixed = doctor.repair()
    assert fixed.healthy, fixed.problems
    assert {e.id for e in mem.store.iter_entries()} == {a.id, b.id}
    [q] = [m for m in fixed.quarantined if m.endswith("index/2026-02-07.json")]
    assert (root / q).read_text() == broken


def test_a_cut_off_day_file_keeps_its_whole_entries(mem, doctor, root):
    a = mem.compress(AUTH, when=when(7, 9))
    b = mem.compress(DB, when=when(7, 10))
    day, index = root / "memory/index/2026-02-07.json", root / "memory/index/index.json"
    broken = day.read_text()[:-60]  # cut inside the second entry
    day.write_text(broken)
    index.unlink()  # no copy to restore from: only what the file still holds
    fixed = doctor.repair()
    assert [e.id for e in read_day(day)] == [a.id]
    [q] = [m for m in fixed.quarantined if m.endswith("index/2026-02-07.json")]
    assert (root / q).read_text() == broken and b.id in broken


def test_git_conflict_in_a_day_file_keeps_both_sides(mem, doctor, root, tmp_path):
    a = mem.compress(AUTH, when=when(7, 9))
    day, index = root / "memory/index/2026-02-07.json", root / "memory/index/index.json"
    base = day.read_text()
    b = mem.compress(DB, when=when(7, 10))
    ours, ours_index = day.read_text(), index.read_text()
    c = mem.compress(ART, when=when(7, 11))  # "the other machine" added c the same day
    doc = json.loads(base)
    doc["entries"] += [x for x in json.loads(day.read_text())["entries"] if x["id"] == c.id]
    theirs = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    files = {}
    for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
        files[name] = tmp_path / name
        files[name].write_text(text)
    merged = subprocess.run(["git", "merge-file", "-p", *map(str, files.values())], capture_output=True, text=True).stdout
    assert "<<<<<<<" in merged and conflict_sides(merged) is not None
    day.write_text(merged)
    index.write_text(ours_index)  # index.json does not know c: only the conflict holds it

    report = doctor.diagnose()
    assert any(p.kind == "conflict" and p.path.endswith("2026-02-07.json") and p.line for p in report.problems)
    fixed = doctor.repair()
    assert fixed.healthy, fixed.problems
    assert {e.id for e in mem.store.iter_entries()} == {a.id, b.id, c.id}
    assert any(m.endswith("index/2026-02-07.json") for m in fixed.quarantined)


def test_duplicates_are_reduced_to_one_and_nothing_is_lost(mem, doctor, root):
    a = mem.compress(AUTH, when=when(7, 9))
    b = mem.compress(DB, when=when(7, 10))
    day = root / "memory/index/2026-02-07.json"
    doc = json.loads(day.read_text())
    changed = dict(doc["entries"][1], summary="edited on another machine")
    doc["entries"] += [doc["entries"][0], changed]  # a twice identical, b twice different
    day.write_text(json.dumps(doc, indent=2))
    report = doctor.diagnose()
    assert kinds(report) == ["duplicate", "duplicate"]
    fixed = doctor.repair()
    assert fixed.healthy, fixed.problems
    entries = list(mem.store.iter_entries())
    assert sorted(e.id for e in entries) == sorted([a.id, b.id])
    [record] = [m for m in fixed.quarantined if "removed" in m]
    assert json.loads((root / record).read_text())["entry"]["summary"] == "edited on another machine"


def test_the_same_transcript_stored_twice_keeps_the_earlier(mem, doctor, root, tmp_path):
    first = mem.compress(AUTH, when=when(7, 9))
    # the same session compressed again later on another machine, merged in by git (compress itself
    # returns the stored entry for a transcript it already holds: memtool.dedupe)
    laptop = tmp_path / "laptop"
    init(laptop)
    again = open_memory(laptop, embedder=FakeEmbedder()).compress(AUTH, when=when(9, 9))
    for rel in ("memory/index/2026-02-09.json", f"memory/transcripts/2026-02/{again.id}.md", f"memory/index/embeddings/2026-02/{again.id}.vec"):
        (root / rel).write_bytes((laptop / rel).read_bytes())
    assert first.id != again.id
    [dup] = [p for p in doctor.diagnose().problems if p.kind == "duplicate"]
    assert again.id in dup.message and first.id in dup.message
    fixed = doctor.repair()
    assert fixed.healthy and [e.id for e in mem.store.iter_entries()] == [first.id]
    assert any(m.endswith(f"transcripts/2026-02/{again.id}.md") for m in fixed.quarantined)
    assert any(m.endswith(f"embeddings/2026-02/{again.id}.vec") for m in fixed.quarantined)


def test_misplaced_entry_moves_to_its_day(mem, doctor, root):
    a = mem.compress(AUTH, when=when(7))
    src, dst = root / "memory/index/2026-02-07.json", root / "memory/index/2026-02-08.json"
    dst.write_text(src.read_text().replace('"date": "2026-02-07"', '"date": "2026-02-08"'))
    src.write_text(json.dumps({"date": "2026-02-07", "entries": []}))
    assert "misplaced" in kinds(doctor.diagnose())
    assert doctor.repair().healthy
    assert [e.id for e in mem.store.iter_entries()] == [a.id] and mem.get(a.id) is not None


def test_embedding_model_and_dimension_are_checked(mem, root):
    a = mem.compress(AUTH, when=when(7))
    b = mem.compress(DB, when=when(8))
    other = Doctor(mem.layout, mem.settings, FakeEmbedder(model="other-model", dim=32))
    report = other.diagnose()
    assert kinds(report) == ["embedding", "embedding"]
    assert all("memory reembed" in p.message and p.fix == "" for p in report.problems)
    assert not other.repair().healthy  # --fix does not re-embed a whole store behind your back

    doctor = Doctor(mem.layout, mem.settings, FakeEmbedder())
    vec = embedding_path(root, a.id)
    data = read_vector_at(vec)
    vec.write_bytes(vector_bytes(a.id, data["model"], "0" * 16, data["embedding"]))  # the entry was edited since: kept (written once)
    embedding_path(root, b.id).unlink()  # never embedded (provider was down)
    report = doctor.diagnose()
    assert report.healthy and sorted(p.kind for p in report.problems) == ["pending"]
    fixed = doctor.repair()
    assert fixed.problems == [] and "embedded 1 entries with fake-hash-64" in fixed.fixed


def test_markdown_conflicts_and_bad_config_need_a_person(mem, doctor, root):
    mem.compress(AUTH, when=when(7))
    md = root / "MEMORY.md"
    text = "# MEMORY\n<<<<<<< HEAD\n- use Postgres\n=======\n- use SQLite\n>>>>>>> laptop\n"
    md.write_text(text)
    (root / "memory/config.yaml").write_text("budget: 100\ncompressor: [local\n")
    from memtool.doctor import open_doctor

    report = open_doctor(root).diagnose()
    by_kind = {p.kind: p for p in report.problems}
    assert by_kind["conflict"].path == "MEMORY.md" and by_kind["conflict"].line == 2
    assert by_kind["config"].path == "memory/config.yaml" and by_kind["config"].line == 3
    fixed = open_doctor(root).repair()
    assert not fixed.healthy and md.read_text() == text  # reported, never rewritten


def test_a_setext_heading_is_not_a_conflict(mem, doctor, root):
    (root / "USER.md").write_text("Name\n=======\n\nAda\n")
    assert doctor.diagnose().healthy


# --- the archive: memory/archive/YYYY/ is checked and repaired like the live store -------------

LATER = datetime(2027, 6, 1, 12, tzinfo=timezone.utc)  # entries of February 2026 are past the 365-day window


@pytest.fixture
def archived(mem, root):
    """AUTH and DB archived (with a log of their days), ART still live. Returns (AUTH, DB, ART, archive year)."""
    a = mem.compress(AUTH, when=when(7, 9))
    b = mem.compress(DB, when=when(7, 10))
    mem.log("rolled out the Auth0 login", when=when(7, 11))
    c = mem.compress(ART, when=LATER - timedelta(days=2))
    report = archive(mem.layout, mem.settings, now=LATER)
    assert sorted(report.entries) == sorted([a.id, b.id]) and len(report.logs) == 1
    return a, b, c, ArchiveLayout(root, "2026")


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_good_archive_is_checked_and_left_byte_for_byte(archived, doctor, root):
    a, b, c, arch = archived
    report = doctor.diagnose()
    assert report.healthy and report.problems == []
    # day_files 2: a live day whose entries all moved keeps its (empty) file, so a teammate's change to it merges
    counts = {"entries": 1, "day_files": 2, "embeddings": 1, "transcripts": 1, "passages_files": 1, "archived_entries": 2, "archived_day_files": 1}
    assert report.counts == counts
    orphan = transcript_path(root, "ctx-20270101-deadbeef")
    orphan.parent.mkdir()
    orphan.write_text("a transcript whose entry never made it\n")  # something live for --fix to do
    before = tree(root / "memory/archive")
    fixed = doctor.repair()
    [moved] = fixed.quarantined
    assert fixed.healthy and moved.endswith("/transcripts/2027-01/ctx-20270101-deadbeef.md") and not orphan.exists()
    assert tree(root / "memory/archive") == before


def test_a_broken_archive_day_file_is_reported_with_its_path_and_quarantined(archived, doctor, root):
    a, b, c, arch = archived
    day = arch.day_file("2026-02-07")
    doc = json.loads(day.read_text())
    broken = json.dumps(doc, indent=2)[:-60]  # the second entry cut off
    day.write_text(broken)
    before = contents(root / "memory")

    report = doctor.diagnose()
    [bad] = report.of("unparsable")
    assert (bad.path, bad.fix) == ("memory/archive/2026/index/2026-02-07.json", "quarantine, keep what parses")
    assert bad.line and "invalid JSON" in bad.message
    assert kinds(report) == ["orphan"] * 6 + ["unparsable"]  # its entries unread, their archived files look orphaned
    res = CliRunner().invoke(app, ["doctor"])
    assert res.exit_code == StoreCorrupt.exit_code and "memory/archive/2026/index/2026-02-07.json:" in res.output

    fixed = doctor.repair()
    assert fixed.healthy, fixed.problems
    assert [e.id for e in read_day(day)] == [a.id]  # what parses stays archived
    [original] = [m for m in fixed.quarantined if m.endswith("/archive/2026/index/2026-02-07.json")]
    assert (root / original).read_text() == broken
    assert not arch.transcript_file(b.id).exists()  # the cut-off entry's files went to quarantine with it
    assert any(m.endswith(f"/archive/2026/transcripts/2026-02/{b.id}.md") for m in fixed.quarantined)
    assert kept_everything(before, contents(root / "memory"))
    assert [e.id for e in mem_entries(root)] == [c.id]  # the live store was not touched


def mem_entries(root: Path):
    return list(open_memory(root, embedder=FakeEmbedder()).store.iter_entries())


def test_archive_embeddings_orphan_malformed_and_of_another_model(archived, root):
    a, b, c, arch = archived
    orphan = arch.embedding_file("ctx-20260207-deadbeef")
    orphan.write_bytes(vector_bytes("ctx-20260207-deadbeef", "fake-hash-64", "0" * 16, [1.0]))
    vec = arch.embedding_file(a.id)
    data = read_vector_at(vec)
    vec.write_bytes(vector_bytes(a.id, data["model"], data["content_hash"], data["embedding"]).replace(b'"dim": 64', b'"dim": 3'))  # says 3 dims, holds 64
    tmp = arch.index_dir / ".2026-02-07.json.x1y2.tmp"
    tmp.write_text("{")
    mem = open_memory(root, embedder=FakeEmbedder())
    doctor = Doctor(mem.layout, mem.settings, mem.embedder)

    report = doctor.diagnose()
    assert {(p.kind, p.path) for p in report.problems} == {
        ("orphan", "memory/archive/2026/index/embeddings/2026-02/ctx-20260207-deadbeef.vec"),
        ("unparsable", f"memory/archive/2026/index/embeddings/2026-02/{a.id}.vec"),
        ("temp", "memory/archive/2026/index/.2026-02-07.json.x1y2.tmp"),
    }
    fixed = doctor.repair()
    assert fixed.healthy and fixed.problems == [], fixed.problems
    assert "removed temp file memory/archive/2026/index/.2026-02-07.json.x1y2.tmp" in fixed.fixed
    assert "embedded 1 entries with fake-hash-64" in fixed.fixed  # the malformed one, re-embedded in the archive
    assert read_vector_at(vec)["dim"] == 64 and not orphan.exists()
    assert sorted(m.rsplit("/", 1)[1] for m in fixed.quarantined) == sorted([f"{a.id}.vec", "ctx-20260207-deadbeef.vec"])

    other = Doctor(mem.layout, mem.settings, FakeEmbedder(model="other-model", dim=32))
    mismatched = [p for p in other.diagnose().problems if p.path.startswith("memory/archive/")]
    assert len(mismatched) == 2 and all(p.kind == "embedding" and p.fix == "" for p in mismatched)
    assert all("Run `memory reembed`" in p.message for p in mismatched)  # it re-embeds archived entries too


def test_an_entry_both_live_and_archived_keeps_the_live_copy(archived, doctor, root):
    a, b, c, arch = archived
    day = arch.day_file("2026-02-07")
    doc = json.loads(day.read_text())
    live_day = root / "memory/index/2026-02-07.json"
    [entry] = [x for x in doc["entries"] if x["id"] == a.id]
    live_day.write_text(json.dumps({"date": "2026-02-07", "entries": [dict(entry, summary="Auth0, edited live")]}, indent=2))
    for f in (arch.transcript_file(a.id), arch.embedding_file(a.id)):  # an interrupted `memory archive` copied them first
        (root / "memory" / f.relative_to(arch.memory_dir)).write_bytes(f.read_bytes())
    mem = open_memory(root, embedder=FakeEmbedder())
    write_index(mem.layout, mem.settings.compressor)

    [dup] = [p for p in doctor.diagnose().problems if p.kind == "duplicate"]
    assert dup.path == "memory/archive/2026/index/2026-02-07.json" and f"entry {a.id} is also live with different content" == dup.message
    fixed = doctor.repair()
    assert fixed.healthy and fixed.problems == [], fixed.problems
    assert [e.id for e in read_day(day)] == [b.id]
    assert mem.get(a.id).summary == "Auth0, edited live"
    [record] = [m for m in fixed.quarantined if "removed" in m]
    assert "/archive/2026/index/removed-1-" in record and json.loads((root / record).read_text())["entry"]["summary"] == entry["summary"]
    assert not arch.transcript_file(a.id).exists() and mem.layout.transcript_file(a.id).is_file()


def test_live_versus_archived_keeps_the_only_transcript_and_says_where_it_went(archived, doctor, root):
    """An archive cut off after it removed the live transcript and embedding, before the live day file:
    the entry is live and archived, its only transcript and vector archived. The live copy is kept and
    they move beside it; nothing of it goes to the quarantine."""
    a, b, c, arch = archived
    doc = json.loads(arch.day_file("2026-02-07").read_text())
    [entry] = [x for x in doc["entries"] if x["id"] == a.id]
    (root / "memory/index/2026-02-07.json").write_text(json.dumps({"date": "2026-02-07", "entries": [entry]}, indent=2))
    transcript = arch.transcript_file(a.id).read_bytes()
    mem = open_memory(root, embedder=FakeEmbedder())
    write_index(mem.layout, mem.settings.compressor)

    fixed = doctor.repair()
    assert fixed.healthy and fixed.problems == [], fixed.problems
    assert mem.layout.transcript_file(a.id).read_bytes() == transcript and mem.layout.embedding_file(a.id).is_file()
    assert f"moved memory/archive/2026/transcripts/2026-02/{a.id}.md to memory/transcripts/2026-02/{a.id}.md, beside its entry" in fixed.fixed
    assert not any(a.id in m for m in fixed.quarantined), fixed.quarantined
    assert mem.get(a.id) is not None and [e.id for e in read_day(arch.day_file("2026-02-07"))] == [b.id]


def test_an_archived_entrys_transcript_left_live_moves_to_the_archive(archived, doctor, root):
    a, b, c, arch = archived
    live_copy = transcript_path(root, b.id)
    live_copy.parent.mkdir(parents=True, exist_ok=True)
    arch.transcript_file(b.id).rename(live_copy)  # a restore or a hand move put it back in the live folder
    fixed = doctor.repair()
    assert fixed.healthy and arch.transcript_file(b.id).is_file() and not live_copy.exists() and fixed.quarantined == []


def test_a_day_file_in_another_years_archive_needs_a_person(archived, doctor, root):
    a, b, c, arch = archived
    wrong = root / "memory/archive/2025/index/2026-02-07.json"
    wrong.parent.mkdir(parents=True)
    arch.day_file("2026-02-07").rename(wrong)
    misplaced = doctor.diagnose().of("misplaced")
    assert [(p.path, p.fix) for p in misplaced] == [("memory/archive/2025/index/2026-02-07.json", "")]
    assert "move it to memory/archive/2026/index/2026-02-07.json by hand" in misplaced[0].message
    fixed = doctor.repair()
    assert fixed.of("misplaced") and wrong.is_file()  # left for a person; its entries are still there
    assert {e.id for e in read_day(wrong)} == {a.id, b.id}
    assert arch.transcript_file(a.id).is_file() and arch.transcript_file(b.id).is_file()  # not taken for orphans


def test_conflict_markers_in_an_archived_log_need_a_person(archived, doctor, root):
    [log] = list((root / "memory/archive/2026").glob("*.md"))
    text = log.read_text() + "<<<<<<< HEAD\n- ours\n=======\n- theirs\n>>>>>>> laptop\n"
    log.write_text(text)
    [p] = doctor.diagnose().problems
    assert (p.kind, p.path, p.fix) == ("conflict", log.relative_to(root).as_posix(), "")
    assert not doctor.repair().healthy and log.read_text() == text


def test_cli_reports_and_fixes_with_exit_codes(root, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))
    runner = CliRunner()
    assert runner.invoke(app, ["init"]).exit_code == 0
    (root / "t.md").write_text(AUTH + "\n")
    assert runner.invoke(app, ["compress", "t.md"]).exit_code == 0
    res = runner.invoke(app, ["doctor"])
    assert res.exit_code == 0 and "healthy" in res.output

    (root / "memory/index/index.json").write_text("{ not json")
    (root / "memory/transcripts/2026-01").mkdir()
    (root / "memory/transcripts/2026-01/ctx-20260101-00000000.md").write_text("orphan\n")
    res = runner.invoke(app, ["doctor"])
    assert res.exit_code == StoreCorrupt.exit_code
    assert "memory/index/index.json:1: invalid JSON" in res.output and "[--fix: quarantine]" in res.output
    res = runner.invoke(app, ["doctor", "--json"])
    data = json.loads(res.stdout)
    assert res.exit_code == StoreCorrupt.exit_code and data["healthy"] is False
    assert {p["kind"] for p in data["problems"]} == {"unparsable", "orphan"}

    res = runner.invoke(app, ["doctor", "--fix"])
    assert res.exit_code == 0, res.output
    assert "quarantined: memory/quarantine/" in res.output and "healthy" in res.output
    assert runner.invoke(app, ["doctor"]).exit_code == 0


def test_cli_outside_a_memory_root(tmp_path):
    res = CliRunner().invoke(app, ["--root", str(tmp_path / "nowhere"), "doctor"])
    assert res.exit_code == 3 and "not a memory root" in res.output


def test_json_nested_thousands_deep_is_damage_not_a_crash(mem, doctor, root):
    """Brackets nested 100,000 deep in a day file and an embedding file: search, sync and doctor
    report or mend them (json raises RecursionError there, not JSONDecodeError)."""
    from memtool.sync import sync

    e = mem.compress(AUTH, when=when(4))
    deep = "[" * 100_000 + "]" * 100_000
    (root / "memory/index/2026-02-05.json").write_text(deep)
    mem.layout.embedding_file(e.id).write_text(deep)
    mem.invalidate()
    assert [h.id for h in mem.search("Auth0")] == [e.id]
    report = sync(mem)
    assert report.embedded == 1 and any("nested too deeply" in p for p in report.errors)
    assert any("nested too deeply" in p.message for p in doctor.diagnose().problems)
    fixed = doctor.repair()
    moved = [m for m in fixed.quarantined if m.endswith("2026-02-05.json")]
    assert len(moved) == 1 and (root / moved[0]).read_text() == deep  # set aside whole, not lost
    assert doctor.diagnose().healthy


def test_a_torn_embedding_file_does_not_stop_search(mem, doctor, root):
    """The vector is recomputed for the search cache; doctor reports the file and --fix rewrites it."""
    e = mem.compress(AUTH, when=when(4))
    mem.layout.embedding_file(e.id).write_bytes(b'memtool-vector 1 {"id": "torn')
    mem.invalidate()
    assert [h.id for h in mem.search("Auth0")] == [e.id]
    assert not doctor.diagnose().healthy
    doctor.repair()
    assert doctor.diagnose().healthy and read_vector_at(mem.layout.embedding_file(e.id))["id"] == e.id


def test_a_linked_folder_is_an_error_with_its_fix_where_compress_fails_on_it(root, tmp_path):
    from memtool.app import open_memory
    from memtool.errors import UnsafePath
    from memtool.scaffold import init

    init(root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = root / "memory" / "transcripts"
    if link.exists():
        link.rmdir()
    link.symlink_to(elsewhere)
    with pytest.raises(UnsafePath) as refused:
        open_memory(root).compress("Alice: we decided to move billing to Postgres.\n", session="s")
    assert "is a symbolic link" in str(refused.value) and f"rm {link} && cp -a {elsewhere} {link}" in str(refused.value)
    from memtool.doctor import open_doctor

    report = open_doctor(root).diagnose()
    assert not report.healthy
    [p] = [p for p in report.problems if p.kind == "unsafe"]
    assert p.path == "memory/transcripts" and p.severity == "error" and f"cp -a {elsewhere}" in p.message
