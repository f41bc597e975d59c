"""Text utilities shared by the compressor, BM25 and the context packer."""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from functools import lru_cache
from itertools import groupby

# Bump when `words` or `content_words` split the same text differently: caches of counted words
# (table day_words of memory/.cache/memtool.sqlite) are counted afresh then.
WORDS_VERSION = 2

# A word is a run of letters and digits of any script; ' - . _ may join its parts ("don't",
# "v1.2.3", "foo_bar", "e-mail") but never start or end it. ASCII text takes this pattern: the same
# words as the Unicode one, three times faster.
WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_'\-\.]*[A-Za-z0-9]|[A-Za-z0-9]")
# Scripts written without spaces: Han (with 々〆〇), Hiragana, Katakana (full and half width).
# No segmenter runs offline, so a run of them becomes each character plus each pair of neighbours
# (`_spaceless_terms`), the usual n-gram indexing of CJK text: any character of a query matches,
# and a text holding the query's characters in the same order ranks first. Hangul is written with spaces.
SPACELESS = "\u3005-\u3007\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
LETTER = f"[^\\W_{SPACELESS}]"  # a letter or digit of a script written with spaces (a regex class)
_JOINERS = "_'-.\u200c\u200d"  # inside a word only (zero-width (non-)joiners: Persian, Indic scripts)
# Where the BMP's combining marks are (Unicode 14/15): vowel signs of Indic and Southeast Asian
# scripts, Hebrew and Arabic points, accents NFC cannot compose. Marks outside the BMP are left out.
_MARK_SPANS = ((0x0300, 0x2100), (0x2C00, 0x2E00), (0x3000, 0x3100), (0xA600, 0xAC00), (0xFB00, 0xFB20), (0xFE00, 0xFE30))
# Offline token count (`count_tokens`): one token per piece of a word plus one per other character
# that is not white space. ASCII letters go in pieces of up to 4, digits of up to 3, letters of the
# Russian alphabet (Russian, Ukrainian, Bulgarian, Serbian) in pieces of up to 2; any other character
# is a token. Measured against three tokenizers (docs/benchmarks.md "Token counts"): against Llama-2's and
# GPT-4's no other script is counted higher than English is, and most are counted low.
TOKEN_PIECE_RE = re.compile(r"[A-Za-z]{1,4}|\d{1,3}|[^\sA-Za-z\d]")
# Sentences of ASCII text: after . ! ? (and closing quotes or brackets, which the split drops) and
# white space, before a capital or a digit; at a blank line, a list item or a "label:" line.
SENTENCE_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n{2,}|\n(?=\s*[-*#>]|\s*\w+:\s)")
# The same for text of any script (`sentence_end_re`, for `split_sentences`): a full stop of a script written with spaces
# (. ! ? … and ؟ ۔ । ॥ ։ ።; a Greek question mark ; after a Greek letter), with the quotes and
# brackets that close it, ends a sentence before white space and a word that does not start
# lower-case (a capital of any cased script, a digit, a letter of a caseless script: checked in code
# on group 1); 。！？ end one with no space needed; the line rules are SENTENCE_RE's. A match ends
# where the next sentence may start: closing quotes stay with their sentence.
_CLOSERS = "\"')\\]\u2019\u201d\u00bb\u203a\u300d\u300f\uff09\uff3d\u3011\u3015\u3009\u300b"  # ' " ) ] ’ ” » › 」 』 ） ］ 】 〕 〉 》
_OPENERS = "\"'(\\[\u2018\u201c\u201e\u00ab\u2039\u300c\u300e\uff08\uff3b\u3010\u3014\u3008\u300a\u00bf\u00a1"  # ‘ “ „ « ‹ 「 『 （ ［ 【 〔 〈 《 ¿ ¡

# Speaker labels of chat transcripts ("User: ..."): they say who spoke, not what about.
SPEAKER_ROLES = frozenset("user assistant human ai system tool model".split())

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


@lru_cache(maxsize=1)
def sentence_end_re() -> re.Pattern:
    """Sentence ends in text of any script (the rules above _CLOSERS), compiled on first use (~2.5 ms;
    a search never splits sentences)."""
    return re.compile(
        f"(?:[.!?\u2026\u061f\u06d4\u0964\u0965\u0589\u1362]|(?<=[\u0370-\u03ff\u1f00-\u1fff]);)[{_CLOSERS}]*(?=\\s+[{_OPENERS}]?(\\w))"
        f"|[\u3002\uff01\uff1f\uff61]+[{_CLOSERS}]*"  # 。！？｡
        r"|\n{2,}|\n(?=\s*[-*#>]|\s*\w+:\s)"
    )


@lru_cache(maxsize=1)
def spaceless_re() -> re.Pattern:
    """One character of a script written without spaces; compiled on first use (~5 ms: the class spans
    the CJK extension planes, and a cold search of ASCII text never needs it)."""
    return re.compile(f"[{SPACELESS}]")


# punctuation outside ASCII that is no letter, mark or joiner: it ends a word as a space does
_SEPARATORS = re.compile("[\u2026\u2013\u2014\u2018\u2019\u201c\u201d\u00a0]")  # a regex: str.translate is 30x slower


def words(text: str) -> list[str]:
    """Lowercase words in text order; a word starts and ends with a letter or digit (or ends with
    a combining mark). Text in a script without spaces gives characters and pairs (SPACELESS)."""
    if text.isascii():
        return WORD_RE.findall(text.lower())
    plain = _SEPARATORS.sub(" ", text)
    if plain.isascii():  # ASCII but for punctuation that only ends words (a compressed summary's "…")
        return WORD_RE.findall(plain.lower())
    text = unicodedata.normalize("NFC", text).lower()
    if spaceless_re().search(text) is None:  # most text that is not ASCII: one findall, no loop per word
        return _unicode_word_re().findall(text)
    out: list[str] = []
    for m in _unicode_word_or_run_re().finditer(text):
        out.extend(_spaceless_terms(m["run"]) if m["run"] else [m[0]])
    return out


@lru_cache(maxsize=1)
def _unicode_word_re() -> re.Pattern:
    """WORD_RE for any script but those without spaces: a letter, then letters and digits, combining
    marks (those of _MARK_SPANS: about 10 ms to list, on the first text that is not ASCII) and
    joiners, ending with no joiner."""
    marks = _ranges(c for lo, hi in _MARK_SPANS for c in range(lo, hi) if unicodedata.category(chr(c))[0] == "M")
    return re.compile(f"{LETTER}(?:[^\\W{SPACELESS}]|['\\-.\u200c\u200d{marks}])*(?<![{re.escape(_JOINERS)}])")


@lru_cache(maxsize=1)
def _unicode_word_or_run_re() -> re.Pattern:
    """A run of a script without spaces (group `run`) or a word of any other script."""
    return re.compile(f"(?P<run>[{SPACELESS}]+)|{_unicode_word_re().pattern}")


def _ranges(codes) -> str:
    """Code points (ascending) as the body of a regex class: 'a-z' for every run."""
    runs = [[c for _, c in run] for _, run in groupby(enumerate(codes), key=lambda p: p[1] - p[0])]  # a run: code - place is constant
    return "".join(re.escape(chr(r[0])) if len(r) == 1 else f"{re.escape(chr(r[0]))}-{re.escape(chr(r[-1]))}" for r in runs)


def _spaceless_terms(run: str) -> list[str]:
    """Each character of a run, each followed by the pair it starts: '数据库' -> 数 数据 据 据库 库."""
    return [run[0]] + [term for i in range(1, len(run)) for term in (run[i - 1 : i + 1], run[i])]


def tokenize(text: str) -> list[str]:
    """BM25 terms: lowercase words minus stopwords, Snowball-stemmed."""
    return terms(words(text))


# Each word met -> its stem, None for a stopword: a build meets each distinct word thousands of times
# and stems it once (a document whose words are all known is one pass in C). Cleared when it holds
# STEM_CACHE_MAX words, so a long-running watcher or MCP server stays small.
STEM_CACHE_MAX = 500_000
_stem_of: dict[str, str | None] = dict.fromkeys(STOPWORDS)


def terms(ws: list[str]) -> list[str]:
    """`tokenize` for words already split by `words`."""
    stem_of = _stem_of
    try:
        return [s for s in map(stem_of.__getitem__, ws) if s is not None]
    except KeyError:  # words not met before: stemmed in one call
        if len(stem_of) + len(ws) > STEM_CACHE_MAX:  # it may fill up: start again
            stem_of.clear()
            stem_of.update(dict.fromkeys(STOPWORDS))
        new = list(set(ws).difference(stem_of))
        stem_of.update(zip(new, stem_words(new)))
        return [s for s in map(stem_of.__getitem__, ws) if s is not None]


def content_words(text: str) -> list[str]:
    """Lowercase words that can carry meaning: no stopwords, no bare numbers, three letters or more;
    in a script without spaces the character pairs (a single character is too common to tell)."""
    return [w for w in words(text) if (len(w) > 2 or len(w) == 2 and w >= "\u3005" and spaceless_re().match(w)) and w not in STOPWORDS and not w.isdigit()]


def count_tokens(text: str) -> int:
    """Offline token estimate (see docs/benchmarks.md for its measured error against real tokenizers). ASCII text
    takes TOKEN_PIECE_RE as it always did; other text `_any_token_piece_re`, which counts its ASCII
    parts the same."""
    return len(TOKEN_PIECE_RE.findall(text) if text.isascii() else _any_token_piece_re().findall(text))


@lru_cache(maxsize=1)
def _any_token_piece_re() -> re.Pattern:
    """TOKEN_PIECE_RE plus letters of the Russian alphabet in pairs; compiled on first use (a cold
    search of ASCII text never needs it)."""
    return re.compile(r"[A-Za-z]{1,4}|\d{1,3}|[\u0410-\u044f\u0401\u0451]{1,2}|[^\sA-Za-z\d]")


def split_sentences(text: str) -> list[str]:
    """Sentences and blocks in text order, stripped. ASCII text is split by SENTENCE_RE as it always
    was; other text by sentence_end_re(), which cuts its ASCII parts at the same places (but keeps the
    closing quotes and brackets that SENTENCE_RE drops)."""
    parts = SENTENCE_RE.split(text) if text.isascii() else _split_any_script(text)
    return [p.strip() for p in parts if p and p.strip()]


def _split_any_script(text: str) -> list[str]:
    ends = [m.end() for m in sentence_end_re().finditer(text) if m.group(1) is None or _starts_sentence(m.group(1))]
    return [text[start:end] for start, end in zip([0, *ends], [*ends, len(text)])]


def _starts_sentence(ch: str) -> bool:
    """A word starting with `ch` may start a sentence: not lower-case (a capital of any script, a
    digit, a letter of a caseless script: Han, Arabic, Devanagari ...). Georgian is written in
    lower-case letters (Mkhedruli) without capitals: any of them may."""
    return ch != "_" and (not ch.islower() or "\u10d0" <= ch <= "\u10ff")


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Cut text at a word boundary so that count_tokens(result) <= max_tokens (ellipsis included)."""
    if count_tokens(text) <= max_tokens:
        return text
    if max_tokens <= 1:
        return ""
    # the longest prefix that fits with the ellipsis (a binary search: count_tokens never falls as a text grows)
    lo = bisect_right(range(len(text) + 1), max_tokens - 1, key=lambda n: count_tokens(text[:n])) - 1
    cut = text[:lo]
    space = cut.rfind(" ")
    if space > lo * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…"
