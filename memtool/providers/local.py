"""The default compressor: offline, extractive, deterministic.

It fills a token budget (a fraction of the transcript) with what retrieval needs later:
the most informative sentences as the summary, the distinctive words and names as keywords,
people / systems / dates as entities, and decision and action-item sentences by their cues.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

from memtool import constants as C
from memtool.models import Entities
from memtool.providers import Compressed
from memtool.text import STOPWORDS, count_tokens, split_sentences, truncate_to_tokens, words

TARGET_RATIO = 12  # aim above the 10:1 the design promises, leaving room for structure
MIN_BUDGET = 48  # tokens: short notes are kept almost whole
MAX_BUDGET = 600
SHORT_TEXT_TOKENS = 80  # a note this short is its own summary
SPEAKER_RE = re.compile(r"^\s*(?:\*\*)?([A-Z][\w .'-]{0,30}?)(?:\*\*)?\s*:\s+(?=\S)", re.M)
CAP_RE = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2})\b")
TECH_RE = re.compile(r"\b([A-Za-z]+[A-Z][A-Za-z]*|[A-Za-z][\w]*\.(?:js|py|ts|io|json|yaml|md|toml)|[A-Za-z]+\d+[A-Za-z\d]*|[a-z]+-[a-z]+(?:-[a-z]+)*)\b")
DATE_RE = re.compile(
    r"\b(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?"
    r"|\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*(?:,?\s+\d{4})?"
    r"|\d{4}-\d{2}-\d{2}|(?:next|last|this)\s+(?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)"
    r"|(?:yesterday|tomorrow|tonight)|\b(?:19|20)\d{2}\b)",
    re.I,
)
DECISION_RE = re.compile(r"\b(decided|decide to|we'll use|we will use|going with|go with|chose|choose to|agreed|settled on|switch(?:ed)? to|instead of|opted)\b", re.I)
ACTION_RE = re.compile(r"(^\s*[-*]\s*\[ \]|\bTODO\b|\bnext step|\baction item|\bneed to\b|\bhave to\b|\bplan(?:ning)? to\b|\bwill\s+(?:add|fix|write|call|send|finish|start|try|check|update)|\bremember to\b|\bfollow up\b)", re.I)
HIGH_RE = re.compile(r"\b(critical|urgent|outage|incident|security|breach|data loss|production|deadline|asap|important)\b", re.I)
NOT_PEOPLE = frozenset(
    "i the a an and but so it this that what when where why how yes no oh hey hi thanks wow yeah well "
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december today tomorrow yesterday user assistant system human ai".split()
)
TOPIC_LEXICON = {
    "security": "auth oauth token password secret security vulnerability encrypt permission login jwt",
    "infrastructure": "deploy server docker kubernetes cloud aws infra cluster nginx terraform ci pipeline",
    "database": "database postgres sql query schema migration index redis mongo sqlite table",
    "testing": "test tests pytest coverage bug fix regression failing flaky",
    "frontend": "ui css react html page component frontend layout button design",
    "performance": "performance latency slow fast speed cache memory profile optimize benchmark",
    "documentation": "docs readme documentation guide write writing",
    "family": "family kids children son daughter mom dad mother father parents husband wife sister brother",
    "health": "health doctor hospital sick exercise run running gym yoga therapy mental",
    "hobbies": "painting art music guitar piano book books reading hiking camping pottery photography game",
    "travel": "trip travel vacation flight beach city country visit road",
    "work": "job work career office boss team project meeting interview company business",
    "relationships": "friend friends community support group partner date dating wedding",
    "education": "school class course study studying degree university college learn learning",
}
_TOPIC_INDEX = {w: t for t, ws in TOPIC_LEXICON.items() for w in ws.split()}


def _content_words(text: str) -> list[str]:
    return [w for w in words(text) if len(w) > 2 and w not in STOPWORDS and not w.isdigit()]


class LocalCompressor:
    name = "local"
    model = "local-extractive-v1"

    @classmethod
    def from_settings(cls, settings, root: Path) -> "LocalCompressor":
        return cls()

    def compress(self, text: str) -> Compressed:
        speakers = [m.strip() for m in SPEAKER_RE.findall(text)]
        body = SPEAKER_RE.sub("", text)
        total = count_tokens(text)
        budget = max(MIN_BUDGET, min(MAX_BUDGET, total // TARGET_RATIO))
        sentences = split_sentences(body) or [body.strip()]
        tf = Counter(_content_words(body))
        people = self._people(text, speakers)
        systems = self._systems(text, people)
        dates = _uniq(m.group(0) for m in DATE_RE.finditer(body))[:8]
        decisions = [truncate_to_tokens(s, 40) for s in sentences if DECISION_RE.search(s)][:3]
        actions = [truncate_to_tokens(s, 30) for s in sentences if ACTION_RE.search(s)][:3]

        if total <= SHORT_TEXT_TOKENS:
            summary = " ".join(body.split())
        else:
            summary = self._summary(sentences, tf, max(24, budget * 2 // 5))
        used = count_tokens(summary) + sum(map(count_tokens, decisions + actions + people + systems + dates))
        keywords = self._keywords(tf, people, max(C.MAX_KEYWORDS, (budget - used) // 2))
        return Compressed(
            summary=summary,
            keywords=keywords,
            topics=self._topics(tf, keywords),
            decisions=decisions,
            action_items=actions,
            entities=Entities(people=people, systems=systems, dates=dates),
            importance=self._importance(text, decisions),
        )

    @staticmethod
    def _summary(sentences: list[str], tf: Counter, budget: int) -> str:
        weight = {w: 1.0 + math.log(c) for w, c in tf.items()}
        scored = []
        for i, s in enumerate(sentences):
            cw = set(_content_words(s))
            if len(cw) < 3:
                continue
            score = sum(weight.get(w, 0.0) for w in cw) / math.sqrt(count_tokens(s) + 5)
            scored.append((score, i, s))
        picked, used = [], 0
        for score, i, s in sorted(scored, reverse=True):
            cost = count_tokens(s)
            if used + cost > budget:
                if not picked:
                    picked.append((i, truncate_to_tokens(s, budget)))
                    break
                continue
            picked.append((i, s))
            used += cost
        return " ".join(s for _, s in sorted(picked)) or truncate_to_tokens(" ".join(sentences), budget)

    @staticmethod
    def _people(text: str, speakers: list[str]) -> list[str]:
        counts = Counter(m for m in CAP_RE.findall(text) if m.split()[0].lower() not in NOT_PEOPLE)
        names = list(dict.fromkeys(s for s in speakers if s.lower() not in NOT_PEOPLE))
        # capitalised words seen at least twice, never lowercased in the text, look like names
        lower_seen = set(words(text))
        for cand, n in counts.most_common():
            if n >= 2 and cand.lower() not in lower_seen and cand.lower() not in STOPWORDS and cand not in names:
                names.append(cand)
        return names[:8]

    @staticmethod
    def _systems(text: str, people: list[str]) -> list[str]:
        found = Counter(m for m in TECH_RE.findall(text) if len(m) > 2 and m not in people and not m.lower() in STOPWORDS)
        return [w for w, _ in found.most_common(6)]

    @staticmethod
    def _keywords(tf: Counter, people: list[str], limit: int) -> list[str]:
        named = {w.lower() for p in people for w in p.split()}
        scored = sorted(
            ((c * (1.0 + 0.15 * min(len(w), 10)), w) for w, c in tf.items() if w not in named),
            reverse=True,
        )
        return [w for _, w in scored[:limit]]

    @staticmethod
    def _topics(tf: Counter, keywords: list[str]) -> list[str]:
        votes: Counter = Counter()
        for w, c in tf.items():
            topic = _TOPIC_INDEX.get(w) or _TOPIC_INDEX.get(w.rstrip("s"))
            if topic:
                votes[topic] += c
        topics = [t for t, _ in votes.most_common(C.MAX_TOPICS)]
        return topics or keywords[:2]

    @staticmethod
    def _importance(text: str, decisions: list[str]) -> str:
        hits = len(HIGH_RE.findall(text))
        if hits >= 4:
            return "high"
        if hits or decisions:
            return "medium"
        return "low" if count_tokens(text) < 40 else "medium"


def _uniq(items) -> list[str]:
    seen: dict[str, str] = {}
    for it in items:
        seen.setdefault(it.lower(), it)
    return list(seen.values())
