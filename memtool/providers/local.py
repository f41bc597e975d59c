"""The default compressor: offline, extractive, deterministic.

It fills a token budget (a fraction of the transcript) with what retrieval needs later:
the most informative sentences as the summary (a sentence saying when something happened counts
three times), the distinctive words and names as keywords, people / systems / dates as entities,
and decision and action-item sentences by their cues.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Iterator

from memtool.models import Entities
from memtool.providers import Compressed, Hints
from memtool.providers.local_parts import parts
from memtool.providers.local_sentences import SentenceModel
from memtool.providers.local_session import fit, is_agent_session, read_session
from memtool.text import LETTER, SPACELESS, SPEAKER_ROLES, STOPWORDS, content_words, count_tokens, spaceless_re, split_sentences, stem_words, truncate_to_tokens
from memtool.transcripts import split_header

TARGET_RATIO = 11.2  # aim above the 10:1 the design promises
MAX_PEOPLE, MAX_SYSTEMS, MAX_DATES, MAX_TOPICS = 6, 5, 4, 2
MIN_BUDGET = 48  # tokens: short notes are kept almost whole
MAX_BUDGET = 600
SHORT_TEXT_TOKENS = 80  # a note this short is its own summary
MIN_KEYWORDS = 3
SUMMARY_SHARE = 0.1  # of the budget for the summary: about one sentence (the best one may take twice this)
FIRST_SENTENCE_TOKENS = 14  # the best sentence up to this long (or twice the budget) is always kept
SHORT_FIRST_SENTENCE_TOKENS = 24  # … up to this long when the budget is at its floor: a short session keeps a whole sentence
TYPICAL_SENTENCE_CAP = 32  # … or up to the text's median sentence length, at most this: technical sentences run long
DATED_SENTENCE_WEIGHT = 3.0  # a sentence saying when something happened ("I signed up for a pottery class yesterday") is what a later "when did…" asks about
FALLBACK_SENTENCE_TOKENS = 20  # when no sentence fits, the best whole one up to this (never a fragment)
CUE_SHARE = 0.25  # for decisions and action items together
KEYWORD_SHARE = 0.3  # guaranteed to keywords, the most useful field for finding a session again
MIN_CUE_TOKENS = 32
# The floors above say how long a kept sentence may be, set on English. count_tokens counts most
# non-ASCII letters as a token each and Russian ones in pairs (what real tokenizers spend), so a
# Greek sentence costs about 3 times the English of it and a Russian one 1.6 times (2.5 times when
# each letter counted, and it fitted no floor: a short Russian session was summed up as "Пер…").
# Against the floors a sentence is measured with letters of any script in pieces of up to four, as
# count_tokens takes ASCII letters (the same count for ASCII text), and a character of a script
# written without spaces as one token, as count_tokens does (Chinese: about the count of the English).
FLOOR_PIECE_RE = re.compile(rf"[^\W\d_{SPACELESS}]{{1,4}}|\d{{1,3}}|[^\s\w]|[_{SPACELESS}]")
# Conversational filler: frequent in chat, never what a later question is about.
FILLER = frozenset(
    "great awesome amazing wow thanks thank glad cool nice love loved lovely totally definitely sounds hope pretty super "
    "feel feeling fun lol haha hahaha omg yay sure absolutely exactly honestly literally actually seriously "
    "wonderful fantastic incredible beautiful good bad best better stuff kinda sorta gonna wanna gotta "
    "tell told say said know knew think thought want wanted make made take took look looks looked see saw "
    "keep kept let lets way time times day days today something someone anyone everyone "
    "shares shared sharing photo photos picture pictures pic pics happy excited proud glad sorry guess mean "
    "bit kind sort yes yeah nope hey hello bye talk talking chat catch soon later again always never ever".split()
)
# Names are words of any script; their case is checked in code (`re` has no class for upper-case
# letters). A speaker label is a role, or a name not starting lower-case ("Иван:", "张伟:"), before a
# colon and white space, or before the fullwidth colon of Chinese and Japanese text ("张伟：你好").
SPEAKER_RE = re.compile(r"^\s*(?:\*\*)?([^\W\d_][\w .'-]{0,30}?)(?:\*\*)?\s*(?::\s+|\uff1a\s*)(?=\S)", re.M)
WORD_RUN_RE = re.compile(r"\w+")
# "Label: text" lines that are not a speaker talking.
CUE_LABEL_RE = re.compile(
    r"^(?:decisions?|todo|to do|goal|goals|note|notes|summary|date|task|tasks|status|result|results|outcome|repository|repo|branch|"
    r"participants?|question|questions|answer|context|problem|issue|fix|cause|root cause|next steps?|follow[- ]?ups?|left|open items?|"
    r"action items?|warning|error|info|tip|example|update|edit|important|output|input|command|file|path|reviewer|owner|deadline|"
    r"why|what|how|when|where|pros|cons|option \w+|step \d+)\b",
    re.I,
)
MAX_NAME_WORDS = 3  # "Mary Ann Smith"
TECH_RE = re.compile(r"\b([A-Za-z]+[A-Z][A-Za-z]*|[A-Za-z][\w]*\.(?:js|py|ts|io|json|yaml|md|toml)|[A-Za-z]+\d+[A-Za-z\d]*|[a-z]+-[a-z]+(?:-[a-z]+)*)\b")
DATE_RE = re.compile(
    r"\b(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+(?:\d{1,2}(?!\d)(?:st|nd|rd|th)?(?:,?\s+\d{4})?|\d{4}\b)"
    r"|\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*(?:,?\s+\d{4})?"
    r"|\d{4}-\d{2}-\d{2}|(?:next|last|this)\s+(?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)"
    r"|(?:yesterday|tomorrow|tonight)|\b(?:19|20)\d{2}\b)",
    re.I,
)
DECISION_RE = re.compile(
    r"\b(decided|decide to|we'll use|we will use|going with|go with|chose|choose to|agreed|settled on|switch(?:ed)? to|instead of|opted)\b", re.I
)
ACTION_RE = re.compile(
    r"(^\s*[-*]\s*\[ \]|\bTODO\b|\bnext step|\baction item|\bneed to\b|\bhave to\b|\bplan(?:ning)? to\b"
    r"|\bwill\s+(?:add|fix|write|call|send|finish|start|try|check|update)|\bremember to\b|\bfollow up\b)",
    re.I,
)
WHEN_RE = re.compile(rf"{DATE_RE.pattern}|\b(?:ago|recently)\b", re.I)  # a time expression: the sentence tells of an event
HIGH_RE = re.compile(r"\b(critical|urgent|outage|incident|security|breach|data loss|production|deadline|asap|important)\b", re.I)
PERSON_BEFORE = frozenset("ask asked tell told with and met call called thanks hi hey dear from by to for cc ping sister brother mom dad friend".split())
PERSON_AFTER = ("'s ", " said", " says", " told", " asked", " will ", " is ", " was ", " thinks", " wants", " mentioned", " leads", " and i", ": ")
TECH_WORDS = frozenset(
    "postgres postgresql mysql sqlite redis mongodb mongo kafka rabbitmq elasticsearch docker kubernetes k8s terraform ansible "
    "grafana prometheus datadog sentry stripe aws gcp azure github gitlab bitbucket jira slack linux macos windows react vue "
    "angular svelte node django flask fastapi rails spring nginx apache python java rust golang typescript javascript "
    "auth0 oauth jwt graphql rest grpc pytest jest vercel heroku netlify cloudflare openai gemini claude s3 ec2 lambda".split()
)
MID_CAP_RE = re.compile(rf"(?<=\w |[,;] )({LETTER}{{2,}})")  # kept when after a lower-case letter or , ; and capitalised
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


class LocalCompressor:
    name = "local"
    model = "local-extractive-v1"

    def __init__(self, sentence_model: SentenceModel | None = None):
        self.sentence_model = sentence_model  # None: the shipped one (bench/entries.py --cv hands in one trained without the held-out files)

    @classmethod
    def from_settings(cls, settings, root: Path) -> "LocalCompressor":
        return cls()

    def compress(self, text: str, hints: Hints | None = None) -> Compressed:
        n, df = (hints.n_docs, hints.doc_freq) if hints else (0, {})

        def idf(word: str) -> float:  # inverse document frequency over the stored entries; 1.0 for an empty store
            return 1.0 + math.log((n + 1) / (df.get(word, 0) + 1))

        if not text.isascii():  # one spelling of "Zoë" (a decomposed ë is two code points)
            text = unicodedata.normalize("NFC", text)
        text = text.removeprefix("\ufeff")
        plain = split_header(text)[1]  # where the session ran is not something said in it
        total = count_tokens(plain)
        budget = max(MIN_BUDGET, min(MAX_BUDGET, int(total / TARGET_RATIO)))
        found = [m.group(1).strip() for m in SPEAKER_RE.finditer(text)]
        labels = _label_counts(text, found)
        ps = parts(text)
        turns = {"user", "assistant"} <= {p.role for p in ps if p.kind == "said"}  # a session with an agent, however short
        if (total > SHORT_TEXT_TOKENS or turns) and is_agent_session(ps, text, chat=CHAT in labels):
            reading = read_session(ps, text, budget, idf, self.sentence_model)  # a session with an agent: local_session reads it
            if total <= SHORT_TEXT_TOKENS:  # a short one is its own summary
                reading.summary = " ".join(" ".join(p.text for p in parts(plain) if p.kind == "said").split())
                reading.decisions = reading.decisions or _cue_sentences(split_sentences(reading.summary), DECISION_RE, total)  # "We decided to …" says so
            ents = reading.entities or Entities()  # read_session always names them
            ents.dates = _dates("\n\n".join(p.text for p in ps if p.kind == "said"))
            said = [reading.summary, *reading.decisions, *reading.action_items, *ents.people, *ents.systems, *ents.dates]
            reading.keywords = fit(reading.keywords, _keyword_budget(budget, said))
            tf = Counter(w for w in content_words(" ".join([reading.summary, *reading.keywords])) if w not in FILLER)
            reading.topics = _topics(tf) or reading.keywords[:2]
            reading.importance = _importance(text, reading.decisions)
            return reading
        text = plain
        speakers = [label for label in found if _is_speaker(label, labels)]
        body = SPEAKER_RE.sub(lambda m: "" if _is_speaker(m.group(1), labels) else m.group(0), text)
        sentences = split_sentences(body) or [body.strip()]
        tf = Counter(w for w in content_words(body) if w not in FILLER and not w[0].isdigit())  # '0.820', '25th': no topic
        people = _people(text, speakers)[:MAX_PEOPLE]
        systems = _systems(text, people)[:MAX_SYSTEMS]
        dates = _dates(body)
        topics = _topics(tf)
        if total <= SHORT_TEXT_TOKENS:  # a short note is kept whole; a few keywords suffice
            summary = " ".join(body.split())
            decisions = _cue_sentences(sentences, DECISION_RE, total)
            actions = [a for a in _cue_sentences(sentences, ACTION_RE, total) if a not in decisions]
            keywords = _keywords(tf, idf, people, MIN_KEYWORDS * 2)[:MIN_KEYWORDS]
        else:  # fill the budget by shares; keywords take what is left, and at least their share
            first_cap = SHORT_FIRST_SENTENCE_TOKENS if budget == MIN_BUDGET else FIRST_SENTENCE_TOKENS
            summary = _summary(sentences, tf, idf, int(budget * SUMMARY_SHARE), first_cap)
            cue_budget = max(MIN_CUE_TOKENS, int(budget * CUE_SHARE))
            decisions = _cue_sentences(sentences, DECISION_RE, cue_budget)  # decisions first, actions get the rest
            actions = [a for a in _cue_sentences(sentences, ACTION_RE, cue_budget - sum(map(count_tokens, decisions))) if a not in decisions]
            keyword_budget = _keyword_budget(budget, [summary, *decisions, *actions, *people, *systems, *dates, *topics])
            keywords = fit(_keywords(tf, idf, people, keyword_budget), keyword_budget)
        return Compressed(summary, keywords, topics or keywords[:2], decisions, actions, Entities(people, systems, dates), _importance(text, decisions))


def _keyword_budget(budget: int, fields: list[str]) -> int:
    """Keywords take what the other fields leave of the budget, and at least their share."""
    return max(int(budget * KEYWORD_SHARE), budget - sum(map(count_tokens, fields)))


def _summary(sentences: list[str], tf: Counter, idf, budget: int, first_cap: int = FIRST_SENTENCE_TOKENS) -> str:
    """The highest-scoring whole sentences that fit the budget, in their original order."""
    weight = {w: (1.0 + math.log(c)) * idf(w) for w, c in tf.items()}
    scored = []
    seen: set[str] = set()
    for i, s in enumerate(sentences):
        cw = set(content_words(s))
        if len(cw) < 3 or s in seen:
            continue
        seen.add(s)
        dated = DATED_SENTENCE_WEIGHT if WHEN_RE.search(s) else 1.0
        scored.append((dated * sum(weight.get(w, 0.0) for w in cw) / math.sqrt(count_tokens(s) + 5), i, s))
    scored.sort(reverse=True)
    lengths = sorted(_floor_tokens(s) for _, _, s in scored)
    typical = min(TYPICAL_SENTENCE_CAP, lengths[len(lengths) // 2]) if lengths else 0  # median: long in technical text
    place = {s: i for _, i, s in scored}  # in order of score
    picked = fit(place, budget, first=lambda s, cost: cost <= 2 * budget or _floor_tokens(s) <= max(first_cap, typical))  # a summary says something
    if not picked:  # no sentence fits: the best whole one up to twice the budget (or a floor), else cut the best
        whole = [s for _, _, s in scored if count_tokens(s) <= 2 * budget or _floor_tokens(s) <= FALLBACK_SENTENCE_TOKENS]
        best = whole[0] if whole else (scored[0][2] if scored else " ".join(sentences))
        return best if whole else truncate_to_tokens(best, budget)
    return " ".join(sorted(picked, key=place.__getitem__))


def _people(text: str, speakers: list[str]) -> list[str]:
    """Speakers, plus capitalised names seen in a person context ("ask Carol", "Carol said")."""
    names = list(dict.fromkeys(s for s in speakers if s.lower() not in NOT_PEOPLE))
    counts: Counter = Counter()
    for start, end, cand in _capitalised_names(text):
        first = cand.split()[0].lower()
        if first in NOT_PEOPLE or first in TECH_WORDS or first in STOPWORDS or CUE_LABEL_RE.match(cand):
            continue
        before = text[max(0, start - 12) : start].lower().split()
        after = text[end : end + 12].lower()
        if (before and before[-1] in PERSON_BEFORE) or after.startswith(PERSON_AFTER):
            counts[cand] += 1
    names.extend(n for n, _ in counts.most_common() if n not in names)
    return names[:8]


def _systems(text: str, people: list[str]) -> list[str]:
    """Tools and named things: known tech words, identifiers, and capitalised words mid-sentence."""
    named = {w for p in people for w in p.split()}
    found: Counter = Counter(m for m in TECH_RE.findall(text) if len(m) > 2 and m.lower() not in STOPWORDS)
    for m in MID_CAP_RE.finditer(text):
        word, prev = m.group(1), text[m.start() - 2]
        if not word[0].isupper() or not (prev.islower() or prev in ",;"):
            continue
        if word not in named and word.lower() not in NOT_PEOPLE and word.lower() not in STOPWORDS:
            found[word] += 1
    return [w for w, _ in found.most_common(6)]


def _keywords(tf: Counter, idf, people: list[str], limit_tokens: int) -> list[str]:
    """Words frequent here and rare in the rest of the store (tf-idf), one per stem, longer words favoured."""
    named = {w.lower() for p in people for w in p.split()}
    by_stem: dict[str, list] = {}
    for w, stem in zip(tf, stem_words(list(tf))):
        if w in named:
            continue
        group = by_stem.setdefault(stem, [0, w, 0])  # total count, best surface form, its count
        group[0] += tf[w]
        if tf[w] > group[2]:
            group[1], group[2] = w, tf[w]
    scored = sorted(
        (((1.0 + math.log(n)) * idf(w) * (1.0 + 0.05 * min(len(w), 10)), w) for n, w, _ in by_stem.values()),
        reverse=True,
    )
    return [w for _, w in scored][: max(limit_tokens, MIN_KEYWORDS)]


def _topics(tf: Counter) -> list[str]:
    """Up to MAX_TOPICS areas from a small lexicon, by how much of the text speaks of them."""
    votes: Counter = Counter()
    for w, c in tf.items():
        topic = _TOPIC_INDEX.get(w) or _TOPIC_INDEX.get(w.rstrip("s"))
        if topic:
            votes[topic] += c
    return [t for t, _ in votes.most_common(MAX_TOPICS)]


def _importance(text: str, decisions: list[str]) -> str:
    hits = len(HIGH_RE.findall(text))
    if hits >= 4:
        return "high"
    return "medium" if hits or decisions or count_tokens(text) >= 40 else "low"


def _floor_tokens(sentence: str) -> int:
    """The length of a sentence against the summary's floors (FLOOR_PIECE_RE): count_tokens for ASCII."""
    return count_tokens(sentence) if sentence.isascii() else len(FLOOR_PIECE_RE.findall(sentence))


