"""The search cache follows the files incrementally: a small change builds a delta segment whose
results equal a full rebuild's."""

import json
import os
import shutil
from datetime import datetime, timezone

import pytest

from memtool.app import open_memory
from memtool.memory import Session
from tests.conftest import RecordingEmbedder
from memtool.scaffold import init
from memtool.search.engine import Query
from memtool.search.segment import DELTA_DIR, FRESH_DIR, SearchIndex


# Settings every store here is opened with (none: a delta's scores equal a full rebuild's).
EXACT: dict = {}


def when(day):
    return datetime(2026, 2, day, 9, tzinfo=timezone.utc)


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder, **EXACT)
    topics = ["billing Postgres index", "Kafka consumer lag", "dark mode React", "Auth0 login", "Terraform staging", "Grafana alerts"]
    m.compress_many([Session(text=f"Alice: we worked on the {t} today and wrote down what broke.", when=when(1 + i), session=f"s{i}") for i, t in enumerate(topics)])
    assert not (root / "memory/.cache/search" / DELTA_DIR).exists()  # stored at once: one base segment
    return m


def ranked(m, text, **kw):
    return [(h.id, h.kind, h.text) for h in m.search(Query(text=text, limit=10, **kw))]


def full_rebuild(root, fake_embedder):
    import shutil

    shutil.rmtree(root / "memory/.cache/search")
    return open_memory(root, embedder=fake_embedder, **EXACT)


def test_new_entry_goes_to_a_delta_and_matches_a_full_rebuild(mem, root, fake_embedder):
    base_id = json.loads((root / "memory/.cache/search/manifest.json").read_text())["build_id"]
    new = mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    got = ranked(mem, "Kafka consumer lag Terraform")
    assert (root / "memory/.cache/search" / DELTA_DIR / "manifest.json").is_file()
    assert json.loads((root / "memory/.cache/search/manifest.json").read_text())["build_id"] == base_id  # base kept
    assert new.id in [i for i, _, _ in got[:2]]
    assert got == ranked(full_rebuild(root, fake_embedder), "Kafka consumer lag Terraform")


def test_edited_and_removed_sources_are_masked(mem, root, fake_embedder):
    day = root / "memory/index/2026-02-02.json"
    data = json.loads(day.read_text())
    data["entries"][0]["summary"] = "Kafka consumer lag was fixed by raising max.poll.records to 500."
    day.write_text(json.dumps(data, indent=2))
    (root / "memory/index/2026-02-04.json").unlink()  # the Auth0 entry leaves (e.g. git pull)
    mem.invalidate()
    got = ranked(mem, "Kafka max.poll.records Auth0 login", kinds=("entry",))
    texts = [t for _, _, t in got]
    assert any("max.poll.records" in t for t in texts)
    assert not any("Auth0" in t for t in texts)
    assert got == ranked(full_rebuild(root, fake_embedder), "Kafka max.poll.records Auth0 login", kinds=("entry",))


def test_log_edit_only_reindexes_that_file(mem, root, fake_embedder):
    mem.log("Investigated the flaky webhook retries with Dana.")
    calls = fake_embedder.calls
    hits = ranked(mem, "flaky webhook retries")
    assert hits[0][1] == "log"
    manifest = json.loads((root / "memory/.cache/search" / DELTA_DIR / "manifest.json").read_text())
    assert manifest["n"] <= 3 and any(m.endswith(".md") for m in manifest["masked"]) is False  # a new file: nothing masked
    assert fake_embedder.calls - calls <= 1  # only the new log chunk was embedded


def test_large_change_falls_back_to_a_full_build(mem, root):
    from memtool.search import delta as idx

    before = json.loads((root / "memory/.cache/search/manifest.json").read_text())["build_id"]
    old_min = idx.DELTA_MIN_DOCS
    idx.DELTA_MIN_DOCS = 2
    try:
        mem.compress_many([Session(text=f"Carol: note {i} about the release checklist and canary deploys.", when=when(10 + i)) for i in range(5)])
        mem.search("release checklist")
    finally:
        idx.DELTA_MIN_DOCS = old_min
    assert json.loads((root / "memory/.cache/search/manifest.json").read_text())["build_id"] != before
    assert not (root / "memory/.cache/search" / DELTA_DIR).exists()


