"""index.json kept in step with the day files: written whole from the cache after each change,
from the day files when the store does not hold them as they are; the same bytes either way."""

import json
from datetime import datetime, timezone

import pytest

import memtool.index_json as index_mod
from memtool.app import open_memory
from memtool.index_json import index_document, write_index
from memtool.scaffold import init


def when(day, hour=9):
    return datetime(2026, 3, day, hour, tzinfo=timezone.utc)


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder)
    for d in range(1, 6):
        m.compress(f"Erin: day {d} notes about the billing migration and the Kafka lag.", when=when(d), session=f"s{d}")
    return m


def entries_of(root):
    return json.loads((root / "memory/index/index.json").read_text())["entries"]


def rebuilt(mem, root):
    """index.json is byte for byte index_document over the day files' entries (an id once)."""
    from_days = index_document(mem.settings.compressor, {e.id: e for e in mem.store.iter_entries()}.values())
    return (root / "memory/index/index.json").read_bytes() == from_days


def test_index_written_from_the_store_equals_the_day_files_document(mem, root, monkeypatch):
    mem.compress("Frank: a second note on day 3 about Grafana alerts.", when=when(3, 15), session="late")
    mem.compress("Grace: day 9, a new day file entirely.", when=when(9), session="new")
    assert len(entries_of(root)) == 7
    assert rebuilt(mem, root)


def test_a_session_of_the_latest_day_is_written_from_the_store(mem, root, monkeypatch):
    """The usual compress (a session stored today, the newest day): index.json from the store's lines,
    byte for byte the day files' document."""
    mem.compress("Frank: day 5 again, the Grafana alert on consumer lag fired twice.", when=when(5, 15), session="late")
    mem.compress("Grace: day 9, a new day file entirely.", when=when(9), session="new")
    mem.compress("Heidi: day 9 afternoon, the billing backfill finished.", when=when(9, 16), session="pm")
    assert [e["timestamp"][:10] for e in entries_of(root)][-4:] == ["2026-03-05", "2026-03-05", "2026-03-09", "2026-03-09"]
    assert rebuilt(mem, root)


def test_a_session_dated_in_the_past_lands_in_time_order(mem, root, monkeypatch):
    """A session dated yesterday (a session that began before midnight, `--date`) lands inside
    index.json, written from the store: byte for byte the day files' document, for a day in the
    middle, a new day between two, the first day, and a day before all of them."""
    for day, hour, name in ((3, 15, "mid"), (3, 7, "early"), (1, 20, "first"), (4, 12, "four")):
        mem.compress(f"Frank: day {day} at {hour}, the {name} session on the Grafana alert for consumer lag.", when=when(day, hour), session=name)
    assert rebuilt(mem, root)
    init_feb = datetime(2026, 2, 27, 9, tzinfo=timezone.utc)  # before every stored day
    mem.compress("Grace: a late import from February about the billing cutover plan.", when=init_feb, session="feb")
    days = [e["timestamp"][:10] for e in entries_of(root)]
    assert days == sorted(days) and days[0] == "2026-02-27" and days.count("2026-03-03") == 3 and len(days) == 10
    assert rebuilt(mem, root)


def test_random_past_and_new_days_keep_index_json_the_day_files_document(root, fake_embedder, monkeypatch):
    """Sessions on random days, past and new, one by one, each written from the store: after each,
    index.json is byte for byte what index_document over the day files gives."""
    import random

    init(root)
    m = open_memory(root, embedder=fake_embedder)
    m.compress("Note: the first session, which writes index.json whole.", when=when(6), session="r")
    rng = random.Random(7)
    for i in range(24):
        day, hour = rng.randint(1, 12), rng.randint(0, 23)
        m.compress(
            f"Note {i}: on day {day} the {rng.choice(['Kafka', 'Postgres', 'Grafana', 'Auth0'])} work moved on, item {i}.",
            when=when(day, hour),
            session=f"r{i}",
        )
        assert rebuilt(m, root), f"after session {i} (day {day})"


def test_an_entry_taken_by_hand_from_the_latest_day_is_not_kept_by_the_append(mem, root):
    day5 = root / "memory/index/2026-03-05.json"
    data = json.loads(day5.read_text())
    gone = data["entries"].pop(0)["id"]
    day5.write_text(json.dumps(data, indent=2))
    mem.compress("Ivan: day 5 evening, the release checklist is done.", when=when(5, 20), session="eve")
    assert gone not in {e["id"] for e in entries_of(root)} and len(entries_of(root)) == 5
    assert rebuilt(mem, root)


