"""The cache is rebuilt from the memory files when it is damaged (cut off, overwritten, a
table gone): the search answers as before, says so, and the memory itself is untouched."""

import sqlite3
from datetime import datetime, timezone

import pytest

from memtool.app import open_memory
from memtool.cache import cache_path
from memtool.memory import Session
from memtool.scaffold import init
from memtool.search.engine import Query


def snapshot(root):
    return {p: p.read_bytes() for p in (root / "memory").rglob("*") if p.is_file() and ".cache" not in p.parts}


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder)
    for i, t in enumerate(["billing Postgres index", "Kafka consumer lag", "dark mode React"]):
        m.compress(f"Alice: we worked on the {t} today.", when=datetime(2026, 2, 1 + i, 9, tzinfo=timezone.utc), session=f"s{i}")
    m.view()
    m.compress("Bob: the Kafka consumer lag came back.", when=datetime(2026, 2, 9, 9, tzinfo=timezone.utc), session="s9")
    m.view()
    return m


def ranked(root, fake_embedder):
    return [(h.id, h.text) for h in open_memory(root, embedder=fake_embedder).search(Query(text="Kafka consumer lag", limit=10))]


def cut(path):
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 3)])


def overwritten(path):
    data = bytearray(path.read_bytes())
    data[:100] = b"\xff" * 100
    path.write_bytes(bytes(data))


def dropped(path):
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE columns")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("damage", [cut, overwritten, dropped])
def test_a_damaged_store_is_rebuilt(mem, root, fake_embedder, damage):
    before, files = ranked(root, fake_embedder), snapshot(root)
    damage(cache_path(mem.layout))
    m = open_memory(root, embedder=fake_embedder)
    assert [(h.id, h.text) for h in m.search(Query(text="Kafka consumer lag", limit=10))] == before
    assert snapshot(root) == files  # the memory itself is untouched


def test_a_markdown_file_with_bad_bytes_is_searched_and_named(mem, root):
    """A person's log with one byte that is not UTF-8 stays searchable; the search says what it did."""
    (root / "memory/2026-02-03.md").write_bytes("# 2026-02-03\n- 09:00 café \xff quetzal sighting\n".encode("latin-1"))
    mem.invalidate()
    hits = mem.search(Query(text="quetzal sighting", kinds=("log",)))
    assert [h.kind for h in hits] == ["log"] and "\ufffd" in hits[0].text
    assert any("2026-02-03.md" in w and "not valid UTF-8" in w for w in hits.warnings)


def test_a_log_named_like_an_impossible_date_is_plain_markdown(mem, root):
    (root / "memory/2026-13-45.md").write_text("- 09:00 okapi notes\n", encoding="utf-8")
    mem.invalidate()
    assert [h.kind for h in mem.search(Query(text="okapi notes", kinds=("memory",)))] == ["memory"]


def test_an_embedder_that_is_down_leaves_word_search_working(root, fake_embedder):
    """A remote embedder unreachable: the entry is stored without a vector (compress warns), and search
    still answers from word matches, saying so, instead of failing."""
    from memtool.errors import ProviderError

    class Down(type(fake_embedder)):
        def embed_documents(self, texts):
            raise ProviderError("cannot reach the embedding service")

        def embed_query(self, text):
            raise ProviderError("cannot reach the embedding service")

    init(root)
    m = open_memory(root, embedder=Down())
    stored = m.compress_many([Session("Alice: the quokka webhook retries now back off exponentially.", when=datetime(2026, 2, 1, 9, tzinfo=timezone.utc))])
    e = stored.entries[0]
    assert any("embedding failed" in w for w in stored.warnings)
    assert any("no vector yet" in w for w in stored.warnings)  # compress updated the search cache: its chunk has none either
    hits = m.search(Query(text="quokka webhook retries"))
    assert [h.id for h in hits][:1] == [e.id]
    none = m.search(Query(text="zebra giraffe"))
    assert none.hits == []  # too few word matches: the vector fallback fails, words only
    assert any("word matches only" in w for w in none.warnings)
