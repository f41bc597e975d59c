"""Text utilities shared by the compressor, BM25 and the context packer."""

from __future__ import annotations

import re
from functools import lru_cache

WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_'\-\.]*[A-Za-z0-9]|[A-Za-z0-9]")
# Offline token count: one token per word piece (~4 chars) plus one per punctuation mark.
TOKEN_PIECE_RE = re.compile(r"[A-Za-z]{1,4}|\d{1,3}|[^\sA-Za-z\d]")
SENTENCE_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n{2,}|\n(?=\s*[-*#>]|\s*\w+:\s)")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during
each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers
herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she
she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then there
there's these they they'd they'll they're they've this those through to too under until up very was wasn't we
we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's
with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves also just really yeah
yes oh ok okay hey hi thanks thank like get got go going gonna wanna lot lots much many things thing something
anything everything one would could will shall may might must us did does done""".split()
)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer  # PyStemmer: Snowball stemmer in C

    return Stemmer.Stemmer("english")


def stem_words(ws: list[str]) -> list[str]:
    return _stemmer().stemWords(ws) if ws else []


def words(text: str) -> list[str]:
    """Lowercase words; a word starts and ends with a letter or digit (WORD_RE), so nothing to strip."""
    return WORD_RE.findall(text.lower())


def tokenize(text: str) -> list[str]:
    """BM25 terms: lowercase words minus stopwords, Snowball-stemmed."""
    return terms(words(text))


def terms(ws: list[str]) -> list[str]:
    """`tokenize` for words already split by `words`."""
    return stem_words([w for w in ws if w not in STOPWORDS])


def content_words(text: str) -> list[str]:
    """Lowercase words that can carry meaning: no stopwords, no bare numbers, three letters or more."""
    return [w for w in words(text) if len(w) > 2 and w not in STOPWORDS and not w.isdigit()]


def count_tokens(text: str) -> int:
    """Offline token estimate (see README for its measured error against a real tokenizer)."""
    return len(TOKEN_PIECE_RE.findall(text))


def split_sentences(text: str) -> list[str]:
    parts = SENTENCE_RE.split(text)
    return [p.strip() for p in parts if p and p.strip()]


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Cut text at a word boundary so that count_tokens(result) <= max_tokens (ellipsis included)."""
    if count_tokens(text) <= max_tokens:
        return text
    if max_tokens <= 1:
        return ""
    lo, hi = 0, len(text)
    while lo < hi:  # binary search on characters
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid]) + 1 <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    space = cut.rfind(" ")
    if space > lo * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…"
