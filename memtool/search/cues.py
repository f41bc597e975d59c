"""Answer types: what a question asks for (a time, a duration) and which documents state one.

"When did we move to Postgres?" is answered by a passage that says when ("last week", "in March",
"2023"). Each document gets a small bit set at build time (`doc_cues`); a query that asks for a time
(`asked_cues`) lifts the word-matching documents that state one. A cue alone never creates a hit.
"""

from __future__ import annotations

import re

TIME = 1  # the text states a point in time
DURATION = 2  # the text states a length of time

_MONTHS = "january february march april june july august september october november december".split()  # not 'may'
_DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
TIME_WORDS = frozenset([*_MONTHS, *_DAYS, *(d + "s" for d in _DAYS), *"yesterday today tonight tomorrow recently ago weekend noon midnight pm p.m a.m".split()])
RELATIVE = frozenset("last next this past".split())  # 'last week', 'next summer'
RELATIVE_UNITS = frozenset("week month year night time summer winter spring fall autumn".split())
UNITS = frozenset("year years month months week weeks day days hour hours minute minutes".split())
COUNTS = frozenset("a an one two three four five six seven eight nine ten eleven twelve few several couple".split())
TRIGGERS = UNITS | RELATIVE_UNITS | {"am"}  # words whose neighbours decide
YEAR_RE = re.compile(r"(?:19|20)\d\d(?:-\d\d-\d\d)?$")  # 2022, 2024-03-05

# Question forms, not "what do I do when tests fail": the question word opens a clause.
ASKS_TIME_RE = re.compile(r"(?:^|[,;:.?!]\s*|\band\s+)when\b|\b(?:what|which)\s+(?:year|month|day|date|week|time)\b|\bhow\s+long\s+ago\b", re.I)
ASKS_DURATION_RE = re.compile(r"\bhow\s+long\b(?!\s+ago)|\bhow\s+many\s+(?:years?|months?|weeks?|days?|hours?|minutes?)\b", re.I)


def doc_cues(ws: list[str]) -> int:
    """The answer types a document states (a bit set of TIME and DURATION), from its `words`. Set
    lookups, not one large regex: this runs on every document of a build (and only a document holding
    a word of TRIGGERS has its words walked through)."""
    bits = TIME if not TIME_WORDS.isdisjoint(ws) or any(YEAR_RE.match(w) for w in ws if w[0] in "12") else 0
    if "since" in ws:
        bits |= DURATION
    if TRIGGERS.isdisjoint(ws):
        return bits
    for i, w in enumerate(ws):
        if w not in TRIGGERS or not i:
            continue
        before = ws[i - 2] if ws[i - 1] == "of" and i > 1 else ws[i - 1]  # 'a couple of years'
        if w in UNITS and (before.isdigit() or before in COUNTS):
            bits |= TIME if i + 1 < len(ws) and ws[i + 1] == "ago" else DURATION  # '3 years ago' is a point in time
        elif (w in RELATIVE_UNITS and before in RELATIVE) or (w == "am" and before.isdigit()):  # 'last week'; '9 am', not 'I am'
            bits |= TIME
    return bits


def asked_cues(query: str) -> int:
    """The answer types a query asks for; 0 when it asks for neither."""
    return (TIME if ASKS_TIME_RE.search(query) else 0) | (DURATION if ASKS_DURATION_RE.search(query) else 0)
