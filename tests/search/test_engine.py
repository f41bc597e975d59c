"""Search behaviour: the vector fallback with a real embedder (WordLlama), words and dates with the tests' fake."""

from datetime import datetime, timezone

import pytest

from memtool.app import open_memory
from memtool.scaffold import init
from memtool.search.engine import Query


@pytest.fixture
def mem(root, model_cache):
    init(root)
    m = open_memory(root, embedder="wordllama")
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
    strict = open_memory(root, embedder="wordllama", dense_fallback=False)
    assert strict.search(Query(text="children", limit=2, kinds=("entry",))).hits == []


@pytest.fixture
def dated(root):
    init(root)
    m = open_memory(root, dense_fallback=False)
    m.compress("Payment upgrade: the payment upgrade is done.", when=datetime(2023, 3, 2, 12, tzinfo=timezone.utc), session="march")
    m.compress("Payment upgrade planned for the billing team and the support rota.", when=datetime(2023, 6, 3, 12, tzinfo=timezone.utc), session="june")
    return m


def test_a_date_named_in_the_query_lifts_results_from_that_time(root, dated):
    plain = [h.source_session for h in dated.search(Query(text="payment upgrade", kinds=("entry",)))]
    assert plain[0] == "march"  # more word matches
    for phrase in ("on 3 June, 2023", "in June 2023", "on June 4, 2023"):  # inside, or a day off
        ranked = [h.source_session for h in dated.search(Query(text=f"payment upgrade {phrase}", kinds=("entry",)))]
        assert ranked[0] == "june", phrase
    off = open_memory(root, dense_fallback=False, date_boost=0.0, date_match=0.0)
    assert [h.source_session for h in off.search(Query(text="payment upgrade on 3 June, 2023", kinds=("entry",)))][0] == "march"


def test_a_date_alone_finds_what_was_written_then(root, dated):
    dated.compress("Garden: the tomatoes need staking.", when=datetime(2023, 6, 20, 12, tzinfo=timezone.utc), session="late-june")
    assert [h.source_session for h in dated.search(Query(text="what happened on 3 June 2023", kinds=("entry",)))] == ["june", "late-june"]
    assert [h.source_session for h in dated.search(Query(text="what did we do in March 2023?", kinds=("entry",)))] == ["march"]
    off = open_memory(root, dense_fallback=False, date_match=0.0)
    assert off.search(Query(text="what happened on 3 June 2023", kinds=("entry",))).hits == []


def test_a_named_date_brings_in_that_days_results_whose_words_differ(root):
    init(root)
    m = open_memory(root, dense_fallback=False, semantic_weight=0)  # words and dates alone
    m.compress("Nate: I got Joanna a stuffed animal to cheer her up.", when=datetime(2022, 5, 25, 15, tzinfo=timezone.utc), session="gift")
    for day in (2, 9, 16):  # the query's words, said on other days
        m.compress(
            f"Joanna and Nate did a lot of things together: {day} of them in 2022.", when=datetime(2022, 6, day, 15, tzinfo=timezone.utc), session=f"june-{day}"
        )
    query = Query(text="What did Nate do for Joanna on 25 May, 2022?", kinds=("entry",))
    assert m.search(query)[0].source_session == "gift"
    without = [h.source_session for h in open_memory(root, dense_fallback=False, semantic_weight=0, date_match=0.0).search(query)]
    assert without[0] != "gift"


def test_an_entry_matching_in_several_passages_rises(root):
    init(root)
    lines_a = ["Ana: the cache eviction bug is back."] + [f"Ana: unrelated note number {i} about lunch." for i in range(80)]
    lines_b = []
    for topic in ("warming", "eviction", "sizing"):  # one matching line per transcript chunk
        lines_b += [f"Ben: the cache {topic} again."] + [f"Ben: garden note {i}, tomatoes and roses." for i in range(40)]
    when = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    single = open_memory(root, dense_fallback=False, semantic_weight=0, sibling_weight=0.0)  # word matches alone
    single.compress("\n".join(lines_a), when=when, session="one-strong")
    single.compress("\n".join(lines_b), when=when, session="many")
    query = Query(text="cache eviction bug", kinds=("transcript",))
    best_only = [h.source_session for h in single.search(query)]
    summed = [h.source_session for h in open_memory(root, dense_fallback=False, semantic_weight=0, sibling_weight=1.0).search(query)]
    assert best_only[0] == "one-strong"
    assert summed[0] == "many"
