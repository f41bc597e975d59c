"""Search behaviour that depends on the real default embedder (wordllama)."""

from datetime import datetime, timezone

import pytest

from memtool.app import open_memory
from memtool.scaffold import init
from memtool.search.engine import Query


@pytest.fixture
def mem(root):
    init(root)
    m = open_memory(root)
    when = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    m.compress("Carol took the kids to the zoo and they loved the giraffes.", when=when, session="zoo")
    m.compress("We moved the billing database to Postgres and added an index on invoices.", when=when, session="db")
    m.compress("Dana fixed the flaky login test by waiting for the redirect.", when=when, session="test")
    return m


def test_vector_fallback_finds_what_shares_no_word(mem):
    hits = mem.search(Query(text="children", limit=2, kinds=("entry",)))
    assert hits and hits[0].source_session == "zoo"


def test_lexical_hits_always_rank_before_fallback_hits(mem):
    hits = mem.search(Query(text="Postgres", limit=3, kinds=("entry",)))
    assert [h.source_session for h in hits][0] == "db"
    assert len(hits) == 3  # filled in by the vectors
    assert hits[0].score > hits[1].score


def test_no_fallback_when_disabled(root, mem):
    strict = open_memory(root, dense_fallback=False)
    assert strict.search(Query(text="children", limit=2, kinds=("entry",))) == []