def test_a_hand_edit_to_another_day_shows_after_the_next_write(mem, root):
    # a hand edit (or git pull) to another day file since the last index write
    day2 = root / "memory/index/2026-03-02.json"
    data = json.loads(day2.read_text())
    data["entries"][0]["summary"] = "Corrected by hand: the lag was on the orders topic."
    day2.write_text(json.dumps(data, indent=2))
    mem.compress("Heidi: day 4 follow-up on the release checklist.", when=when(4, 18), session="x")
    assert any(e["summary"].startswith("Corrected by hand") for e in entries_of(root))
    assert rebuilt(mem, root)


def test_a_crash_between_day_file_and_index_is_repaired_by_the_next_write(mem, root):
    from memtool.models import Entry

    lost = Entry(id="ctx-20260307-0badc0de", timestamp="2026-03-07T10:00:00.000Z", summary="written, then the process died")
    mem.store.write_entries([lost])  # the day file, but no index.json update (as after a SIGKILL)
    assert lost.id not in {e["id"] for e in entries_of(root)}
    mem.compress("Ivan: day 8 note about the canary deploy.", when=when(8), session="y")
    assert lost.id in {e["id"] for e in entries_of(root)}
    assert rebuilt(mem, root)


def test_deleted_cache_means_a_full_rebuild(mem, root):
    import shutil

    shutil.rmtree(root / "memory/.cache")
    mem.compress("Judy: day 10 note.", when=when(10), session="z")
    assert len(entries_of(root)) == 6 and rebuilt(mem, root)


def test_an_entry_filed_under_another_day_is_kept_once_when_its_dates_file_is_unreadable(mem, root):
    """A hand edit moved day 2's entry into day 3's file, and day 2's file is now damaged: the
    rebuild keeps the damaged day's entries from the old index.json, but not the one it also read."""
    day2, day3 = root / "memory/index/2026-03-02.json", root / "memory/index/2026-03-03.json"
    moved = json.loads(day2.read_text())["entries"][0]
    data3 = json.loads(day3.read_text())
    data3["entries"].append(moved)
    day3.write_text(json.dumps(data3, indent=2))
    day2.write_text('{"date": "2026-03-02", "entries": [')  # cut off
    errors = write_index(mem.layout, mem.settings.compressor).unreadable
    assert errors and [e["id"] for e in entries_of(root)].count(moved["id"]) == 1
    assert len(entries_of(root)) == 5


def test_an_entry_filed_under_another_day_survives_a_write_to_its_dates_day(mem, root):
    """Moved by hand from day 2's file into day 4's (and synced): a compress on day 2 must not drop
    it from index.json, though its timestamp still says day 2."""
    from memtool.sync import sync

    day2, day4 = root / "memory/index/2026-03-02.json", root / "memory/index/2026-03-04.json"
    data2, data4 = json.loads(day2.read_text()), json.loads(day4.read_text())
    moved = data2["entries"].pop(0)
    data4["entries"].append(moved)
    day2.write_text(json.dumps(data2, indent=2))
    day4.write_text(json.dumps(data4, indent=2))
    sync(mem)
    assert moved["id"] in {e["id"] for e in entries_of(root)}
    mem.compress("Kim: a second note on day 2 about the Kafka consumer.", when=when(2, 15), session="k")
    assert [e["id"] for e in entries_of(root)].count(moved["id"]) == 1 and len(entries_of(root)) == 6
    assert rebuilt(mem, root)


def test_a_day_file_saved_while_index_json_is_written_is_not_recorded_as_included(mem, root, monkeypatch):
    """An editor saves day 2 just after index.json was written from the day files (the store could not
    be read): index.json misses the edit, and the next write must not keep missing it."""
    day2 = root / "memory/index/2026-03-02.json"
    real = index_mod.read_day

    def read_then_edit(path, parsed=None):
        entries = real(path, parsed)
        if path == day2 and "Saved by an editor" not in day2.read_text():
            data = json.loads(day2.read_text())
            data["entries"][0]["summary"] = "Saved by an editor while index.json was being written."
            day2.write_text(json.dumps(data, indent=2))
        return entries

    monkeypatch.setattr(index_mod, "read_day", read_then_edit)
    write_index(mem.layout, mem.settings.compressor, full=True)  # every day file read again
    monkeypatch.undo()
    assert not any(e["summary"].startswith("Saved by an editor") for e in entries_of(root))  # the race, as it happened
    mem.compress("Liam: day 4 note on the release train.", when=when(4, 18), session="l")
    assert any(e["summary"].startswith("Saved by an editor") for e in entries_of(root))
    assert rebuilt(mem, root)