def test_postings_reader_scores_like_bm25s(mem, root):
    import bm25s
    import numpy as np

    from memtool.search.segment import Segment
    from memtool.text import tokenize

    seg = Segment(root / "memory/.cache/search")
    retriever = bm25s.BM25.load(str(seg.folder / "bm25"), mmap=True, show_progress=False)
    for query in ["Kafka consumer lag", "billing Postgres index index", "Terraform staging Grafana alerts", "nothing matches zzz"]:
        terms = seg.known(tokenize(query))
        expected = retriever.get_scores(terms) if terms else np.zeros(seg.n)
        assert np.allclose(seg.scores(terms), expected, rtol=1e-6, atol=1e-7)
        for t in terms:
            assert seg.doc_freq(t) == int((retriever.get_scores([t]) > 0).sum())


QUERIES = ["Kafka consumer lag", "dark mode React consumer", "Terraform lag lag", "billing Postgres index"]


def split_store(mem, root):
    """The fixture's base plus a delta: one new entry, and an edit that masks a day's base documents."""
    mem.compress("Bob: the Kafka consumer lag came back after the Terraform change, lag lag lag.", when=when(9), session="s9")
    day = root / "memory/index/2026-02-03.json"
    data = json.loads(day.read_text())
    data["entries"][0]["summary"] = "Dark mode React toggle: the consumer of the theme context re-renders twice."
    day.write_text(json.dumps(data, indent=2))
    mem.invalidate()
    split = mem.index()
    assert split.deltas and not split.alive.all()
    return split


def scored(ix):
    """Per query: (ref, text) of each matching document -> its BM25 score."""
    import numpy as np

    from memtool.text import tokenize

    out = []
    for query in QUERIES:
        a = ix.bm25_scores(tokenize(query))
        out.append({(d["ref"], d["text"]): a[i] for i, d in zip(np.flatnonzero(a), ix.docs(np.flatnonzero(a)))})
    return out


def test_delta_scores_equal_a_full_rebuilds(mem, root, fake_embedder, monkeypatch):
    """BM25 over base + delta is what one index over the live documents gives: the same IDF and the
    same average document length (each segment's own once skewed scores by a few percent)."""
    import numpy as np

    from memtool.search import segment

    monkeypatch.setattr(segment, "AVGDL_TOLERANCE", 0.0)  # every segment re-derived (a small store's are anyway)
    got = scored(split_store(mem, root))
    whole = full_rebuild(root, fake_embedder).index()
    assert not whole.deltas
    for g, w in zip(got, scored(whole)):
        assert g.keys() == w.keys() and w
        assert np.allclose([g[k] for k in w], list(w.values()), rtol=1e-5)


def test_a_segment_near_the_live_average_length_keeps_its_normalisation_within_the_bound(mem, root, monkeypatch):
    """Re-deriving a large base's postings costs milliseconds per term, so a segment whose average
    length is within AVGDL_TOLERANCE of the live documents' keeps its own: each score is then off
    by at most about that fraction. Checked here with every segment kept as it is."""
    import numpy as np

    from memtool.search import segment

    split = split_store(mem, root)
    _, avgdl = split._live_stats
    off = max(abs(seg.bm25_params[2] / avgdl - 1) for seg in split.segments)
    assert off > 0.01  # a small store: the averages differ, so the bound is exercised
    monkeypatch.setattr(segment, "AVGDL_TOLERANCE", 0.0)
    exact = scored(split)
    monkeypatch.setattr(segment, "AVGDL_TOLERANCE", 1.0)
    kept = scored(split)
    for e, k in zip(exact, kept):
        assert e.keys() == k.keys() and e
        ratio = np.array([k[key] / e[key] for key in e])
        assert np.all(np.abs(ratio - 1) <= off * (1 + off) + 1e-6)
    assert any(abs(k[key] / e[key] - 1) > 1e-4 for e, k in zip(exact, kept) for key in e)  # the kept path was taken


def base_id(root):
    return json.loads((root / "memory/.cache/search/manifest.json").read_text())["build_id"]


def marks(m, text):
    return {h.id: h.superseded_by for h in m.search(Query(text=text, limit=10, kinds=("entry",)))}


