"""Dates people type: ISO dates and times, '18 May 2023', '1:47 pm on 18 May, 2023',
'today', 'yesterday', 'last week', '3 days ago', 'May 2023', weekday names.

`parse_period` returns the [start, end) interval a phrase names, in local time, timezone-aware.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memtool.errors import BadInput

MONTHS = {m: i + 1 for i, m in enumerate("january february march april may june july august september october november december".split())}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9
WEEKDAYS = {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
UNITS = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
UNITS.update(month=timedelta(days=30), year=timedelta(days=365))  # '3 months ago': the day 90 days back
DAY_SHIFT = {"yesterday": -1, "today": 0, "tomorrow": 1}
DAYS_UNTIL_NOW = {"this week": 6, "past week": 6, "last 7 days": 6, "last week": 7}  # from the start of the day this many days back
WEEK_UNTIL_NOW = {
    "last week": "the week before {0.day} {0:%B %Y}",
    "past week": "the week before {0.day} {0:%B %Y}",
    "this week": "the week of {0.day} {0:%B %Y}",
}
SHIFT = {"last": -1, "this": 0, "next": 1}
# `anchor`: how a period of up to this many days is named (a longer one by its year)
ANCHOR_LABELS = ((1, "{0.day} {0:%B %Y}"), (2, "weekend of {0.day} {0:%B %Y}"), (8, "week of {0.day} {0:%B %Y}"), (31, "{0:%B %Y}"))

_TIME = r"(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?(?::(?P<s>\d{2}))?\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)?"
_DMY = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?P<mon>[a-z]+)\.?,?\s+(?P<y>\d{4})"
_MDY = r"(?P<mon>[a-z]+)\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<y>\d{4})"
PATTERNS = [
    re.compile(rf"^{_TIME}\s+on\s+{_DMY}$"),  # LoCoMo: "1:47 pm on 18 May, 2023"
    re.compile(rf"^{_DMY}(?:,?\s+(?:at\s+)?{_TIME})?$"),
    re.compile(rf"^{_MDY}(?:,?\s+(?:at\s+)?{_TIME})?$"),
]
MONTH_YEAR = re.compile(r"^(?P<mon>[a-z]+)\.?,?\s+(?P<y>\d{4})$")
AGO = re.compile(r"^(?P<n>\d+|an?|one|two|three|four|five|six|seven)\s+(?P<unit>minute|hour|day|week|month|year)s?\s+ago$")
WORD_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


def _day(dt: datetime) -> tuple[datetime, datetime]:
    start = dt.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def _month(year: int, month: int, tz) -> tuple[datetime, datetime]:
    return datetime(year, month, 1, tzinfo=tz), datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=tz)


def _year(year: int, tz) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz)


def parse_period(text: str, now: datetime | None = None) -> tuple[datetime, datetime]:
    """The interval [start, end) that `text` names. Raises BadInput with the accepted forms."""
    try:
        return _parse(text, now or datetime.now().astimezone())
    except (ValueError, OverflowError, KeyError):  # KeyError: a month name MONTHS lacks
        raise BadInput(
            f"cannot read the date {text!r}. Use e.g. 2026-02-07, 2026-02-07T14:30, '18 May 2023', "
            "'1:47 pm on 18 May, 2023', today, yesterday, 'last week', '3 days ago', 'May 2023', monday."
        ) from None


def _parse(text: str, now: datetime) -> tuple[datetime, datetime]:
    text, tz = " ".join(text.lower().split()), now.tzinfo
    until_now = now + timedelta(seconds=1)  # the end of a period that runs up to now
    if text == "now":
        return now, until_now
    if text in DAY_SHIFT:
        return _day(now + timedelta(days=DAY_SHIFT[text]))
    if text in DAYS_UNTIL_NOW:
        return _day(now - timedelta(days=DAYS_UNTIL_NOW[text]))[0], until_now
    if text == "next week":
        start = _day(now + timedelta(days=7 - now.weekday()))[0]
        return start, start + timedelta(days=7)
    if text in ("last weekend", "this weekend", "next weekend"):
        saturday = now + timedelta(days=(5 - now.weekday()) % 7)
        start = _day(saturday + timedelta(days=7 * SHIFT[text.split()[0]]))[0]
        return start, start + timedelta(days=2)
    shift, _, unit = text.partition(" ")
    if shift in SHIFT and unit in ("month", "year"):  # 'this month' runs up to now, 'last month' is all of it
        n = SHIFT[shift]
        year, month0 = divmod(now.year * 12 + now.month - 1 + n, 12)
        start, end = _month(year, month0 + 1, tz) if unit == "month" else _year(now.year + n, tz)
        return (start, until_now) if n == 0 else (start, end)
    if text.removeprefix("last ") in WEEKDAYS:
        back = (now.weekday() - WEEKDAYS[text.removeprefix("last ")]) % 7 or 7
        return _day(now - timedelta(days=back))
    m = AGO.match(text)
    if m:
        unit = UNITS[m["unit"]]
        point = now - (int(m["n"]) if m["n"].isdigit() else WORD_NUM[m["n"]]) * unit
        return (point, point + unit) if unit < UNITS["day"] else _day(point)
    if re.match(r"^\d{4}-\d{2}-\d{2}$", text):
        return _day(datetime.fromisoformat(text).replace(tzinfo=tz))
    m = re.fullmatch(r"(\d{4})(?:-(\d{2}))?", text)  # a year, or a month of one
    if m:
        return _month(int(m[1]), int(m[2]), tz) if m[2] else _year(int(m[1]), tz)
    if re.match(r"^\d{4}-\d{2}-\d{2}[t ]\d", text):
        dt = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
        dt = dt if dt.tzinfo else dt.replace(tzinfo=tz)
        return dt, dt + timedelta(seconds=1)
    for pat in PATTERNS:
        m = pat.match(text)
        if m:
            h = int(m["h"] or 0)
            if m["ampm"] and h <= 12:  # 12 am is 0:00, 12 pm 12:00
                h = h % 12 + (12 if m["ampm"][0] == "p" else 0)
            dt = datetime(int(m["y"]), MONTHS[m["mon"]], int(m["d"]), h, int(m["mi"] or 0), int(m["s"] or 0), tzinfo=tz)
            return (dt, dt + timedelta(seconds=1)) if m["h"] else _day(dt)
    m = MONTH_YEAR.match(text)
    if m:
        return _month(int(m["y"]), MONTHS[m["mon"]], tz)
    raise ValueError(text)


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """A point in time for `compress --date`: the start of the named period (its exact time if given)."""
    return parse_period(text, now)[0]


def anchor(expression: str, when: datetime) -> str:
    """'yesterday' said on 8 May 2023 -> 'yesterday (7 May 2023)'. Absolute or unreadable dates are kept as they are."""
    if any(ch.isdigit() for ch in expression):
        return expression  # already absolute ("May 7", "2023-05-07", "2022")
    try:
        start, end = _parse(expression, when)
    except (ValueError, OverflowError, KeyError):
        return expression
    if expression.lower() in WEEK_UNTIL_NOW:  # 'last week' said on 25 May: the seven days up to it, not a calendar week
        return f"{expression} ({WEEK_UNTIL_NOW[expression.lower()].format(when)})"
    label = next((form for most, form in ANCHOR_LABELS if (end - start).days <= most), "{0:%Y}")
    return f"{expression} ({label.format(start)})"


_REL_UNIT = r"(?:week|month|year|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
RELATIVE_RE = re.compile(
    rf"\b(?:yesterday|tomorrow|today|tonight|(?:last|next|this|past)\s+{_REL_UNIT}"
    r"|(?:\d+|an?|one|two|three|four|five|six|seven)\s+(?:day|week|month|year)s?\s+ago)\b",
    re.I,
)


def anchor_text(text: str, when: datetime) -> str:
    """Every relative date in `text` followed by the date it meant when `text` was written."""
    return RELATIVE_RE.sub(lambda m: anchor(m.group(0), when), text)


_MON = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
MENTIONED_RE = re.compile(
    rf"\b(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MON}\.?,?\s+\d{{4}}|{_MON}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|{_MON}\.?,?\s+\d{{4}}|(?<=\bin\s)\d{{4}}|(?<=\bduring\s)\d{{4}})\b"
    rf"|{RELATIVE_RE.pattern}",
    re.I,
)


def mentioned_periods(text: str, now: datetime | None = None) -> list[tuple[datetime, datetime]]:
    """The periods a free-text query names: '18 May 2023', 'May 3, 2023', 'November 2022', 'in 2023',
    2023-05-18, and relative phrases ('yesterday', 'last week', '3 days ago') counted from `now`."""
    now = now or datetime.now().astimezone()
    out = []
    for m in MENTIONED_RE.finditer(text):
        try:
            out.append(_parse(m.group(0), now))
        except (ValueError, OverflowError, KeyError):
            continue  # "May 2023" with a month the table lacks, "31 February 2023": not a date
    return out
