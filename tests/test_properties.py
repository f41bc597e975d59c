"""Property-based tests (hypothesis) for the Markdown chunker, the entry parser, the date parser and
the printing of embedding vectors."""

from __future__ import annotations

import json
import string
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memtool import constants as C
from memtool.chunking import HEADING_RE, chunk_lines, chunk_markdown, uncommented
from memtool.dates import parse_period
from memtool.dayfile import DAY_RE
from memtool.errors import BadInput, StoreCorrupt
from memtool.models import Entities, Entry, iso
from memtool.store import parse_vector, vector_bytes
from memtool.text import count_tokens

EXAMPLES = 200
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- Markdown chunker -------------------------------------------------------------------------------

WORD = st.text(string.ascii_letters + string.digits + "-_'.,!?", min_size=1, max_size=12)
LINE = st.lists(WORD, min_size=1, max_size=12).map(" ".join)
PARAGRAPH = st.lists(LINE, min_size=1, max_size=6)
HEADING = st.tuples(st.integers(1, 6), st.lists(WORD, min_size=1, max_size=4).map(" ".join))
BLOCK = st.one_of(st.tuples(st.just("para"), PARAGRAPH), st.tuples(st.just("head"), HEADING))


def _norm(lines) -> list[str]:
    return [ln.strip() for ln in lines if ln.strip()]


@FAST
@given(st.lists(BLOCK, max_size=25), st.integers(8, 200))
def test_chunker_keeps_every_paragraph_line_once_in_order_under_its_heading(blocks, target):
    text_lines: list[str] = []
    expected: list[tuple[str, str]] = []  # (line, heading path) for each content line
    path: list[tuple[int, str]] = []
    for kind, value in blocks:
        if kind == "head":
            level, title = value
            text_lines += ["#" * level + " " + title, ""]
            path = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
        else:
            text_lines += [*value, ""]
            expected += [(ln, " > ".join(t for _, t in path)) for ln in value]
    text = "\n".join(text_lines)
    chunks = chunk_markdown(text, target)

    got = [(ln, ch.heading) for ch in chunks for ln in _norm(ch.text.splitlines())]
    assert got == [(ln.strip(), head) for ln, head in expected]
    lines = text.splitlines()
    for ch in chunks:
        assert lines[ch.line - 1].strip() == ch.text.splitlines()[0].strip()
        if count_tokens(ch.text) > target:  # only a single paragraph may exceed the target
            assert "\n\n" not in ch.text
    assert [ch.line for ch in chunks] == sorted({ch.line for ch in chunks})


@FAST
@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400)
    | st.lists(st.sampled_from(["```", "~~~", "# h", "## h2", "", "   ", "text line", "- item", "#no", "####### seven", "\t"]), max_size=30).map("\n".join)
)
@example("<!---->")  # a comment alone: blanked (memtool.chunking.uncommented), so no chunk
@example("a <!-- note --> b\n# h\n<!--\nhidden\n-->\nshown")
def test_chunker_never_invents_or_reorders_lines(text):
    """Every chunk line is a line of the text as rendered (HTML comments blanked, as the chunker
    reads it), in order; only heading lines are dropped (they become heading paths)."""
    chunks = chunk_markdown(text, 40)
    lines = uncommented(text).splitlines()
    source = _norm(lines)
    got = [ln for ch in chunks for ln in _norm(ch.text.splitlines())]
    it = iter(source)
    assert all(any(ln == s for s in it) for ln in got), "chunk lines are not a subsequence of the input"
    plain = [ln for ln in source if not HEADING_RE.match(ln)]
    assert len(plain) <= len(got) <= len(source)  # only heading lines may be dropped (they become paths)
    for ch in chunks:
        assert ch.text.strip() and lines[ch.line - 1].strip() == ch.text.splitlines()[0].strip()