def test_an_entry_superseding_one_of_another_day_goes_to_a_delta(mem, root, fake_embedder):
    """A resumed session (memtool.dedupe) supersedes an entry of another day: the delta re-collects that
    day too, so the old entry is marked, without the full rebuild this once cost."""
    before = base_id(root)
    old = next(e for e in mem.store.iter_entries() if "Kafka" in e.summary)
    new = mem.compress("Bob: the Kafka consumer lag is fixed; we raised the partitions.", when=when(9), session="s9", supersedes=[old.id])
    got = marks(mem, "Kafka consumer lag")
    assert base_id(root) == before and (root / "memory/.cache/search" / DELTA_DIR / "manifest.json").is_file()
    assert got[old.id] == new.id and got[new.id] == ""
    assert mem.context("Kafka consumer lag").included.count(old.id) == 0
    assert got == marks(full_rebuild(root, fake_embedder), "Kafka consumer lag")


def test_removing_the_superseding_entry_clears_the_mark_through_a_delta(mem, root, fake_embedder):
    old = next(e for e in mem.store.iter_entries() if "Kafka" in e.summary)
    new = mem.compress("Bob: the Kafka consumer lag is fixed; we raised the partitions.", when=when(9), session="s9", supersedes=[old.id])
    mem = full_rebuild(root, fake_embedder)
    assert marks(mem, "Kafka consumer lag")[old.id] == new.id  # a base that holds the mark
    before = base_id(root)
    (root / "memory/index" / f"{new.day}.json").unlink()  # the newer entry leaves (a git checkout)
    mem.invalidate()
    got = marks(mem, "Kafka consumer lag")
    assert base_id(root) == before and new.id not in got and got[old.id] == ""
    assert got == marks(full_rebuild(root, fake_embedder), "Kafka consumer lag")


def test_an_edited_superseded_entry_keeps_its_mark_through_a_delta(mem, root, fake_embedder):
    old = next(e for e in mem.store.iter_entries() if "Kafka" in e.summary)
    new = mem.compress("Bob: the Kafka consumer lag is fixed; we raised the partitions.", when=when(9), session="s9", supersedes=[old.id])
    mem = full_rebuild(root, fake_embedder)
    assert marks(mem, "Kafka consumer lag")[old.id] == new.id
    before = base_id(root)
    day = root / "memory/index" / f"{old.day}.json"
    data = json.loads(day.read_text())
    data["entries"][0]["summary"] = "Kafka consumer lag: first attempt, more consumers."  # a hand edit of the old entry
    day.write_text(json.dumps(data, indent=2))
    mem.invalidate()
    got = marks(mem, "Kafka consumer lag")
    assert base_id(root) == before and got[old.id] == new.id


def test_a_delta_masking_most_of_the_base_keeps_word_matches(root, fake_embedder):
    """Two sessions of one day: the first is the base, the second rewrites their day file, so the delta
    masks every base document. A word in every live document must still match (its IDF counted masked
    documents before, came out negative, and the search found nothing)."""
    init(root)
    m = open_memory(root, embedder=fake_embedder, dense_fallback=False, **EXACT)  # words only
    m.compress("Ana: the gym near the office has a new gym floor and the gym coach is kind.", when=when(1), session="about")
    m.compress("Ana: I finally went to the gym on Tuesday, my first session there.", when=when(1), session="went")
    assert m.index().deltas and not m.index().alive[: m.index().base.n].any()
    got = ranked(m, "When did Ana go to the gym?")
    assert {i for i, _, _ in got} == {e.id for e in m.store.iter_entries()}
    assert got == ranked(full_rebuild(root, fake_embedder), "When did Ana go to the gym?")


def test_compress_brings_the_search_cache_up_to_date(root):
    """The transcript's chunks are embedded when the session is stored, not by the next search."""
    init(root)
    emb = RecordingEmbedder()
    m = open_memory(root, embedder=emb, **EXACT)
    m.compress("Alice: the billing Postgres index is rebuilt nightly by a cron job on db-2.", when=when(1), session="a")
    m.compress("Bob: the Kafka consumer lag alarm now pages the on-call after ten minutes.", when=when(2), session="b")
    assert any("Kafka consumer lag alarm" in t for t in emb.texts)  # the chunk, embedded by compress
    embedded = len(emb.texts)
    fresh = open_memory(root, embedder=emb, **EXACT)  # a new process, as the next session's search
    assert ranked(fresh, "Kafka consumer lag")[0][1] in ("entry", "transcript")
    assert len(emb.texts) == embedded


