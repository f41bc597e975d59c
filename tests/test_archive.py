"""`memory archive`: old logs and entries move to memory/archive/YYYY/, exempt ones stay, nothing is
lost at any crash point, and `--archive` searches what moved."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool import archive as archive_mod
from memtool.app import open_memory
from memtool.archive import archive
from memtool.cli.main import app
from memtool.dayfile import day_document, read_day
from memtool.doctor import Doctor
from memtool.fsutil import atomic_write_text
from memtool.scaffold import init
from memtool.store import ArchiveLayout, Layout, archived_entries, get_archived
from tests.conftest import read_vector_at

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
OLD = NOW - timedelta(days=400)  # older than the default 365-day entry window
OLD_DAY = OLD.strftime("%Y-%m-%d")
YEAR = OLD_DAY[:4]


@pytest.fixture
def mem(root, fake_embedder, fake_compressor):
    init(root)
    return open_memory(root, embedder=fake_embedder, compressor=fake_compressor)


def tree(root: Path) -> dict[str, bytes]:
    """Every versioned file under memory/ (the derived cache and the lock left out)."""
    out = {}
    for p in sorted((root / "memory").rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not rel.startswith("memory/.cache") and p.name != ".lock":
            out[rel] = p.read_bytes()
    return out


def populate(mem) -> dict[str, str]:
    """Two old movable entries on one day, an old pinned one and an old critical one on that day too,
    a recent one, an old daily log and a recent one. Returns name -> id."""
    ids = {}
    ids["zebra"] = mem.compress("Zebra migration: the billing tables moved to Postgres.", when=OLD, session="zebra").id
    ids["quokka"] = mem.compress("Quokka webhook retries now back off exponentially.", when=OLD + timedelta(hours=1), session="quokka").id
    ids["critical"] = mem.compress("Walrus outage: never run migrations on Friday.", when=OLD + timedelta(hours=2), importance="critical", session="w").id
    pinned = mem.compress("Narwhal coding style: tabs, never spaces.", when=OLD + timedelta(hours=3), session="n")
    ids["pinned"] = pinned.id
    day = mem.layout.day_file(OLD_DAY)
    entries = [replace(e, pinned=True) if e.id == pinned.id else e for e in read_day(day)]
    atomic_write_text(day, day_document(OLD_DAY, entries))
    ids["recent"] = mem.compress("Ocelot deploy pipeline now caches wheels.", when=NOW - timedelta(days=2), session="recent").id
    mem.log("old note: the yak shaving of the staging cluster", when=(NOW - timedelta(days=120)).astimezone())
    mem.log("fresh note: the gnu release checklist", when=(NOW - timedelta(days=1)).astimezone())
    return ids


def test_moves_old_logs_and_entries_keeps_exempt_and_splits_the_day(mem, root):
    ids = populate(mem)
    old_log_day = (NOW - timedelta(days=120)).astimezone().strftime("%Y-%m-%d")
    report = archive(mem.layout, mem.settings, now=NOW)

    assert sorted(report.entries) == sorted([ids["zebra"], ids["quokka"]])
    assert report.kept_pinned == [ids["pinned"]] and report.kept_important == [ids["critical"]]
    arch = ArchiveLayout(root, YEAR)
    assert report.logs == [f"memory/{old_log_day}.md -> memory/archive/{old_log_day[:4]}/{old_log_day}.md"]
    assert (root / f"memory/archive/{old_log_day[:4]}/{old_log_day}.md").read_text().count("yak shaving") == 1
    assert not (root / f"memory/{old_log_day}.md").exists()
    assert (root / f"memory/{(NOW - timedelta(days=1)).astimezone():%Y-%m-%d}.md").is_file()  # recent log stays

    # the day file was split: exempt entries stay live, the others moved with their files
    assert {e.id for e in read_day(mem.layout.day_file(OLD_DAY))} == {ids["pinned"], ids["critical"]}
    assert {e.id for e in read_day(arch.day_file(OLD_DAY))} == {ids["zebra"], ids["quokka"]}
    for key in ("zebra", "quokka"):
        assert arch.transcript_file(ids[key]).is_file() and arch.embedding_file(ids[key]).is_file()
        assert not mem.layout.transcript_file(ids[key]).exists() and not mem.layout.embedding_file(ids[key]).exists()
    assert root.joinpath(f"memory/archive/{YEAR}/index/embeddings/{YEAR}-01/{ids['zebra']}.vec").is_file()  # the documented layout
    index = json.loads(mem.layout.index_file.read_text())
    assert {e["id"] for e in index["entries"]} == {ids["pinned"], ids["critical"], ids["recent"]}
    assert get_archived(mem.layout, ids["zebra"]).summary.startswith("Zebra migration")

    again = archive(mem.layout, mem.settings, now=NOW)  # idempotent
    assert again.entries == [] and again.logs == [] and again.resolved == []
    assert Doctor(mem.layout, mem.settings, mem.embedder).diagnose().healthy  # no orphans or stale index left behind


def test_dry_run_changes_nothing(mem, root):
    populate(mem)
    before = tree(root)
    report = archive(mem.layout, mem.settings, dry_run=True, now=NOW)
    assert len(report.entries) == 2 and len(report.logs) == 1
    assert tree(root) == before


def test_zero_windows_archive_nothing(root, fake_embedder, fake_compressor):
    init(root)
    mem = open_memory(root, embedder=fake_embedder, compressor=fake_compressor, log_retention_days=0, entry_retention_days=0)
    populate(mem)
    before = tree(root)
    report = archive(mem.layout, mem.settings, now=NOW)
    assert report.entries == [] and report.logs == [] and tree(root) == before


def test_search_archive_finds_what_moved_and_the_live_cache_does_not(mem, root):
    ids = populate(mem)
    assert mem.search("zebra billing", kinds=("entry",))[0].id == ids["zebra"]
    archive(mem.layout, mem.settings, now=NOW)
    mem.invalidate()
    assert ids["zebra"] not in [h.id for h in mem.search("zebra billing")]
    hits = mem.search("zebra billing", archive=True)
    assert hits[0].id == ids["zebra"]
    raw = mem.search("zebra billing", archive=True, kinds=("transcript",))  # its archived transcript is indexed too
    assert raw[0].id == ids["zebra"] and "Zebra migration" in raw[0].passage
    logs = mem.search("yak shaving staging", archive=True, kinds=("log",))
    assert logs and logs[0].ref.startswith("memory/archive/") and logs[0].kind == "log"
    # one store: the archived documents are held beside the live ones, flagged, and a live search leaves them out
    assert not any(h.ref.startswith("memory/archive/") for h in mem.search("yak shaving staging", kinds=("log",), limit=20))
    assert not any(h.id == ids["zebra"] for h in mem.search("zebra billing", kinds=("transcript",), limit=20))

    # the archive cache follows the files: an entry archived later is found too
    later = mem.compress("Capybara cache warming moved to a cron job.", when=OLD + timedelta(days=1), session="later")
    assert later.id not in [h.id for h in mem.search("capybara cron", archive=True) if "archive" in h.ref]
    archive(mem.layout, mem.settings, now=NOW)
    assert get_archived(mem.layout, later.id) is not None
    assert mem.search("capybara cron", archive=True)[0].id == later.id


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing catches it."""


