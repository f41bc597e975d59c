"""The offline compressor's reading of a coding-agent session (memtool.providers.local uses it when a
transcript has user / assistant turns): summary, decisions, open items, people, systems, keywords.

Everything is read from what people said (local_parts.parts, kind "said"): tool calls give systems
(the programs a command ran) and files, never decisions; code, tool output and thinking are skipped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Callable, Iterable

from memtool.models import Entities
from memtool.providers import Compressed
from memtool.providers.local_parts import Part, Stated, stated
from memtool.providers.local_sentences import SentenceModel, embed, features, picks, sentences, shipped_model
from memtool.providers.tech import NOT_SYSTEMS, clients, command_systems, known_system, mentions, packages
from memtool.text import STOPWORDS, content_words, count_tokens, split_sentences

MAX_DECISIONS, MAX_ACTIONS = 6, 6
MAX_ITEM_TOKENS = 48  # an item longer than this is cut at a clause
MIN_ITEM_TOKENS = 125  # a short note's stated decisions, and its open items (lists, "TODO:" lines), are what it is for
MIN_GUESSED_ITEM_TOKENS = 100  # ... and the floor of each when the items are read from the conversation
SHORT_ITEM_TOKENS = 20  # ... and one longer than this loses its bracketed asides
FIRST_SENTENCE_FLOOR = 40  # tokens the summary's first sentence may take whatever the budget
SUMMARY_SHARE = 0.45  # of the budget: the request, the outcome
ITEM_SHARE = 0.3  # decisions, and open items: each its own share, so neither crowds out the other
QUESTION_RE = re.compile(r"\?\s*$|^(?:should|could|couldn't|can|do|does|would|shall|want me|or|maybe|which|what|how|why|is|are)\b", re.I)
# A user's refusal stated as a rule: "Don't touch prod today.", "no, don't cache it", "let's not …".
REFUSAL_RE = re.compile(r"^(?:(?:no|nope|ok(?:ay)?|fine|agreed)\b[,.:!]?\s+)?(?:don'?t|do not|never|let'?s not|we won'?t|we will not|no need to)\s+\w", re.I)
CONDITION_RE = re.compile(r"\b(?:after|once|when|until|before|if|unless)\b[^,.;]*\b(?:is|are|was|were|gets?) (?:done|fixed|merged|pushed)\b", re.I)
# A note's cue label before a sentence: "Done: …", "Decision: …", "TODO: …", "Left (TODO): …".
CUE_LABEL_RE = re.compile(
    r"^(done|decision|decided|decisions|todo|to do|left|follow[- ]?ups?|next steps?|next|open|still open|action items?|note|notes|goal|outcome|result|"
    r"status|fixed|fix|change|changes)(?:\s*\([^)]*\))?\s*[:\-–]\s+(?=\S)",
    re.I,
)
OPEN_LABELS = frozenset("todo|to do|left|follow-up|followup|follow up|follow-ups|next step|next steps|next|open|still open|action item|action items".split("|"))
DONE_LABELS = frozenset("done fixed fix change changes outcome result".split())
LIST_ITEM_RE = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.+)$", re.M)
# Work asked of the agent in the session, not a choice: "Write the script", "Commit this and …".
REQUEST_CLAUSE_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|fine|agreed|good|great|thanks)[,.:!]?\s+)?(?:write|commit|push|check|look|show|explain|find|give|tell me|send|draft|"
    r"open the pr|fix it|run the tests|try)\b",
    re.I,
)
UNIT_VALUE_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|s|m|h|min|mi|gi|mib|gib|mb|gb|%)(?!\w)", re.I)  # "800ms", "2s", "768Mi"
# A setting given a value: "keep the limit at 512Mi", "raise the limit to 768Mi", "set prefetch to 100".
SETTING_RE = re.compile(
    r"\b(?:keep|set|raise|lower|bump|increase|decrease|reduce|leave|stay|pin|make)\b[^.;,]{0,30}?\b([a-z_][\w-]*)\s+(?:at|to|on)\s+[~>=<\s]*(v?\d[\w.]*\w|\d)",
    re.I,
)
DONE_RE = re.compile(
    r"^(?:done|fixed|added|pushed|committed|merged|reverted|removed|updated|created|ran|all \d+)\b|\b(?:is|are|was|were) (?:done|fixed|merged|pushed)\b", re.I
)
OUTCOME_RE = re.compile(
    r"\b(?:fixed|fix(?:es)?|root cause|caused by|now |committed|pushed|merged|opened|pass(?:es|ed)?|reproduced|added"
    r"|replaced|switched|rolled back|migrated|upgraded|reduced|dropped from|went from|cut)\b",
    re.I,
)
RESULT_RE = re.compile(
    r"\d\s?(?:->|→)\s?\d|\d\s?(?:ms|s|%|mib/s|mb/s|mi|gi|mb|gb)\s?(?:->|→|to|instead of)\s|\bfrom [\d.,]+\s?\S* to [\d.,]+|\b\d+ (?:tests? )?pass(?:ed|es)?\b",
    re.I,
)
PERSON_CONTEXT_BEFORE = frozenset("ask asked tell told with and ping pinged from by cc thanks for reviewer owner i'm im".split())
PERSON_CONTEXT_AFTER = re.compile(
    r"^(?:'s\b|’s\b| \(| said| says| asked| wants| will| can| needs| reviews?| signs?| writes?| owns?| decides?| moved| from"
    r"| in (?:finance|support|ops|platform)| is (?:on|out|off|the))"
)
# Companies and platforms, written like names: "Google", "Microsoft", "Mac" are no people.
ORGANISATIONS = frozenset("mac google microsoft apple amazon meta facebook netflix ibm intel nvidia mozilla shopify oracle samsung adobe salesforce".split())
AGENT_MODEL_RE = re.compile(r"^(?:Main )?[Mm]odel: ([\w.:/-]+) with ", re.M)  # the model the agent ran with, as aider's header states it
NAME_RE = re.compile(r"(?<![\w@./-])([A-Z][a-z]{1,15}(?: [A-Z][a-z]{1,15})?)(?![\w/-])")
AUTHOR_RE = re.compile(r"\b([A-Z][a-z]{1,15} [A-Z][a-z]{1,20})\s+<[^>\s]+@[^>\s]+>")
PARTICIPANT_RE = re.compile(r"^\s*(?:participants?|attendees|author|owner|reviewers?)\s*:\s*(.+)$", re.I | re.M)
SENTENCE_WORDS = frozenset(
    "the a an i we you it this that these those there here then now so but and or if when while after before also "
    "both each all some no not yes ok okay fine great nice good perfect thanks sure right hm hmm actually next done "
    "fixed added committed pushed reproduced open left still cause change changes options option decision decisions "
    "todo follow followup follow-up note notes summary task goal outcome status result results reviewer reviewers "
    "participants repository date branch cheers sounds let lets please could would should can will maybe".split()
)
MONTHS_DAYS = frozenset(
    "january february march april may june july august september october november december jan feb mar apr jun jul aug sep sept oct nov dec "
    "monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday".split()
)
MARKUP_WORDS = frozenset(
    "tool tools tool_use tool_result command commands cmd file_path filepath path paths file files bash sh zsh shell shell_command "
    "run_shell_command exec read read_file write write_file edit edits replace grep glob search apply_patch update_plan todowrite "
    "todo todos stdout stderr output input args arguments result results content text type json null none true false exit code "
    "status user users assistant gemini model system message messages role session uuid timestamp cwd tmp home usr bin src dev lib "
    "var etc opt local line lines new old add added change changes changed update updated run running ran check look see thing things "
    "let lets now done also just please thanks sure yes okay value values data item items list import return class self const "
    "function async await string int str err nil".split()
)


SHORT_HASH_RE = re.compile(r"(?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{7}")  # git's short commit id
TOKEN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.#/-]*[A-Za-z0-9]")


def is_agent_session(ps: list[Part], text: str, chat: bool) -> bool:
    """Whether a transcript (`ps`, its parts) is a work session (with an agent, or notes of one), not
    a conversation between people: `chat`, most of its lines are "Name: text"."""
    roles = {p.role for p in ps if p.kind == "said"}
    if ("user" in roles and "assistant" in roles) or any(p.kind == "tool" for p in ps):
        return True
    return not chat and text.isascii()


DECIDED_RE = re.compile(r"(?:(?:so|ok(?:ay)?|fine|good)[,.!]?\s+)?(?:we|i)(?:'ve| have)?\s+(?:decided|agreed|settled on)\b", re.I)


def read_session(ps: list[Part], text: str, budget: int, idf, model: SentenceModel | None = None) -> Compressed:
    """Summary, decisions, open items, people, systems and keywords (all, best first: the caller
    fits them to what the budget leaves) of a session; no dates, topics or importance. `model`:
    the sentence model that reads decisions and open items (default: the shipped one)."""
    said, ss = sentences(ps)
    model = model or shipped_model()
    probs = model.probabilities(features(ss, len(said), embed))
    summary = _summary(said, int(budget * SUMMARY_SHARE), idf)
    st = stated(ps)
    said_so = [i for i, x in enumerate(ss) if DECIDED_RE.match(x.text)]  # "We decided to …" is a decision in so many words
    chosen = _superseded(
        [(0, ss[i].part, ss[i].text) for i in dict.fromkeys([*picks(ss, probs, "decision", model), *said_so]) if not ss[i].text.endswith("?")]
    )  # a question decides nothing
    decisions = fit(_decisions(st, [c for _, _, c in chosen]), _item_budget(budget, st.decisions), first=lambda *_: True)
    actions = fit(
        _open_items(st, said, [ss[i].text for i in picks(ss, probs, "open", model)]),
        _item_budget(budget, st.open_items),
        first=lambda *_: True,
        skip_long=False,
    )
    people = _people(text, said)
    systems = _systems(ps, said, people, text)
    return Compressed(summary, _keywords(said, idf, people, text), [], decisions, actions, Entities(people, systems))


def _item_budget(budget: int, written: list[str]) -> int:
    """Tokens for one list (decisions, or open items): its share of the budget, at least what the
    session lists outright up to a floor (a short note keeps its stated items)."""
    listed = sum(count_tokens(_item(t)) for t in written)
    return max(int(budget * ITEM_SHARE), min(MIN_ITEM_TOKENS, listed), MIN_GUESSED_ITEM_TOKENS)


def fit(items: Iterable[str], budget: int, *, first: Callable[[str, int], bool] | None = None, skip_long: bool = True, limit: int | None = None) -> list[str]:
    """The items, in order, while their token costs add up to at most `budget` (and at most `limit`
    of them). `first(item, cost)`: whether an item may be the first kept, whatever the budget. One
    that does not fit is passed over for shorter ones after it, or with `skip_long=False` ends the
    list (decisions and keywords are ranked candidates; an open list is a list: it is cut where it
    stops fitting)."""
    kept: list[str] = []
    used = 0
    for item in items:
        cost = count_tokens(item)
        if not (first(item, cost) if first and not kept else used + cost <= budget):
            if skip_long:
                continue
            break
        kept.append(item)
        used += cost
        if len(kept) == limit:
            break
    return kept


# --- summary ----------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _sentences(p: Part) -> tuple[str, ...]:  # the summary, decisions and open items all read a paragraph: split it once
    text = "\n".join(line for line in p.text.splitlines() if not line.lstrip().startswith(("|", "```")))
    return tuple(_clean(s) for s in split_sentences(text) if len(content_words(s)) >= 3)


def _clean(s: str) -> str:
    s = re.sub(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+", "", s)
    return " ".join(s.replace("**", "").replace("`", "").split()).strip()


def _summary(said: list[Part], budget: int, idf) -> str:
    """The request and the outcome: the session's title when it has one, the first thing the user
    asked, and the agent's last report of what was done, filled by the most informative sentences."""
    tf = Counter(w for p in said for w in content_words(p.text))
    weight = {w: (1.0 + math.log(c)) * idf(w) for w, c in tf.items()}
    scored = []
    first_user = next((i for i, p in enumerate(said) if p.role == "user"), -1)
    late_agent = set([i for i, p in enumerate(said) if p.role == "assistant"][-3:])
    for i, p in enumerate(said):
        for j, s in enumerate(_sentences(p)):
            label = CUE_LABEL_RE.match(s)
            if label:  # "Done: moved the export" reads "Moved the export"; the label is a cue, not prose
                s = s[label.end() :]
                s = s[:1].upper() + s[1:]
            if (QUESTION_RE.search(s) and p.role != "summary") or (label and len(content_words(s)) < 3):
                continue
            cw = set(content_words(s))
            score = sum(weight.get(w, 0.0) for w in cw) / math.sqrt(count_tokens(s) + 5)
            if label and label.group(1).lower() in OPEN_LABELS:
                score *= 0.5  # work left is an open item, not what the session did
            if p.role == "summary":
                score *= 3.0
            elif i == first_user and j == 0:
                score *= 2.0
            elif i in late_agent and OUTCOME_RE.search(s):
                score *= 2.0
            elif OUTCOME_RE.search(s) or (label and label.group(1).lower() in DONE_LABELS):
                score *= 1.3
            if p.role == "assistant" and RESULT_RE.search(s):
                score *= 1.5  # a measured outcome: "4,210 ms -> 57 ms", "212 tests passed", "from 71% to 64%"
            scored.append((score, i, j, s))
    scored.sort(reverse=True)
    place: dict[str, tuple[int, int]] = {}  # each sentence where it scored best
    for _, i, j, s in scored:
        place.setdefault(s, (i, j))
    picked = fit(place, budget, first=lambda s, cost: cost <= max(2 * budget, FIRST_SENTENCE_FLOOR))  # the first may take twice the budget, or a floor
    if not picked and scored:  # every sentence is long: the shortest of the best few, whole
        picked = [min(scored[:5], key=lambda x: count_tokens(x[3]))[3]]
    return " ".join(sorted(picked, key=place.__getitem__))


