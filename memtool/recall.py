"""Recall for a prompt: the stored entries relevant to what the user just asked, less those the
session was already sent (the agent hooks' `UserPromptSubmit` / `BeforeAgent`, memtool.hooks.session).

One search of the entries (and their kept transcripts) for the prompt; a hit counts when its score
reaches `min_score` (constants.RECALL_MIN_SCORE: above what a hit the vectors fill in without a word
match can score); a prompt of fewer than RECALL_MIN_PROMPT_WORDS content words
("yes", "go on") recalls nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memtool import constants as C
from memtool.memory import Memory
from memtool.search.engine import Hit, Query
from memtool.text import content_words


@dataclass
class Recall:
    hits: list[Hit] = field(default_factory=list)  # relevant, not sent before, best first
    more: int = 0  # relevant ones left out past the limit
    warnings: list[str] = field(default_factory=list)


def recall(mem: Memory, prompt: str, seen: set[str], limit: int = C.RECALL_LIMIT, min_score: float = C.RECALL_MIN_SCORE) -> Recall:
    if len(set(content_words(prompt))) < C.RECALL_MIN_PROMPT_WORDS:
        return Recall()
    found = mem.search(Query(text=prompt, limit=limit + len(seen) + C.RECALL_LIMIT, kinds=("entry", "transcript")))
    fresh = [h for h in found.hits if h.score >= min_score and h.id not in seen]
    return Recall(fresh[:limit], max(0, len(fresh) - limit), found.warnings)