def test_no_document_is_embedded_twice_across_deltas_and_the_full_build(root, monkeypatch):
    """Each fresh segment replaces the last one, each delta both; each takes the vectors of the ones it
    replaces, and so does the full build that finally folds them into the base."""
    from memtool.search import delta as idx

    init(root)
    emb = RecordingEmbedder()
    m = open_memory(root, embedder=emb, **EXACT)
    topics = ["billing Postgres index", "Kafka consumer lag", "dark mode React", "Auth0 login", "Terraform staging"]
    for i, t in enumerate(topics):
        m.compress(f"Alice: we worked on the {t} today and wrote down what broke.", when=when(1 + i), session=f"s{i}")
    assert len(m.index().deltas) == 2
    monkeypatch.setattr(idx, "FRESH_MIN_DOCS", 0)  # the next change is too large for a fresh segment …
    monkeypatch.setattr(idx, "FRESH_FRACTION", 0.0)
    m.compress("Bob: the Grafana alerts for disk usage fire too early.", when=when(9), session="s9")
    assert not (root / "memory/.cache/search" / FRESH_DIR).exists()  # … so a new delta holds every change
    monkeypatch.setattr(idx, "DELTA_MIN_DOCS", 2)  # and the next one too large for a delta: a full build
    m.compress("Carol: the Terraform plan for staging drifts every night.", when=when(10), session="s10")
    assert not (root / "memory/.cache/search" / DELTA_DIR).exists()
    assert sorted(emb.texts) == sorted(set(emb.texts)), "a text was embedded twice"
    # each session's one chunk, once: the entry's vector is made from it (memtool.session_vectors)
    assert len([t for t in emb.texts if "wrote down what broke" in t]) == len(topics)


def test_an_open_index_keeps_its_build_while_newer_ones_replace_it(mem, root, fake_embedder):
    """A reader (an MCP call) holds the index it opened while compresses in another process swap in
    fresh segments, and then a full build replaces the folder: what it reads afterwards is still its build."""
    mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    folder = root / "memory/.cache/search"
    held, probe = SearchIndex(folder), SearchIndex(folder)  # opened together; only `probe` is read now
    assert len(held.deltas) == 1

    def reads(index):
        return index.docs(range(index.n)), index.group_keys, index.bm25_scores(["kafka"]).tolist(), index.surface_words()

    before = reads(probe)
    other = open_memory(root, embedder=fake_embedder, **EXACT)
    other.compress("Carol: Grafana alerts for the billing Postgres index now page the on-call.", when=when(9), session="s10")
    other.compress("Dan: the Auth0 login callback now retries once.", when=when(10), session="s11")
    assert len(SearchIndex(folder).deltas) == 2  # a fresh segment on the delta, then that one replaced
    full_rebuild(root, fake_embedder).index()  # and then the whole folder
    assert reads(held) == before


def test_an_index_opened_while_a_newer_build_is_swapped_in_is_all_of_one_build(mem, root, fake_embedder, monkeypatch):
    """The swap lands between reading the manifest and mapping the arrays: the segment is opened
    again, rather than pairing one build's manifest with another's arrays (or reporting damage)."""
    import memtool.search.segment as seg

    folder = root / "memory/.cache/search"
    mapped, swapped = seg._mapped, []

    def swap_once(path):
        if not swapped:
            swapped.append(path)
            other = open_memory(root, embedder=fake_embedder, **EXACT)
            other.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
            shutil.rmtree(folder)
            other.index()  # a full build, one more entry: every array is longer
        return mapped(path)

    before = json.loads((folder / "manifest.json").read_text())
    monkeypatch.setattr(seg, "_mapped", swap_once)
    index = SearchIndex(folder)
    after = json.loads((folder / "manifest.json").read_text())
    assert swapped and after["build_id"] != before["build_id"] and after["n"] > before["n"]
    assert index.base.meta["build_id"] == after["build_id"] and index.n == after["n"]
    assert len(index.docs(range(index.n))) == index.n