def all_places(root: Path, entry_id: str) -> list[str]:
    """The day files (live and archived) holding this entry."""
    found = []
    live = root / "memory/index"
    for path in [*sorted(live.glob("*.json")), *sorted(root.glob("memory/archive/*/index/*.json"))]:
        if path.name == "index.json":
            continue
        if any(e.id == entry_id for e in read_day(path)):
            found.append(path.relative_to(root).as_posix())
    return found


def test_a_crash_at_any_step_loses_nothing_and_the_next_run_resolves_it(root, fake_embedder, fake_compressor, monkeypatch):
    """Crash the archive at every file operation in turn: afterwards each entry is in one place or both,
    with its files; the next run leaves each entry in exactly one place, the archive, with its files."""
    steps = 0
    crash_at = 0

    def failing(fn):
        def wrapper(*a, **kw):
            nonlocal steps
            steps += 1
            if steps == crash_at:
                raise Crash()
            return fn(*a, **kw)

        return wrapper

    for name in ("atomic_write_bytes", "atomic_write_text", "_unlink"):
        monkeypatch.setattr(archive_mod, name, failing(getattr(archive_mod, name)))

    crash_at, n_ops = 10**9, None
    trial = 0
    while True:
        trial += 1
        base = root / f"trial{trial}"
        base.mkdir()
        init(base)
        mem = open_memory(base, embedder=fake_embedder, compressor=fake_compressor)
        ids = populate(mem)
        movable = [ids["zebra"], ids["quokka"]]
        texts = {i: mem.layout.transcript_file(i).read_bytes() for i in movable}
        log_text = {p.name: p.read_bytes() for p in (base / "memory").glob("*.md")}
        steps = 0
        if n_ops is None:  # first trial: count the operations of a clean run
            archive(mem.layout, mem.settings, now=NOW)
            n_ops, crash_at = steps, 1
            continue
        with pytest.raises(Crash):
            archive(mem.layout, mem.settings, now=NOW)
        for i in movable:  # never in no place; its transcript readable where its entry is
            places = all_places(base, i)
            assert places, (crash_at, i)
            for place in places:
                home = mem.layout if place.startswith("memory/index") else ArchiveLayout(base, YEAR)
                assert home.transcript_file(i).read_bytes() == texts[i], (crash_at, place)
        for name, data in log_text.items():
            copies = [p.read_bytes() for p in base.glob(f"memory/**/{name}")]
            assert data in copies, (crash_at, name)
        crash_at_was = crash_at
        crash_at = 10**9
        archive(mem.layout, mem.settings, now=NOW)  # the next run
        for i in movable:
            assert all_places(base, i) == [f"memory/archive/{YEAR}/index/{OLD_DAY}.json"], crash_at_was
            assert ArchiveLayout(base, YEAR).transcript_file(i).read_bytes() == texts[i]
            assert ArchiveLayout(base, YEAR).embedding_file(i).is_file()
            assert not mem.layout.transcript_file(i).exists() and not mem.layout.embedding_file(i).exists()
        for name, data in log_text.items():
            copies = [p for p in base.glob(f"memory/**/{name}")]
            assert len(copies) == 1 and copies[0].read_bytes() == data, (crash_at_was, name)
        assert {e["id"] for e in json.loads(mem.layout.index_file.read_text())["entries"]} == {ids["pinned"], ids["critical"], ids["recent"]}
        if crash_at_was >= n_ops:
            break
        crash_at = crash_at_was + 1
    assert n_ops == 16  # log copy + removal; 2 x (transcript + embedding + passages) copies; archive + live day file; 6 removals