@FAST
@given(st.lists(st.one_of(LINE, st.just(""), st.just("   ")), max_size=60), st.integers(5, 120), st.integers(0, 3))
def test_line_chunks_cover_every_line_in_order(lines, target, overlap):
    text = "\n".join(lines)
    chunks = chunk_lines(text, target, overlap)
    nonblank = [(no, ln) for no, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    seen: list[int] = []
    for ch in chunks:
        first = next(i for i, (no, _) in enumerate(nonblank) if no == ch.line)
        body = ch.text.splitlines()
        assert body == [ln for _, ln in nonblank[first : first + len(body)]]
        seen.extend(no for no, _ in nonblank[first : first + len(body)])
    assert sorted(set(seen)) == [no for no, _ in nonblank]
    assert [ch.line for ch in chunks] == sorted(set(ch.line for ch in chunks))  # strictly increasing: it terminates


# --- Entry parser -----------------------------------------------------------------------------------

TEXT = st.text(max_size=40)
STRS = st.lists(TEXT, max_size=4)
ENTRY_IDS = st.from_regex(r"\Actx-20[0-9]{6}-[0-9a-f]{8}\Z")
STAMPS = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2999, 12, 30), timezones=st.just(timezone.utc)).map(iso)

ENTRIES = st.builds(
    Entry,
    id=ENTRY_IDS,
    timestamp=STAMPS,
    summary=TEXT.filter(bool),
    keywords=STRS,
    topics=STRS,
    decisions=STRS,
    action_items=STRS,
    entities=st.builds(Entities, people=STRS, systems=STRS, dates=STRS),
    importance=st.sampled_from(C.IMPORTANCE_LEVELS),
    tokens_original=st.integers(0, 10**6),
    tokens_compressed=st.integers(0, 10**6),
    compression_ratio=TEXT,
    source_session=TEXT,
    model=TEXT,
    source=st.sampled_from(C.SOURCES),
    agent=TEXT,
    trusted=st.booleans(),
    pending=st.booleans(),
    pinned=st.booleans(),
    supersedes=st.lists(ENTRY_IDS, max_size=3),
    promoted_to=TEXT,
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


@FAST
@given(ENTRIES)
def test_entry_round_trips_through_json(entry):
    data = json.loads(json.dumps(entry.to_dict()))
    assert Entry.from_dict(data) == entry


def _check_parsed(data) -> None:
    try:
        e = Entry.from_dict(data)
    except StoreCorrupt:
        return
    # accepted: the fields the store relies on have their declared types, and it round-trips
    assert isinstance(e.id, str) and isinstance(e.summary, str) and isinstance(e.timestamp, str)
    assert DAY_RE.match(e.day), e.timestamp
    assert "/" not in e.id and "\\" not in e.id and e.id not in (".", "..")
    assert isinstance(e.trusted, bool) and isinstance(e.pending, bool) and isinstance(e.tokens_original, int)
    assert Entry.from_dict(json.loads(json.dumps(e.to_dict()))) == e


@FAST
@given(JSON)
def test_entry_parser_garbage_is_store_corrupt_or_a_sound_entry(data):
    _check_parsed(data)


@FAST
@given(ENTRIES, st.sampled_from(list(Entry.__dataclass_fields__)), JSON)
def test_entry_parser_one_bad_field(entry, key, value):
    data = entry.to_dict()
    data[key] = value
    _check_parsed(data)


@pytest.mark.parametrize("stamp", ["20200101", "2020-W01-1", "2020-01-01T00:00:00+99:00", 20200101, "2020"])
def test_entry_parser_refuses_timestamps_that_name_no_day_file(stamp):
    with pytest.raises(StoreCorrupt):
        Entry.from_dict({"id": "ctx-20200101-00000000", "timestamp": stamp, "summary": "s"})


@pytest.mark.parametrize("bad_id", ["../../etc/passwd", "a/b", 7, ".", "..", "x y", "ctx-1\n"])
def test_entry_parser_refuses_ids_that_are_not_file_names(bad_id):
    with pytest.raises(StoreCorrupt):
        Entry.from_dict({"id": bad_id, "timestamp": "2020-01-01T00:00:00.000Z", "summary": "s"})


# --- date parser ------------------------------------------------------------------------------------

TZ = st.integers(-12 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
NOW = st.builds(lambda d, tz: d.replace(tzinfo=tz), st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)), TZ)
MONTH_NAMES = ["january", "February", "mar", "Sept", "december", "May"]
PHRASES = st.one_of(
    st.sampled_from(
        [
            "now",
            "today",
            "yesterday",
            "this week",
            "last week",
            "past week",
            "last 7 days",
            "this month",
            "last month",
            "this year",
            "last year",
            "monday",
            "last friday",
            "Sunday",
        ]
    ),
    st.builds("{} {}s ago".format, st.integers(1, 500), st.sampled_from(["minute", "hour", "day", "week", "month", "year"])),
    st.builds("{} {} ago".format, st.sampled_from(["a", "an", "one", "two", "seven"]), st.sampled_from(["day", "week", "hour"])),
    st.builds("{} {}, {}".format, st.integers(1, 28), st.sampled_from(MONTH_NAMES), st.integers(1900, 2100)),
    st.builds(
        "{}:{:02d} pm on {} {}, {}".format, st.integers(1, 12), st.integers(0, 59), st.integers(1, 28), st.sampled_from(MONTH_NAMES), st.integers(1900, 2100)
    ),
    st.builds("{} {}".format, st.sampled_from(MONTH_NAMES), st.integers(1900, 2100)),
    st.builds("{:04d}-{:02d}".format, st.integers(1, 9998), st.integers(1, 12)),
)