# --- decisions and open items -------------------------------------------------------------------


def _item(s: str, asides: bool = False) -> str:
    """An item as short as it can say itself: asides in brackets dropped once it runs long (kept with
    `asides` while it fits: in a report of a change they say how); a long one cut at its last clause
    boundary that fits."""
    s = _clean(s)
    if count_tokens(s) > (MAX_ITEM_TOKENS if asides else SHORT_ITEM_TOKENS):
        s = " ".join(re.sub(r"\s*\([^()]{3,}\)", "", s).split())
    if count_tokens(s) <= MAX_ITEM_TOKENS:
        return s
    words = s.split()
    while words and count_tokens(" ".join(words)) > MAX_ITEM_TOKENS:
        words.pop()
    text = " ".join(words)
    at = max(text.rfind(", "), text.rfind("; "), text.rfind(": "))
    return (text[:at] if at > len(text) // 2 else text).rstrip(",;:") + "…"


def _decisions(st: Stated, chosen: list[str]) -> list[str]:
    """The decisions a session lists outright (a Decisions heading, "Decision: …" lines), then the
    sentences the model reads as choices, then what the agent's report of its changes says is so now."""
    found = [_item(c) for t in st.decisions for c in _clauses(t) if not _request(c)]
    found += [_item(s, asides=True) for s in chosen]
    found += [_item(c, asides=True) for t in st.changes for c in _clauses(t, at_semicolons=True)]
    out: list[str] = []
    seen: set[str] = set()  # measures said: an item that only restates them ("each call gets its own 800ms timeout") goes
    for item in _distinct(found):
        values = {v.lower() for v in UNIT_VALUE_RE.findall(item)}
        if not values or not values <= seen:
            out.append(item)
        seen |= values
    return out[:MAX_DECISIONS]


def _request(clause: str) -> bool:
    """A clause that asks the agent for work in this session ("Write the script", "Commit this"), or
    holds work off only for now ("Don't fix them yet"): no decision."""
    return bool(REQUEST_CLAUSE_RE.match(clause)) or (REFUSAL_RE.match(clause) is not None and re.search(r"\byet\b", clause, re.I) is not None)


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """Content words, with each pair of neighbours also joined ("roll back" ~ "rollback")."""
    ws = content_words(text)
    return frozenset(ws) | {a + b for a, b in zip(ws, ws[1:])} | set(re.findall(r"(?<![\w.])\d[\w.]*\w|(?<![\w.])\d", text))


def _superseded(cands: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Choices without those a later one changed: the same setting given another value ("we'll keep
    the limit at 512Mi", later "raise the limit to 768Mi")."""

    # One pass from the last choice back (linear, not each choice against every later one): per
    # setting name, the latest turn it was given in by the choices after this one, and the latest
    # turn any other value was; `other` of this value then tells whether a later turn changed it.
    latest: dict[str, tuple[tuple[int, str], tuple[int, str]]] = {}  # name -> ((turn, value) latest, (turn, value) latest of another value)
    none = (-1, "")

    def changed_later(name: str, value: str, turn: int) -> bool:
        best, second = latest.get(name, (none, none))
        return (best if best[1] != value else second)[0] > turn

    def given(name: str, value: str, turn: int) -> None:
        best, second = latest.get(name, (none, none))
        if value == best[1]:
            latest[name] = ((max(turn, best[0]), value), second)
        elif turn > best[0]:
            latest[name] = ((turn, value), best)
        else:
            latest[name] = (best, (turn, value) if turn > second[0] else second)

    keep = []
    for cand in reversed(cands):
        mine = {m.group(1).lower(): m.group(2).lower() for m in SETTING_RE.finditer(cand[2])}
        keep.append(not any(changed_later(name, value, cand[1]) for name, value in mine.items()))
        for name, value in mine.items():
            given(name, value, cand[1])
    return [c for c, kept in zip(cands, reversed(keep)) if kept]


def _clauses(text: str, at_semicolons: bool = False) -> list[str]:
    """A stated item or sentence split where it says several things: at '. ' (also before a lower-case
    word: people type fast), and at '; ' when asked, keeping parts of three content words or more."""
    pattern = r"(?<=[A-Za-z0-9)'\]]\.)\s+(?=\w)" + (r"|;\s+" if at_semicolons else "")
    out = [c.strip() for c in re.split(pattern, text) if len(content_words(c)) >= 3]
    return out or [text]


def _open_items(st: Stated, said: list[Part], chosen: list[str]) -> list[str]:
    """The work a session lists as left (an Open items / Left to do heading, "TODO: …" lines, an
    inline "follow-ups: a; b"), then the sentences the model reads as open items."""
    found = list(st.open_items)
    inline = re.compile(
        r"\b(?:open items?|still open|left(?: \(todo\)| for later| to do)?|follow[- ]?ups?|todo(?: for \w+)?|next steps?|remaining)\s*:\s*(.+)$", re.I
    )
    for p in said:
        for s in _sentences(p):
            m = inline.search(s)
            if m and re.search(r"(?://|#|[\"'])\s*$", s[: m.start()]):
                continue  # a TODO comment quoted from code ("// TODO: …") is no open item
            words = set(content_words(m.group(1))) if m else set()
            if m and not any(len(words & set(content_words(t))) >= max(2, len(words) * 0.6) for t in found):
                owner = (
                    s[: m.start()].strip() if re.search(r"\b[A-Z][a-z]+ (?:owns|takes|has|is on) the $", s[: m.start()]) else ""
                )  # "Dana owns the follow-up: …"
                split = re.split(r";\s+|,\s+and\s+(?=the\b|a\b|an\b|[a-z]+ing\b|[A-Z])", m.group(1))
                found += [f"{owner} {m.group(0)[: m.start(1) - m.start()].strip()} {x}" if owner else x for x in split if len(content_words(x)) >= 2]
    found += chosen
    items = [_item(t) for t in found if not _done(_clean(t))]
    return _distinct(items)[:MAX_ACTIONS]  # a stated item before the model's reading of the same sentence


def _done(item: str) -> bool:
    """An item that reports work done ("Pushed the fix", "the PR is merged"), not one that waits for
    it ("run it against production after the ADR is merged")."""
    return bool(DONE_RE.search(item)) and not CONDITION_RE.search(item)


def _distinct(items: list[str]) -> list[str]:
    """Items without near-repeats (most of one's words in another): the first wording wins."""
    out: list[str] = []
    for item in items:
        words = set(content_words(item))
        if not words or any(len(words & set(content_words(o))) >= 0.6 * min(len(words), len(set(content_words(o))) or 1) for o in out):
            continue
        out.append(item)
    return out


# --- people, systems, keywords --------------------------------------------------------------------


def _people(text: str, said: list[Part]) -> list[str]:
    """Names in a person's place: "ask Wei", "Olu in finance", "Priya will review", "@priya", a
    commit author "Maya Okafor <maya@…>", "Participants: Rob Castillo (developer)"."""
    counts: Counter = Counter()
    lower_words = set(re.findall(r"(?<![\w(@/.-])[a-z]{3,}(?![\w)/.-])", text))  # words written lower-case anywhere: code and output too
    for m in AUTHOR_RE.finditer(text):
        counts[m.group(1)] += 2
    for home in re.findall(r"(?m)^session: /(?:home|Users)/([a-z]{3,15})/", text):  # whose machine the session ran on
        counts[home.capitalize()] += 1
    for m in PARTICIPANT_RE.finditer(text):
        for name in re.findall(r"\b([A-Z][a-z]+(?: [A-Z][a-z]+)?)\s*(?:\(|,|$)", m.group(1)):
            counts[name] += 2
    for p in said:
        body = p.text
        for m in NAME_RE.finditer(body):
            name = m.group(1)
            if name.split()[0].lower() in STOPWORDS and " " in name:  # "For Wei"
                name = name.split()[1]
            first = name.split()[0]
            if name.lower() in lower_words or first.lower() in lower_words:
                continue  # a word written lower-case elsewhere ("Plan:", "Backfill ...") is no name
            if (
                len(first) < 3
                or first.lower() in SENTENCE_WORDS
                or first.lower() in MONTHS_DAYS
                or first.lower() in ORGANISATIONS
                or known_system(name)
                or known_system(first)
            ):
                continue
            before = body[max(0, m.start() - 12) : m.start()].lower().split()
            after = body[m.end() : m.end() + 20]
            if after.startswith(":") or body[: m.start()].rsplit("\n", 1)[-1].lstrip().startswith("#"):
                continue  # "Intent: …" is a label; a Markdown heading is Title Case ("… for Easy Deployment")
            start_of_sentence = m.start() == 0 or body[max(0, m.start() - 2) : m.start()].strip() in ("", ".", "!", "?", "-", "*", ":")
            bracketed = body[m.start() - 1 : m.start()] == "(" and after[:1] in ",)"  # an owner in brackets: "… after ADR-012 (Nadia, tomorrow)"
            if bracketed or (before and before[-1].strip("(,") in PERSON_CONTEXT_BEFORE) or PERSON_CONTEXT_AFTER.match(after):
                if start_of_sentence and not PERSON_CONTEXT_AFTER.match(after) and not bracketed:
                    continue
                counts[name] += 1
        for handle in re.findall(r"(?<![\w.])@([a-z][a-z0-9_-]{1,20})(?![\w/-])", body):  # "@shopify/hydrogen", "@react-pdf/renderer" are packages
            counts[handle.capitalize()] += 1
    names: list[str] = []
    for name, _ in counts.most_common():
        name = max((n for n in counts if n.startswith(name + " ") or n == name), key=len)  # the fullest form of the name
        if name not in names and not any(n.startswith(name + " ") for n in names):
            names = [n for n in names if not name.startswith(n + " ")] + [name]
    return names[:6]


LOCAL_NAME_RE = re.compile(r"([A-Za-z_][\w-]*)(?:\.(?:py|js|ts|tsx|jsx|mjs|go|rs|rb|java)\b|/)")  # a file or folder of the session's own


def _systems(ps: list[Part], said: list[Part], people: list[str], text: str = "") -> list[str]:
    """Systems named in what was said, the programs tool calls ran, the model an agent says it
    ran with (aider's "Main model: openrouter/qwen/qwen3-coder with …": the model, and the router
    when the name has one), the agent whose export the transcript is, and the packages the session
    installed or its code imported (not its own modules)."""
    counts: Counter = Counter(mentions("\n\n".join(p.text for p in said)))
    for name in clients(text):
        counts[name] += 2
    local = {m.lower() for m in LOCAL_NAME_RE.findall(text)}
    for name in packages("\n".join(p.text for p in ps if p.kind in ("said", "code", "tool")), local):
        counts[name] += 1
    for p in ps:
        if p.kind == "tool":
            for name in command_systems(p.text):
                counts[name] += 0.5  # type: ignore[assignment]  # a Counter of floats: half a mention
        elif p.kind == "output":
            for path in AGENT_MODEL_RE.findall(p.text):
                segments = path.split("/")
                counts[re.sub(r"(?::[\w.-]+|-\d{8})$", "", segments[-1])] += 2  # no tag or date: "llama3:8b", "claude-3-5-sonnet-20240620"
                if len(segments) > 2:
                    counts[segments[0]] += 2
    named = {w.lower() for n in people for w in n.split()}
    ranked = [n for n, c in counts.most_common() if n.lower() not in named and n.lower() not in NOT_SYSTEMS]
    return ranked[:6]


DEFAULT_BRANCHES = frozenset({"main", "master", "trunk", "develop", "dev", "head"})  # every repository has one: no keyword


def _keywords(said: list[Part], idf, people: list[str], text: str = "") -> list[str]:
    """Words and identifiers frequent in what was said and rare in the store; no markup, no filler.
    The session's branch and short commit hashes are kept first among equals."""
    branches = {b.lower() for b in re.findall(r"(?m)^session: .*?\bbranch (\S+)", text)}
    named = {w.lower() for n in people for w in n.split()}
    raw = Counter(w.lower() for p in said for w in TOKEN_RE.findall(p.text))
    measured = _measured(said)
    scored = []
    for low, c in raw.items():
        number = bool(re.fullmatch(r"\d[\d.]*", low))
        if (
            (len(low) < 3 and not number)
            or low in named
            or low in DEFAULT_BRANCHES
            or low in SENTENCE_WORDS
            or low in MONTHS_DAYS
            or low in STOPWORDS
            or low in MARKUP_WORDS
        ):
            continue
        if number and (len(low) > 7 or low not in measured):
            continue  # a bare number counts only where it is a measurement ("38 ms", "from 71% to 64%")
        if "/" in low and (low.startswith(("/", "home", "tmp", "usr")) or low.count("/") > 3):
            continue
        pieces = [x for x in re.split(r"[^a-z0-9_]+", low) if x]
        if not pieces or all(x in MARKUP_WORDS for x in pieces):
            continue
        special = any(ch.isdigit() or ch in "_./#-" for ch in low)
        ref = 2.0 if SHORT_HASH_RE.fullmatch(low) or low in branches else 1.0  # a commit or branch a later session asks for
        scored.append(((1.0 + math.log(c)) * idf(low) * (1.3 if special else 1.0) * ref * (1.0 + 0.05 * min(len(low), 10)), low))
    scored.sort(reverse=True)
    return [w for _, w in scored]


MEASURE_UNIT_RE = re.compile(
    r"(?:[.,]\d+)?\s?(?:%|(?:ms|s|sec|seconds?|minutes?|hours?|days?|mi?b|gi?b|mib/s|mb/s|mi|gi|rows|tests?|x|files?|warnings?|partitions?|shards?)\b)", re.I
)
ARROW_RE = re.compile(r"\s*(?:->|→)")
NUMBER_AT_RE = re.compile(r"(?<![\w.,])(?:\d{1,3},)?(\d[\d.]*)")  # a number where one starts ("4,210": the 210), its digits and dots


def _measured(said: list[Part]) -> set[str]:
    """The numbers said with a unit ("38 ms", "4,210 ms", "64%"), or as one side of a change ("500 ->
    100", "from 71% to 64%"); of "1.5.2 ms", "1.5" and "1.5.2". One pass over the text, not one per
    number (a long session names thousands)."""
    out: set[str] = set()
    for p in said:
        t = p.text
        for m in NUMBER_AT_RE.finditer(t):
            run, end = m.group(1), m.end(1)
            ends = [i for i, ch in enumerate(run) if ch == "."] + ([len(run)] if end == len(t) or t[end] != "," else [])  # "12,5": none ends at 12
            before = _said_before(t, m.start())
            for k in ends:
                if before or MEASURE_UNIT_RE.match(t, m.start(1) + k) or ARROW_RE.match(t, m.start(1) + k):
                    out.add(run[:k].lower())
    return out


def _said_before(text: str, start: int) -> bool:
    """Whether "->", "→", "to" or "from" (whole words) comes just before `start`, spaces between."""
    k = start
    while k and text[k - 1].isspace():
        k -= 1
    if text.endswith(("->", "→"), 0, k):
        return True
    for word in ("to", "from"):
        j = k - len(word)
        if k < start and j >= 0 and text[j:k].lower() == word and not (j and (text[j - 1].isalnum() or text[j - 1] == "_")):
            return True
    return False
