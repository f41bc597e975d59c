from datetime import datetime, timedelta, timezone

import pytest

from memtool.dates import mentioned_periods, parse_period, parse_when
from memtool.errors import BadInput

NOW = datetime(2026, 2, 11, 15, 30, tzinfo=timezone.utc)  # a Wednesday


@pytest.mark.parametrize(
    "text,start,end",
    [
        ("today", datetime(2026, 2, 11), datetime(2026, 2, 12)),
        ("yesterday", datetime(2026, 2, 10), datetime(2026, 2, 11)),
        ("2026-01-05", datetime(2026, 1, 5), datetime(2026, 1, 6)),
        ("18 May 2023", datetime(2023, 5, 18), datetime(2023, 5, 19)),
        ("May 18, 2023", datetime(2023, 5, 18), datetime(2023, 5, 19)),
        ("May 2023", datetime(2023, 5, 1), datetime(2023, 6, 1)),
        ("2023-12", datetime(2023, 12, 1), datetime(2024, 1, 1)),
        ("last month", datetime(2026, 1, 1), datetime(2026, 2, 1)),
        ("monday", datetime(2026, 2, 9), datetime(2026, 2, 10)),
        ("3 days ago", datetime(2026, 2, 8), datetime(2026, 2, 9)),
    ],
)
def test_periods(text, start, end):
    s, e = parse_period(text, NOW)
    assert (s.replace(tzinfo=None), e.replace(tzinfo=None)) == (start, end)


def test_last_week_runs_to_now():
    s, e = parse_period("last week", NOW)
    assert s.replace(tzinfo=None) == datetime(2026, 2, 4)
    assert e > NOW


def test_locomo_style_time():
    assert parse_when("1:47 pm on 18 May, 2023", NOW).replace(tzinfo=None) == datetime(2023, 5, 18, 13, 47)
    assert parse_when("12:05 am on 1 June, 2023", NOW).replace(tzinfo=None) == datetime(2023, 6, 1, 0, 5)


def test_iso_datetime_with_zone():
    dt = parse_when("2026-02-07T14:30:00Z", NOW)
    assert dt == datetime(2026, 2, 7, 14, 30, tzinfo=timezone.utc)
    assert parse_period("2026-02-07T14:30", NOW)[1] - dt.replace(tzinfo=NOW.tzinfo) == timedelta(seconds=1)


@pytest.mark.parametrize("bad", ["", "next blursday", "31 Foo 2023", "2023-13-45", "99 days from now"])
def test_bad_dates_name_the_accepted_forms(bad):
    with pytest.raises(BadInput, match="cannot read the date"):
        parse_period(bad, NOW)


@pytest.mark.parametrize(
    "query,expected",
    [
        ("What did Maria start, as mentioned on 3 June, 2023?", [(datetime(2023, 6, 3), datetime(2023, 6, 4))]),
        ("the photo he shared in November 2022", [(datetime(2022, 11, 1), datetime(2022, 12, 1))]),
        ("dinner on May 3, 2023", [(datetime(2023, 5, 3), datetime(2023, 5, 4))]),
        ("beach trips in 2023", [(datetime(2023, 1, 1), datetime(2024, 1, 1))]),
        ("notes of 2026-01-05", [(datetime(2026, 1, 5), datetime(2026, 1, 6))]),
        ("what did we decide yesterday about auth", [(datetime(2026, 2, 10), datetime(2026, 2, 11))]),
        (
            "last week's deploy, and the 18 May 2023 outage",
            [(datetime(2026, 2, 4), NOW.replace(tzinfo=None) + timedelta(seconds=1)), (datetime(2023, 5, 18), datetime(2023, 5, 19))],
        ),
    ],
)
def test_mentioned_periods(query, expected):
    got = [(s.replace(tzinfo=None), e.replace(tzinfo=None)) for s, e in mentioned_periods(query, NOW)]
    assert got == expected


@pytest.mark.parametrize("query", ["May I deploy now?", "port 2023 is open", "31 February 2023", "the march of progress", "version 1.2 in prod"])
def test_no_period_where_no_date_is_named(query):
    assert mentioned_periods(query, NOW) == []