def _sound(start: datetime, end: datetime) -> None:
    assert start.tzinfo is not None and end.tzinfo is not None
    assert start < end


@FAST
@given(
    st.text(max_size=40)
    | st.builds(
        " ".join,
        st.lists(
            st.sampled_from(
                ["last", "this", "ago", "on", "at", "pm", "am", "1:47", "18", "May", "2023", "9999", "0", "-", "T", "13:99", "99", "days", "a", "week"]
            ),
            max_size=6,
        ),
    ),
    NOW,
)
def test_parse_period_raises_only_bad_input(text, now):
    try:
        start, end = parse_period(text, now)
    except BadInput:
        return
    _sound(start, end)


@FAST
@given(PHRASES, NOW)
def test_parse_period_reads_every_documented_form(text, now):
    start, end = parse_period(text, now)
    _sound(start, end)
    if text in ("now", "today", "this week", "last week", "past week", "last 7 days", "this month", "this year"):
        assert start <= now < end  # periods that run up to now contain it
    elif text.endswith("ago") or text.startswith("last ") or text == "yesterday":
        assert start < now  # the past


@FAST
@given(st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 30)), NOW)
def test_parse_period_round_trips_iso_dates(day, now):
    start, end = parse_period(day.isoformat(), now)
    assert start.date() == day and start.tzinfo == now.tzinfo
    assert end - start == timedelta(days=1)


@FAST
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.none() | TZ), NOW)
def test_parse_period_round_trips_iso_datetimes(moment, now):
    moment = moment.replace(microsecond=0)
    start, end = parse_period(moment.isoformat(), now)
    expected = moment if moment.tzinfo else moment.replace(tzinfo=now.tzinfo)
    assert start == expected and end - start == timedelta(seconds=1)


def test_parse_period_names_the_accepted_forms():
    with pytest.raises(BadInput, match="2026-02-07"):
        parse_period("the day after the party")


# --- embedding vectors as JSON text -----------------------------------------------------------------


@FAST
@given(st.lists(st.floats(-1, 1, width=16), min_size=1, max_size=64), st.text(min_size=1, max_size=20), st.from_regex(r"[0-9a-f]{16}", fullmatch=True))
def test_a_vector_file_gives_back_its_float16_vector_and_header(values, model, content_hash):
    import numpy as np

    vec = np.array(values, dtype=np.float32)
    data = vector_bytes("ctx-20260302-ab12cd34", model, content_hash, vec)
    back = parse_vector(Path("x.vec"), data)
    assert (back["id"], back["model"], back["dim"], back["content_hash"]) == ("ctx-20260302-ab12cd34", model, len(values), content_hash)
    assert np.array_equal(back["embedding"], vec.astype(np.float16).astype(np.float32))
    assert len(data) - data.index(b"\n") - 1 == 2 * len(values)