def test_non_ascii_lines_are_written_byte_for_byte(mem, root, monkeypatch):
    mem.compress("Zoë: the naïve café build broke on 東京 runners 🚀, so we pinned the toolchain.", when=when(2, 15), session="u1")
    mem.compress("Åsa: the München mirror is back; Ωmega jobs resume.", when=when(7), session="u2")
    text = (root / "memory/index/index.json").read_text(encoding="utf-8")
    assert "Zoë" in text and "München" in text
    assert rebuilt(mem, root)


def test_an_index_json_reformatted_by_hand_is_written_whole_again(mem, root):
    path = root / "memory/index/index.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=2))  # an editor pretty-printed it
    mem.compress("Noor: day 6 note about the queue backlog.", when=when(6), session="p")
    assert len(entries_of(root)) == 6 and rebuilt(mem, root)
    assert len(path.read_text().splitlines()) < 20  # one line per entry again


def test_a_search_cache_that_cannot_be_written_still_leaves_index_json_in_step(mem, root, monkeypatch):
    """The search tables busy past their wait: the compress stores the entry, says the search cache
    was not updated, and index.json (its own lines of the cache) holds the new entry, the same bytes."""
    import memtool.memory as memory_mod
    from memtool.errors import LockBusy

    def busy(*a, **k):
        raise LockBusy("memtool.sqlite: another memtool process is writing the search cache")

    monkeypatch.setattr(mem.cache, "refresh_cache", busy)  # the derived cache Memory picked (memtool/search/backends.py)
    result = mem.compress_many([memory_mod.Session(text="Omar: day 8 note about the flaky canary.", when=when(8), session="o")])
    assert any("search cache was not updated" in w for w in result.warnings)
    assert len(entries_of(root)) == 6 and rebuilt(mem, root)


def test_a_compress_while_a_day_file_is_unreadable_keeps_its_entries(mem, root):
    """A day file cannot be read: its entries stay listed (the lines it had), the new one is added, and
    each write names the unreadable file."""
    day2 = root / "memory/index/2026-03-02.json"
    kept = {e["id"] for e in entries_of(root) if e["timestamp"].startswith("2026-03-02")}
    day2.write_text('{"date": "2026-03-02", "entries": [')  # cut off
    mem.compress("Pia: day 8 note about the flaky canary.", when=when(8), session="q")
    ids = {e["id"] for e in entries_of(root)}
    assert kept and kept <= ids and len(ids) == 6
    assert any("2026-03-02.json" in e for e in write_index(mem.layout, mem.settings.compressor).unreadable)


def test_only_the_day_files_changed_since_the_last_write_are_read_again(mem, root, monkeypatch):
    read = []
    real = index_mod.read_day
    monkeypatch.setattr(index_mod, "read_day", lambda path, parsed=None: read.append(path.name) or real(path, parsed))
    mem.compress("Quinn: day 3 afternoon, the Kafka lag is gone.", when=when(3, 16), session="r")
    assert read == ["2026-03-03.json"] and rebuilt(mem, root)


def test_an_index_json_left_alone_when_the_cache_cannot_be_written_is_written_by_the_next_sync(mem, root):
    """Another process holds the cache's write lock: the write says index.json was not updated and
    leaves it as it was; the next sync writes it."""
    import sqlite3

    import memtool.index_json as ij
    from memtool.cache import cache_path
    from memtool.sync import sync

    before = (root / "memory/index/index.json").read_bytes()
    mem.store.write_entries(
        [__import__("memtool.models", fromlist=["Entry"]).Entry(id="ctx-20260309-0000beef", timestamp="2026-03-09T10:00:00.000Z", summary="late")]
    )
    holder = sqlite3.connect(cache_path(mem.layout), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    wait, ij.WRITE_WAIT_S = ij.WRITE_WAIT_S, 0.1
    try:
        written = write_index(mem.layout, mem.settings.compressor)
    finally:
        ij.WRITE_WAIT_S = wait
        holder.execute("ROLLBACK")
        holder.close()
    assert written.why == "" and "index.json was not updated" in written.not_written
    assert (root / "memory/index/index.json").read_bytes() == before
    sync(mem)
    assert "ctx-20260309-0000beef" in {e["id"] for e in entries_of(root)} and rebuilt(mem, root)
