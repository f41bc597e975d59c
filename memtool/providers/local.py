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
MIN_KEYWORDS = 3
MIN_SUMMARY_TOKENS = 40
SPEAKER_RE = re.compile(r"^\s*(?:\*\*)?([A-Z][\w .'-]{0,30}?|user|assistant|human|ai|system|tool|model)(?:\*\*)?\s*:\s+(?=\S)", re.M)
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
PERSON_BEFORE = frozenset("ask asked tell told with and met call called thanks hi hey dear from by to for cc ping sister brother mom dad friend".split())
PERSON_AFTER = ("'s ", " said", " says", " told", " asked", " will ", " is ", " was ", " thinks", " wants", " mentioned", " leads", " and i", ": ")
TECH_WORDS = frozenset(
    "postgres postgresql mysql sqlite redis mongodb mongo kafka rabbitmq elasticsearch docker kubernetes k8s terraform ansible "
    "grafana prometheus datadog sentry stripe aws gcp azure github gitlab bitbucket jira slack linux macos windows react vue "
    "angular svelte node django flask fastapi rails spring nginx apache python java rust golang typescript javascript "
    "auth0 oauth jwt graphql rest grpc pytest jest vercel heroku netlify cloudflare openai gemini claude s3 ec2 lambda".split()
)
MID_CAP_RE = re.compile(r"(?<=[a-z,;] )([A-Z][A-Za-z0-9]+)")
NOT_PEOPLE = frozenset(
    "i the a an and but so it this that what when where why how yes no oh hey hi thanks wow yeah well "
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december today tomorrow yesterday user assistant system human ai let lets".split()
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
        decisions = _cue_sentences(sentences, DECISION_RE)
        actions = [a for a in _cue_sentences(sentences, ACTION_RE) if a not in decisions]

        if total <= SHORT_TEXT_TOKENS:  # a short note is kept whole; a few keywords suffice
            summary = " ".join(body.split())
            keywords = self._keywords(tf, people, MIN_KEYWORDS)
        else:
            summary = self._summary(sentences, tf, max(MIN_SUMMARY_TOKENS, budget // 2))
            used = count_tokens(summary) + sum(map(count_tokens, decisions + actions + people + systems + dates))
            keywords = self._keywords(tf, people, max(MIN_KEYWORDS, (budget - used) // 2))
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
        """The highest-scoring whole sentences that fit the budget, in their original order."""
        weight = {w: 1.0 + math.log(c) for w, c in tf.items()}
        scored = []
        seen: set[str] = set()
        for i, s in enumerate(sentences):
            cw = set(_content_words(s))
            if len(cw) < 3 or s in seen:
                continue
            seen.add(s)
            scored.append((sum(weight.get(w, 0.0) for w in cw) / math.sqrt(count_tokens(s) + 5), i, s))
        scored.sort(reverse=True)
        picked, used = [], 0
        for _, i, s in scored:
            cost = count_tokens(s)
            if used + cost <= budget:
                picked.append((i, s))
                used += cost
        if not picked:  # every sentence is longer than the budget: cut the best one
            best = scored[0][2] if scored else " ".join(sentences)
            return truncate_to_tokens(best, budget)
        return " ".join(s for _, s in sorted(picked))

    @staticmethod
    def _people(text: str, speakers: list[str]) -> list[str]:
        """Speakers, plus capitalised names seen in a person context ("ask Carol", "Carol said")."""
        names = list(dict.fromkeys(s for s in speakers if s.lower() not in NOT_PEOPLE))
        counts: Counter = Counter()
        for m in CAP_RE.finditer(text):
            cand = m.group(1)
            first = cand.split()[0].lower()
            if first in NOT_PEOPLE or first in TECH_WORDS or first in STOPWORDS:
                continue
            before = text[max(0, m.start() - 12) : m.start()].lower().split()
            after = text[m.end() : m.end() + 12].lower()
            if (before and before[-1] in PERSON_BEFORE) or after.startswith(PERSON_AFTER):
                counts[cand] += 1
        names.extend(n for n, _ in counts.most_common() if n not in names)
        return names[:8]

    @staticmethod
    def _systems(text: str, people: list[str]) -> list[str]:
        """Tools and named things: known tech words, identifiers, and capitalised words mid-sentence."""
        named = {w for p in people for w in p.split()}
        found: Counter = Counter(m for m in TECH_RE.findall(text) if len(m) > 2 and m.lower() not in STOPWORDS)
        for m in MID_CAP_RE.finditer(text):
            word = m.group(1)
            if word not in named and word.lower() not in NOT_PEOPLE and word.lower() not in STOPWORDS:
                found[word] += 1
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


def _cue_sentences(sentences: list[str], cue: re.Pattern, limit: int = 2, max_tokens: int = 30) -> list[str]:
    """Distinct sentences carrying a cue (decision, action item) with enough substance to stand alone."""
    out: list[str] = []
    for s in sentences:
        if cue.search(s) and len(set(_content_words(s))) >= 3:
            short = truncate_to_tokens(s, max_tokens)
            if short not in out:
                out.append(short)
    return out[:limit]


def _uniq(items) -> list[str]:
    seen: dict[str, str] = {}
    for it in items:
        seen.setdefault(it.lower(), it)
    return list(seen.values())
