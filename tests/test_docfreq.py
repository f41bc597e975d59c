"""The compressor's rarity hint: counted per day file, cached by stat, always equal to counting afresh."""

import json
from collections import Counter
from datetime import datetime, timezone

import pytest

from memtool.app import open_memory
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


def test_cached_counts_equal_a_fresh_count_through_writes_and_hand_edits(mem, root):
    cache = root / "memory/.cache/doc-freq.json"
    cache.unlink(missing_ok=True)
    assert recent_doc_freq(mem.layout, sample=6) == afresh(mem.layout, 6) and cache.is_file()
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

    days = json.loads(cache.read_text())["days"]
    assert sorted(days) == ["2026-04-05.json", "2026-04-06.json", "2026-04-07.json"]  # only the sample is kept


def test_a_damaged_cache_is_counted_afresh(mem, root):
    recent_doc_freq(mem.layout)
    cache = root / "memory/.cache/doc-freq.json"
    for bad in ("{", '{"version": 1, "days": {"2026-04-07.json": [[1, 2], "x", {}]}}', "[]"):
        cache.write_text(bad)
        assert recent_doc_freq(mem.layout) == afresh(mem.layout, 5000)


def test_a_stale_record_under_the_same_name_is_not_trusted(mem, root):
    """A cached count whose stat no longer matches its file (a git checkout, a restore) is recounted."""
    recent_doc_freq(mem.layout)
    cache = root / "memory/.cache/doc-freq.json"
    data = json.loads(cache.read_text())
    data["days"]["2026-04-07.json"][2] = {"phantom": 2}  # what the file held before, say
    data["days"]["2026-04-07.json"][0][1] -= 1
    cache.write_text(json.dumps(data))
    got = recent_doc_freq(mem.layout)
    assert "phantom" not in got[0] and got == afresh(mem.layout, 5000)


def test_a_cache_counted_with_other_words_is_counted_afresh(mem, root):
    """Counts of another `words` (an ASCII-only tokeniser wrote version 1 without a words field) are
    not reused even though every day file's stat still matches."""
    recent_doc_freq(mem.layout)
    cache = root / "memory/.cache/doc-freq.json"
    data = json.loads(cache.read_text())
    assert data["words"] == WORDS_VERSION
    for rec in data["days"].values():
        rec[2] = {"phantom": rec[1]}  # what another tokeniser counted, say
    for stale in ({"version": 1, "days": data["days"]}, {**data, "words": WORDS_VERSION - 1}):
        cache.write_text(json.dumps(stale))
        got = recent_doc_freq(mem.layout)
        assert "phantom" not in got[0] and got == afresh(mem.layout, 5000)
        assert json.loads(cache.read_text())["words"] == WORDS_VERSION  # rewritten with today's words
