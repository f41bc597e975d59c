"""Answer types: a question asking 'when' or 'how long' lifts the passages that state one."""

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtool.app import open_memory
from memtool.scaffold import init
from memtool.search import cues
from memtool.search.cues import DURATION, TIME, asked_cues, doc_cues
from memtool.search.engine import Query
from memtool.text import words


@pytest.mark.parametrize(
    "query, expected",
    [
        ("When did we move the billing database to Postgres?", TIME),
        ("Postgres migration: when was it done?", TIME),
        ("What year did Ana join the team?", TIME),
        ("How long ago was the outage?", TIME),
        ("How long has Nate had his turtles?", DURATION),
        ("How many years has she been painting?", DURATION),
        ("What do I do when the tests fail?", 0),  # 'when' inside a clause, not the question word
        ("Postgres migration notes", 0),
    ],
)
def test_what_a_query_asks_for(query, expected):
    assert asked_cues(query) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("We moved to Postgres last week.", TIME),
        ("The outage was on 2024-03-05.", TIME),
        ("I painted that lake sunrise in 2022!", TIME),
        ("Password rotation happens on Fridays at noon.", TIME),
        ("The deploy runs at 9:30 pm.", TIME),
        ("I've had them for 3 years now.", DURATION),
        ("Ten years ago I started running.", TIME),  # 'ago' makes it a point in time, not a length
        ("We moved to Postgres for the JSON support.", 0),
    ],
)
def test_what_a_document_states(text, expected):
    assert doc_cues(words(text)) == expected


@pytest.fixture
def gym(root):
    init(root)
    m = open_memory(root, dense_fallback=False, semantic_weight=0)  # word matches and cues alone
    when = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    m.compress("Ana: the gym near the office has a new gym floor and the gym coach is kind.", when=when, session="about-the-gym")
    m.compress("Ana: I finally went to the gym on Tuesday, my first session there.", when=when, session="went-on-tuesday")
    return m


def test_a_when_question_lifts_the_passage_that_says_when(root, gym):
    query = Query(text="When did Ana go to the gym?", kinds=("transcript",))
    assert [h.source_session for h in gym.search(query)][0] == "went-on-tuesday"
    off = open_memory(root, dense_fallback=False, semantic_weight=0, answer_cue_boost=0.0)
    assert [h.source_session for h in off.search(query)][0] == "about-the-gym"  # word matches alone prefer the other


def test_a_cue_alone_creates_no_hit(gym):
    assert gym.search(Query(text="When did it happen?", kinds=("transcript",))).hits == []


def _cues_walking_every_word(ws: list[str]) -> int:
    """`doc_cues` as it was: every word looked at, with or without a trigger among them."""
    bits = cues.TIME if not cues.TIME_WORDS.isdisjoint(ws) or any(cues.YEAR_RE.match(w) for w in ws if w[0] in "12") else 0
    bits |= cues.DURATION if "since" in ws else 0
    for i, w in enumerate(ws):
        if w in cues.TRIGGERS and i:
            before = ws[i - 2] if ws[i - 1] == "of" and i > 1 else ws[i - 1]
            if w in cues.UNITS and (before.isdigit() or before in cues.COUNTS):
                bits |= cues.TIME if i + 1 < len(ws) and ws[i + 1] == "ago" else cues.DURATION
            elif (w in cues.RELATIVE_UNITS and before in cues.RELATIVE) or (w == "am" and before.isdigit()):
                bits |= cues.TIME
    return bits


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from([*sorted(cues.TRIGGERS), *sorted(cues.COUNTS), *sorted(cues.RELATIVE), "of", "ago", "since", "3", "2022", "deploy", "may"]), max_size=12
    )
)
def test_doc_cues_are_those_of_a_walk_over_every_word(ws):
    """Skipping the walk when no trigger word is held changes no document's cues."""
    assert cues.doc_cues(ws) == _cues_walking_every_word(ws)