def manifest(root, name=""):
    path = root / "memory/.cache/search" / name / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else None


def test_later_sessions_go_to_a_fresh_segment_and_the_delta_is_kept(mem, root, fake_embedder):
    """The delta holds every change since the base; sessions stored after it was built go to a small
    fresh segment on it, rebuilt from the files changed since the delta only, so a compress does not
    rewrite every change since the base (that grew each compress: 113 -> 236 ms over 200 sessions)."""
    mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    delta = manifest(root, DELTA_DIR)
    mem.compress("Carol: Grafana alerts for the billing Postgres index now page the on-call.", when=when(10), session="s10")
    mem.compress("Dan: the Grafana alert thresholds for Postgres replicas were raised.", when=when(10), session="s11")
    fresh = manifest(root, FRESH_DIR)
    assert manifest(root, DELTA_DIR)["build_id"] == delta["build_id"] and fresh["base_id"] == delta["build_id"]
    sources = json.loads((root / "memory/.cache/search" / FRESH_DIR / "sources.json").read_text())
    assert [os.path.basename(s) for s in sources] == ["2026-02-10.json"] and fresh["n"] == 4  # two entries, a chunk each
    query = "Grafana alerts Postgres Kafka lag"
    got = ranked(mem, query)
    assert {i for i, _, _ in got} >= {e.id for e in mem.store.iter_entries() if e.source_session in ("s9", "s10", "s11")}
    assert got == ranked(full_rebuild(root, fake_embedder), query)


def test_scores_over_three_segments_equal_a_full_rebuilds(mem, root, fake_embedder, monkeypatch):
    """A fresh segment masking documents of both the delta and the base: BM25 over the three is
    what one index over the live documents gives."""
    import numpy as np

    from memtool.search import segment

    monkeypatch.setattr(segment, "AVGDL_TOLERANCE", 0.0)
    split_store(mem, root)  # a delta (one new day), then a fresh segment (the 2026-02-03 day edited)
    mem.compress("Erin: Kafka consumer lag alerts now page the on-call, lag again.", when=when(11), session="s12")
    for name, summary in (("2026-02-09", "Kafka: the consumer lag of the billing topic is gone."),  # held by the delta
                          ("2026-02-04", "Auth0 login: the consumer of the callback retries the lag check.")):  # by the base
        day = root / f"memory/index/{name}.json"
        data = json.loads(day.read_text())
        data["entries"][0]["summary"] = summary
        day.write_text(json.dumps(data, indent=2))
    mem.invalidate()
    split = mem.index()
    assert len(split.deltas) == 2
    nb, nd = split.base.n, split.deltas[0].n
    assert not split.alive[:nb].all() and not split.alive[nb : nb + nd].all() and split.alive[nb + nd :].all()
    got = scored(split)
    whole = full_rebuild(root, fake_embedder).index()
    for g, w in zip(got, scored(whole)):
        assert g.keys() == w.keys() and w
        assert np.allclose([g[k] for k in w], list(w.values()), rtol=1e-5)


def test_a_transcript_edited_in_place_is_seen_in_the_delta_and_the_fresh_segment(mem, root, fake_embedder):
    """A sync compares every kept transcript's stat with the one the segment holding its entry read:
    an edit to a transcript of the delta's or of the fresh segment's is collected again, into the
    fresh segment, without rebuilding the delta."""
    from memtool.sync import sync

    a = mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    b = mem.compress("Carol: Grafana alerts for the billing Postgres index now page the on-call.", when=when(10), session="s10")
    delta = manifest(root, DELTA_DIR)["build_id"]
    for entry, word in ((a, "Quokkadb"), (b, "Zephyrix"), (a, "Marimbel")):  # the last: a second edit of one
        with open(root / f"memory/transcripts/{entry.id}.md", "a", encoding="utf-8") as fh:
            fh.write(f"Later we moved the whole thing to {word}.\n")
        assert sync(open_memory(root, embedder=fake_embedder, **EXACT)).search_rebuilt
        assert ranked(open_memory(root, embedder=fake_embedder, **EXACT), word)[0][0] == entry.id
        assert manifest(root, DELTA_DIR)["build_id"] == delta
    query = "Quokkadb Zephyrix Marimbel Kafka Grafana"
    assert ranked(open_memory(root, embedder=fake_embedder, **EXACT), query) == ranked(full_rebuild(root, fake_embedder), query)


