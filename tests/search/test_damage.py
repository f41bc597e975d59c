"""The search cache is derived and written without fsync: a file of it cut off by a crash or a power
cut is noticed when the cache is opened, and the cache is rebuilt from the memory files."""

from datetime import datetime, timezone

import pytest

from memtool.app import open_memory
from memtool.scaffold import init
from memtool.search.engine import Query
from memtool.search.segment import DELTA_DIR


def snapshot(root):
    return {p: p.read_bytes() for p in (root / "memory").rglob("*") if p.is_file() and ".cache" not in p.parts}


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder)
    for i, t in enumerate(["billing Postgres index", "Kafka consumer lag", "dark mode React"]):
        m.compress(f"Alice: we worked on the {t} today.", when=datetime(2026, 2, 1 + i, 9, tzinfo=timezone.utc), session=f"s{i}")
    m.index()
    m.compress("Bob: the Kafka consumer lag came back.", when=datetime(2026, 2, 9, 9, tzinfo=timezone.utc), session="s9")
    m.index()  # a delta on top of the base
    return m


def ranked(root, fake_embedder):
    return [(h.id, h.text) for h in open_memory(root, embedder=fake_embedder).search(Query(text="Kafka consumer lag", limit=10))]


@pytest.mark.parametrize(
    "name",
    ["manifest.json", "vectors.npy", "ts.npy", "cues.npy", "docs.jsonl", "bm25/vocab.index.json", "bm25/data.csc.index.npy",
     f"{DELTA_DIR}/docs.jsonl", f"{DELTA_DIR}/bm25/indptr.csc.index.npy"],
)
def test_a_cut_off_cache_file_is_rebuilt(mem, root, fake_embedder, name):
    assert (root / "memory/.cache/search" / DELTA_DIR / "manifest.json").is_file()
    before, files = ranked(root, fake_embedder), snapshot(root)
    path = root / "memory/.cache/search" / name
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 3)])
    assert ranked(root, fake_embedder) == before
    assert snapshot(root) == files  # the memory itself is untouched
