"""The compressor's rarity hint: counted per day file, kept by stat in the cache, always equal to counting afresh."""

import json
import sqlite3
from collections import Counter
from datetime import datetime, timezone

import pytest

from memtool.app import open_memory
from memtool.cache import cache_path
from memtool.dayfile import read_day
from memtool.docfreq import recent_doc_freq
from memtool.scaffold import init
from memtool.text import WORDS_VERSION, content_words


def afresh(layout, sample):
    """The count without any cache: whole day files, newest first, until `sample` entries."""
    df, n = Counter(), 0
    for path in reversed(layout.day_files()):
        if n >= sample:
            break
        for e in read_day(path):
            df.update(set(content_words(e.embed_text())))
        n += len(read_day(path))
    return df, n


@pytest.fixture
def mem(root, fake_embedder, fake_compressor):
    init(root)
    m = open_memory(root, embedder=fake_embedder, compressor=fake_compressor)
    for d in range(1, 8):
        for h in (9, 15):
            m.compress(
                f"Day {d} at {h}: the kafka consumer {d * h} lagged; Erin tuned the billing export {d}.", when=datetime(2026, 4, d, h, tzinfo=timezone.utc)
            )
    return m


def rows(layout) -> dict[str, tuple]:
    conn = sqlite3.connect(cache_path(layout))
    try:
        return {day: (sig, n, json.loads(counts)) for day, sig, n, counts in conn.execute("SELECT day, sig, entries, counts FROM day_words")}
    finally:
        conn.close()


def execute(layout, sql: str, *args) -> None:
    conn = sqlite3.connect(cache_path(layout))
    try:
        with conn:
            conn.execute(sql, args)
    finally:
        conn.close()


def test_cached_counts_equal_a_fresh_count_through_writes_and_hand_edits(mem, root):
    execute(mem.layout, "DELETE FROM day_words")
    assert recent_doc_freq(mem.layout, sample=6) == afresh(mem.layout, 6) and rows(mem.layout)
    assert recent_doc_freq(mem.layout, sample=6)[1] == 6  # three newest day files of two entries

    mem.compress("Day 7 again: Zanzibar mirror moved to the new bucket.", when=datetime(2026, 4, 7, 20, tzinfo=timezone.utc))
    got = recent_doc_freq(mem.layout, sample=6)
    assert got == afresh(mem.layout, 6) and got[0]["zanzibar"] == 1 and got[1] == 7

    day6 = root / "memory/index/2026-04-06.json"
    doc = json.loads(day6.read_text())
    doc["entries"][0]["summary"] = "Corrected by hand: the quokka queue, not kafka."
    day6.write_text(json.dumps(doc, indent=2))
    got = recent_doc_freq(mem.layout, sample=6)
    assert got == afresh(mem.layout, 6) and got[0]["quokka"] == 1
    assert sorted(rows(mem.layout)) == ["2026-04-05.json", "2026-04-06.json", "2026-04-07.json"]  # only the sample is kept


def test_a_damaged_store_or_record_is_counted_afresh(mem, root):
    recent_doc_freq(mem.layout)
    execute(mem.layout, "UPDATE day_words SET counts = '{' WHERE day = '2026-04-07.json'")
    assert recent_doc_freq(mem.layout) == afresh(mem.layout, 5000)
    mem.invalidate()
    for suffix in ("-wal", "-shm", ""):
        path = cache_path(mem.layout).with_name(cache_path(mem.layout).name + suffix)
        path.unlink(missing_ok=True)
    cache_path(mem.layout).write_bytes(b"not a database" * 100)
    assert recent_doc_freq(mem.layout) == afresh(mem.layout, 5000)


def test_a_stale_record_under_the_same_name_is_not_trusted(mem, root):
    """A kept count whose stat no longer matches its file (a git checkout, a restore) is recounted."""
    recent_doc_freq(mem.layout)
    sig = rows(mem.layout)["2026-04-07.json"][0]
    words, size, mtime = sig.split(":")
    execute(mem.layout, "UPDATE day_words SET sig = ?, counts = ? WHERE day = '2026-04-07.json'", f"{words}:{size}:{int(mtime) - 1}", '{"phantom": 2}')
    got = recent_doc_freq(mem.layout)
    assert "phantom" not in got[0] and got == afresh(mem.layout, 5000)


def test_counts_of_other_words_are_counted_afresh(mem, root):
    """Counts made by another `words` (text.WORDS_VERSION) are not reused even though every day
    file's stat still matches."""
    recent_doc_freq(mem.layout)
    for day, (sig, n, _) in rows(mem.layout).items():
        execute(
            mem.layout,
            "UPDATE day_words SET sig = ?, counts = ? WHERE day = ?",
            sig.replace(f"{WORDS_VERSION}:", f"{WORDS_VERSION - 1}:", 1),
            '{"phantom": 1}',
            day,
        )
    got = recent_doc_freq(mem.layout)
    assert "phantom" not in got[0] and got == afresh(mem.layout, 5000)
    assert all(sig.startswith(f"{WORDS_VERSION}:") for sig, _, _ in rows(mem.layout).values())  # counted again with today's words