def test_a_search_does_not_wait_for_another_process_building_the_cache(root, fake_embedder):
    """A compress in another process (a session-end hook, detached) holds the build lock while it
    brings the cache up to date, which at 100,000 entries can be a full build of a minute or more.
    A search meanwhile answers from the cache as it was, says so, and does not keep that stale
    view: the next search, once the lock is free, sees the change."""
    import subprocess
    import sys

    init(root)
    m = open_memory(root, embedder=fake_embedder, **EXACT)
    m.compress("Alice: the billing Postgres index is rebuilt nightly by a cron job on db-2.", when=when(1), session="a")
    m.log("Quokkadb replaced the old Helm chart for the staging cluster.", when=when(2))
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from filelock import FileLock; lock = FileLock(sys.argv[1]); lock.acquire(); "
                               "print('held', flush=True); time.sleep(120)", str(root / "memory/.cache/build.lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert ranked(m, "Quokkadb Helm chart") == []  # the cache as it was: the log is not in it yet
        assert holder.poll() is None  # answered while the lock was still held
        assert any("being updated by another memtool process" in w for w in m.warnings)
    finally:
        holder.kill()
        holder.wait()
    got = ranked(m, "Quokkadb Helm chart")
    assert got and got[0][1] == "log" and not m.warnings


def test_a_moved_store_keeps_its_search_cache(mem, root, fake_embedder):
    """The cache names its source files by their path under the memory root: a project folder moved
    or renamed (its memory/.cache with it) is searched without a rebuild of any segment."""
    mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    mem.compress("Carol: Grafana alerts for the billing Postgres index now page the on-call.", when=when(10), session="s10")
    before = [manifest(root, name)["build_id"] for name in ("", DELTA_DIR, FRESH_DIR)]
    query = "Kafka consumer lag Grafana Postgres"
    got = ranked(mem, query)
    moved = root.parent / "renamed"
    shutil.move(root, moved)
    m = open_memory(moved, embedder=fake_embedder, **EXACT)
    assert ranked(m, query) == got
    assert [manifest(moved, name)["build_id"] for name in ("", DELTA_DIR, FRESH_DIR)] == before
    m.compress("Dan: the Auth0 login callback now retries once.", when=when(11), session="s11")  # and it goes on from there
    assert manifest(moved, DELTA_DIR)["build_id"] == before[1] and ranked(m, "Auth0 login callback")


def test_the_sync_after_a_compress_builds_nothing_when_every_transcript_is_as_read(mem, root, fake_embedder):
    """A compress stamps the cache without the transcripts' digest (it stats no transcript); the sync
    that follows (`memory watch` runs one) finds every transcript as the segment holding its entry
    read it and only completes the stamp, instead of rebuilding the fresh segment."""
    from memtool.sync import sync

    mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    new = mem.compress("Carol: Grafana alerts for the billing Postgres index now page the on-call.", when=when(10), session="s10")
    before = [manifest(root, name)["build_id"] for name in ("", DELTA_DIR, FRESH_DIR)]
    stamp = root / "memory/.cache/search/fingerprint"
    assert len(stamp.read_text().split("\n")) == 1
    assert not sync(open_memory(root, embedder=fake_embedder, **EXACT)).search_rebuilt
    assert [manifest(root, name)["build_id"] for name in ("", DELTA_DIR, FRESH_DIR)] == before
    assert len(stamp.read_text().split("\n")) == 2  # fingerprint and digest: the next sync has nothing to do
    assert not sync(open_memory(root, embedder=fake_embedder, **EXACT)).search_rebuilt
    with open(root / f"memory/transcripts/{new.id}.md", "a", encoding="utf-8") as fh:  # but an edit still shows
        fh.write("Later we moved the alerts to Quokkadb.\n")
    assert sync(open_memory(root, embedder=fake_embedder, **EXACT)).search_rebuilt
    assert manifest(root, FRESH_DIR)["build_id"] != before[2]
    assert ranked(open_memory(root, embedder=fake_embedder, **EXACT), "Quokkadb")[0][0] == new.id