def test_entry_both_live_and_archived_keeps_the_live_copy(mem, root):
    ids = populate(mem)
    archive(mem.layout, mem.settings, now=NOW)
    arch = ArchiveLayout(root, YEAR)
    # simulate a run cut short after the archive copy: the entry is back in its live day file, edited since
    zebra = get_archived(mem.layout, ids["zebra"])
    edited = replace(zebra, summary="Zebra migration, edited live.")
    day = mem.layout.day_file(OLD_DAY)
    atomic_write_text(day, day_document(OLD_DAY, [*read_day(day), edited]))
    mem.layout.transcript_file(ids["zebra"]).write_bytes(arch.transcript_file(ids["zebra"]).read_bytes())

    report = archive(mem.layout, mem.settings, dry_run=True, now=NOW)
    assert any(ids["zebra"] in line and "kept the live one" in line for line in report.resolved)
    report = archive(mem.layout, mem.settings, now=NOW)
    assert any("differed" in line for line in report.resolved)
    assert get_archived(mem.layout, ids["zebra"]).summary == "Zebra migration, edited live."  # the live copy, archived again
    quarantined = list(root.glob(f"memory/quarantine/*/archive/{YEAR}/index/{ids['zebra']}.json"))
    assert len(quarantined) == 1 and "Zebra migration: the billing" in quarantined[0].read_text()
    assert all_places(root, ids["zebra"]) == [f"memory/archive/{YEAR}/index/{OLD_DAY}.json"]


def test_a_log_written_again_after_its_day_was_archived_is_merged(mem, root):
    populate(mem)
    old_log_day = (NOW - timedelta(days=120)).astimezone()
    archive(mem.layout, mem.settings, now=NOW)
    mem.log("late addition about the yak", when=old_log_day.replace(hour=18))
    archive(mem.layout, mem.settings, now=NOW)
    text = (root / f"memory/archive/{old_log_day:%Y}/{old_log_day:%Y-%m-%d}.md").read_text()
    assert "yak shaving of the staging cluster" in text and "late addition about the yak" in text
    assert text.count(f"# {old_log_day:%Y-%m-%d}") == 1