def _is_speaker(label: str, labels: Counter) -> bool:
    """A role, or a name (not starting lower-case) that is not a cue word such as "Decision", "TODO",
    "Goal" or "Date" and labels lines more than once, or labels a line of a chat (`labels` holds the
    key CHAT when most lines of the text start with a label)."""
    label = label.strip()
    if label.lower() in SPEAKER_ROLES:
        return True
    if label[0].islower() or CUE_LABEL_RE.match(label):
        return False
    return labels[label] > 1 or CHAT in labels


CHAT = "\0chat"  # a key of the label counts: most lines of the text are "Name: text"


def _label_counts(text: str, found: list[str]) -> Counter:
    labels = Counter(label for label in found if not CUE_LABEL_RE.match(label))
    lines = sum(1 for line in text.splitlines() if line.strip())
    if lines and sum(labels.values()) * 2 >= lines:
        labels[CHAT] = 1
    return labels


def _capitalised_names(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, name) of each run of up to MAX_NAME_WORDS capitalised words apart by white space
    only: "José", "Zoë Martin", "Łódź", "Иван Петров". A capitalised word is a whole word of letters,
    upper-case then lower-case ("McDonald", "NASA", "R2D2" and "Carol_x" are not)."""
    run: list[re.Match] = []
    for m in [*WORD_RUN_RE.finditer(text), None]:  # None: the end, which closes the last run
        w = m.group() if m else ""
        capital = len(w) > 1 and w.isalpha() and w[0].isupper() and w[1:].islower() and spaceless_re().search(w) is None
        if run and (not capital or len(run) == MAX_NAME_WORDS or not text[run[-1].end() : m.start() if m else len(text)].isspace()):
            yield run[0].start(), run[-1].end(), text[run[0].start() : run[-1].end()]
            run = []
        if capital and m:
            run.append(m)


def _cue_sentences(sentences: list[str], cue: re.Pattern, budget: int) -> list[str]:
    """Up to two distinct whole sentences carrying a cue (decision, action item) with enough
    substance, within a token budget: a decision cut mid-way misleads."""
    found = (s for s in dict.fromkeys(sentences) if cue.search(s) and len(set(content_words(s))) >= 3)
    return fit(found, budget, limit=2)


def _dates(text: str) -> list[str]:
    """The dates the text states, the first spelling of each (case aside), at most MAX_DATES."""
    seen: dict[str, str] = {}
    for m in DATE_RE.finditer(text):
        seen.setdefault(m.group(0).lower(), m.group(0))
    return list(seen.values())[:MAX_DATES]
