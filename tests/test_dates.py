from datetime import datetime, timedelta, timezone

import pytest

from memtool.dates import parse_period, parse_when
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