def test_cli_archive_then_search_archive_and_show(root, tmp_path):
    """As a user runs it: every step a `memory` command."""
    init(root)
    run = lambda *args: CliRunner().invoke(app, list(args))  # noqa: E731
    session = tmp_path / "s.md"
    session.write_text("User: the ferret build farm moved to arm64 runners.\nAssistant: noted, arm64 it is.\n")
    stored = run("compress", str(session), "--date", "2020-05-04")
    assert stored.exit_code == 0, stored.output
    entry_id = stored.stdout.split()[0]

    dry = run("archive", "--dry-run", "--json")
    assert dry.exit_code == 0 and json.loads(dry.stdout)["entries"] == [entry_id]
    done = run("archive")
    assert done.exit_code == 0 and f"moved entry {entry_id}" in done.stdout and "archived 0 daily logs and 1 entries" in done.stdout
    assert (root / "memory/archive/2020/index/2020-05-04.json").is_file()

    assert json.loads(run("search", "ferret arm64", "--kind", "entry", "--json").stdout) == []
    found = json.loads(run("search", "ferret arm64", "--kind", "entry", "--archive", "--json").stdout)
    assert found[0]["id"] == entry_id
    shown = run("show", entry_id)
    assert shown.exit_code == 0 and "ferret" in shown.stdout and "archived: " in shown.stdout


def test_cli_archive_nothing_to_do(root):
    init(root)
    res = CliRunner().invoke(app, ["archive"])
    assert res.exit_code == 0 and "nothing to archive (logs older than 90 days, entries older than 365 days)" in res.output


def test_reembed_switches_archived_entries_too(mem, root):
    """After an embedder switch, `memory reembed` re-embeds what was archived as well, so
    `search --archive` keeps working and the doctor finds no stale vectors."""
    from memtool.errors import DimensionMismatch
    from memtool.sync import reembed_archive, sync
    from tests.conftest import FakeEmbedder

    ids = populate(mem)
    archive(mem.layout, mem.settings, now=NOW)
    other = FakeEmbedder(model="other", dim=32)
    switched = open_memory(root, embedder=other, compressor=mem.compressor)
    sync(switched)
    with pytest.raises(DimensionMismatch):
        switched.search("zebra billing", archive=True)  # the archived vectors are still the old model's
    stale = Doctor(switched.layout, switched.settings, other).diagnose().problems
    assert [p.kind for p in stale] == ["embedding", "embedding"] and all("Run `memory reembed`" in p.message for p in stale)
    moved = reembed_archive(switched)
    assert sorted(p.stem for p in moved) == sorted([ids["zebra"], ids["quokka"]])
    data = read_vector_at(ArchiveLayout(root, YEAR).embedding_file(ids["zebra"]))
    assert (data["model"], data["dim"], len(data["embedding"])) == ("other", 32, 32)
    switched.invalidate()
    assert switched.search("zebra billing", archive=True)[0].id == ids["zebra"]
    doctor = Doctor(switched.layout, switched.settings, other)
    assert doctor.diagnose().healthy and not [p for p in doctor.diagnose().problems if p.kind == "embedding"]
    assert reembed_archive(switched) == []  # current vectors are left alone


def test_cli_reembed_counts_archived_entries(mem, root, monkeypatch):
    monkeypatch.setenv("MEMTOOL_EMBEDDER", "wordllama")
    ids = populate(mem)  # embedded with the fake embedder; the CLI's is wordllama
    archive(mem.layout, mem.settings, now=NOW)
    out = CliRunner().invoke(app, ["reembed", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["embedded"] == 3 + 2 and data["model"].startswith("wordllama")  # three live entries, two archived
    assert read_vector_at(ArchiveLayout(root, YEAR).embedding_file(ids["zebra"]))["model"] == data["model"]
    again = json.loads(CliRunner().invoke(app, ["reembed", "--json"]).stdout)
    assert again["embedded"] == 0


def test_export_says_it_left_archived_entries_out_and_exports_them_with_archived(mem, root):
    ids = populate(mem)
    archive(mem.layout, mem.settings, now=NOW)
    runner = CliRunner()
    live = runner.invoke(app, ["--root", str(root), "export"])
    assert live.exit_code == 0 and ids["zebra"] not in live.stdout
    assert "archived entr" in live.stderr and "left out" in live.stderr and "`memory export --archived`" in live.stderr
    every = runner.invoke(app, ["--root", str(root), "export", "--archived"])
    assert every.exit_code == 0 and ids["zebra"] in every.stdout and "left out" not in every.stderr
    assert len(every.stdout.splitlines()) == len(live.stdout.splitlines()) + len(get_archived_ids(root))


def get_archived_ids(root: Path) -> list[str]:
    return [e.id for e in archived_entries(Layout(root))]
