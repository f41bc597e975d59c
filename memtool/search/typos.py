"""Typo tolerance: a query word that no document holds is also searched as the indexed words an edit
or two away ('postgress' -> 'postgres', 'deploymnet' -> 'deployment').

The cache (memtool/search/build.py) keeps its documents' words as written, since the BM25
vocabulary holds stems, which a misspelling does not stem like its word. It also keeps the whole
words of the WordLlama tokenizer's vocabulary (`dictionary`): a query word common
enough to be one of them was meant as written ('likely' is not 'lively' misspelled), so it is never
corrected. Matching uses rapidfuzz's optimal-string-alignment distance (a swap of two neighbours is
one edit), imported only when a query has an unknown word.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from memtool.text import STOPWORDS, stem_words, terms, words

TOKENIZER_FILE = "tokenizers/l2_supercat_tokenizer_config.json"  # inside the wordllama package
WORD_START = "\u2581"  # the tokenizer's mark for a piece that starts a word
SURFACE_MIN_LEN = 4  # shorter words are neither corrected nor offered as corrections
TYPO_MIN_LEN = 5  # a query word this long may be one edit off …
TYPO_TWO_EDITS_LEN = 8  # … and this long, two edits
TYPO_MAX_FIXES = 3  # indexed words searched for one unknown word, the most frequent first


@dataclass
class Terms:
    """A query's BM25 terms, and the indexed words searched for words no document holds."""

    terms: list[str]
    weights: list[float]
    fixes: dict[str, list[str]] = field(default_factory=dict)  # unknown query word -> indexed words searched instead


def fix_notes(fixes: dict[str, list[str]]) -> list[str]:
    """What a search tells its user about the words it searched instead."""
    return [f"no document has '{word}': also searched {', '.join(repr(f) for f in found)}" for word, found in fixes.items()]


def surface_words(ws: list[str]) -> set[str]:
    """The words of a document worth keeping for typo matching."""
    return {w for w in ws if len(w) >= SURFACE_MIN_LEN and w not in STOPWORDS and w.isalpha()}


@cache
def dictionary() -> frozenset[str]:
    """The words of TYPO_MIN_LEN+ letters that WordLlama's tokenizer (Llama 2's 32,000 pieces) holds
    whole: ~8,000 common words. Read on first use from the installed package, without importing it."""
    spec = find_spec("wordllama")
    folder = Path(next(iter(spec.submodule_search_locations or []))) if spec else None
    if folder is None or not (folder / TOKENIZER_FILE).is_file():
        return frozenset()  # no dictionary: every unknown word may be corrected
    vocab = json.loads((folder / TOKENIZER_FILE).read_text(encoding="utf-8"))["model"]["vocab"]
    return frozenset(t[1:].lower() for t in vocab if t.startswith(WORD_START) and len(t) > TYPO_MIN_LEN and t[1:].isalpha())


def max_edits(word: str) -> int:
    return 0 if len(word) < TYPO_MIN_LEN else 1 if len(word) < TYPO_TWO_EDITS_LEN else 2


def query_terms(index, text: str, fix_weight: float) -> Terms:
    """BM25 terms of `text`; with `fix_weight` > 0, each word of TYPO_MIN_LEN+ letters whose stem no
    document holds adds the stems of the closest indexed words (fewest edits, then most documents),
    each counted with `fix_weight`."""
    ws = words(text)
    named = terms(ws)
    out = Terms(named, [1.0] * len(named))
    if fix_weight <= 0 or not index.n:
        return out
    candidates = [w for w in dict.fromkeys(ws) if max_edits(w) and w.isalpha() and w not in STOPWORDS]
    stems = stem_words(candidates)
    held = index.postings_of(list(dict.fromkeys([*named, *stems])))  # the query's terms at once: one round trip on a server
    unknown = [w for w, stem in zip(candidates, stems) if not held[stem][0].size]
    unknown = unknown and [w for w in unknown if w not in dictionary()]  # the dictionary is read only when needed
    if not unknown:
        return out
    from rapidfuzz import process
    from rapidfuzz.distance import OSA

    vocab = index.surface_words()
    for w in unknown:
        found = process.extract(w, vocab, scorer=OSA.distance, score_cutoff=max_edits(w), limit=None)
        if not found:
            continue
        fewest = min(dist for _, dist, _ in found)
        closest = [word for word, dist, _ in found if dist == fewest]
        chosen: dict[str, str] = {}  # stem -> the first closest word that has it
        for stem, word in zip(stem_words(closest), closest):
            chosen.setdefault(stem, word)
        chosen = dict(sorted(chosen.items(), key=lambda p: -index.doc_freq(p[0]))[:TYPO_MAX_FIXES])
        out.fixes[w] = list(chosen.values())
        out.terms += chosen
        out.weights += [fix_weight] * len(chosen)
    return out
