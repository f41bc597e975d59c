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
from memtool.providers.tech import NOT_SYSTEMS, command_systems, known_system, mentions
from memtool.text import STOPWORDS, content_words, count_tokens, split_sentences

MAX_DECISIONS, MAX_ACTIONS = 6, 6
TERSE_CHOICE_WORDS = 5  # a user's choice this short is read with the agent's sentence it answers
MAX_ITEM_TOKENS = 48  # an item longer than this is cut at a clause
MIN_ITEM_TOKENS = 125  # a short note's stated decisions, and its open items (lists, "TODO:" lines), are what it is for
MIN_GUESSED_ITEM_TOKENS = 100  # ... and the floor of each when the items are read from the conversation
SHORT_ITEM_TOKENS = 20  # ... and one longer than this loses its bracketed asides
FIRST_SENTENCE_FLOOR = 40  # tokens the summary's first sentence may take whatever the budget
SUMMARY_SHARE = 0.45  # of the budget: the request, the outcome
ITEM_SHARE = 0.3  # decisions, and open items: each its own share, so neither crowds out the other
QUESTION_RE = re.compile(r"\?\s*$|^(?:should|could|couldn't|can|do|does|would|shall|want me|or|maybe|which|what|how|why|is|are)\b", re.I)
# A choice made (said by the person, or reported by the agent).
DECISION_RE = re.compile(
    r"\b(?:let'?s (?:go with|use|keep|do|not|stay|stick|drop|leave|make|ship|skip)|go with|going with|decided|decide to|agreed|settled on|"
    r"stick with|stay (?:on|with)|we'?ll (?:use|keep|go|stay|ship|do)|i'?ll (?:keep|go with)|keep (?:it|the|using|[a-z0-9_./-]+ (?:on|at|as|in front))|"
    r"switch(?:ed)? to|instead of|rather than|chose|choose|opted|make it|fine, |ok(?:ay)?, (?:keep|use|go|do)|not pursuing|"
    r"not (?:now|today|in this (?:pr|change))|leave (?:it|the|that)|drop (?:it|the)|ship \d|use [a-z]|must (?:pin|use|be|not))\b",
    re.I,
)
# Work said to be left for later.
OPEN_RE = re.compile(
    r"\b(?:todo|follow[- ]?up|next we need|we (?:still )?need to|still (?:open|need|to do)|left to do|open a ticket|"
    r"i'?ll (?:open|ping|ask|tell|send|write|file|follow)|(?:will|to) (?:review|sign off|write|ping|follow up)|"
    r"tomorrow|next week|later|after (?:the|it|its|that)|before (?:it|the) expires|by (?:monday|tuesday|wednesday|thursday|friday)|"
    r"needs? to|has to|ask \w+ to|remaining|not (?:today|yet)|waits? for|once \w+)\b",
    re.I,
)
ASSENT_RE = re.compile(r"^(?:yes|yep|agreed|ok(?:ay)?|sure|fine|right|correct|exactly)\b[,:!]?\s+\w", re.I)  # "yes, everything UTC"
# A user's reply that only approves what the agent proposed ("agreed.", "yes, do that", "sounds good").
BARE_ASSENT_RE = re.compile(r"^(?:yes|yep|agreed|ok(?:ay)?|sure|fine|sounds good|makes sense|good call|go ahead|do it|do that|let'?s do (?:it|that))\b", re.I)
# The agent's recommendation, which the user's assent turns into a choice.
PROPOSAL_RE = re.compile(
    r"\b(?:i'?d (?:go|do|keep|use|pick|stay|stick|recommend|suggest|rather|leave|not)|i would|i (?:suggest|recommend|propose)|my recommendation|rather than|instead of)\b",
    re.I,
)
# A user's refusal stated as a rule: "Don't touch prod today.", "no, don't cache it", "let's not …".
REFUSAL_RE = re.compile(r"^(?:(?:no|nope|ok(?:ay)?|fine|agreed)\b[,.:!]?\s+)?(?:don'?t|do not|never|let'?s not|we won'?t|we will not|no need to)\s+\w", re.I)
# What follows an assent when it is a request to the agent, not a choice ("ok, can you check …").
REQUEST_RE = re.compile(r"^(?:can|could|would|please|show|check|look|run|try|tell|explain|find|see|what|how|why|where|write|give|go ahead|thanks)\b", re.I)
# A review asked for: "with Aiko as reviewer", "--reviewer"-less "for Aiko to review", "Priya will review".
REVIEWER_RE = re.compile(
    r"\bwith ([A-Z][a-z]{1,15}) as (?:the )?reviewer|\b([A-Z][a-z]{1,15}) (?:will|is going to|to|should|can|needs to) review\b|"
    r"\breview(?:er|ed)? (?:by|from) ([A-Z][a-z]{1,15})\b|\bfor ([A-Z][a-z]{1,15}) to review|\bopen the PR for ([A-Z][a-z]{1,15})\b|"
    r"\bping ([A-Z][a-z]{1,15})\b[^.]{0,40}\bfor (?:the |a )?review"
)
CONDITION_RE = re.compile(r"\b(?:after|once|when|until|before|if|unless)\b[^,.;]*\b(?:is|are|was|were|gets?) (?:done|fixed|merged|pushed)\b", re.I)
PROMISE_RE = re.compile(r"^(?:(?:ok(?:ay)?|yes|fine|good|great|thanks)[,.!]?\s+)?(?:also\s+)?i'?ll\s+(?!be\b|have\b|need\b|let\b)(.+)$", re.I)
# A user's choice said as an order: "Keep net/http, no resty or chi", "Use import blocks, not the CLI".
CHOICE_VERB_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|fine|right|agreed|good|great)[,.:!]?\s+)?(?:keep|use|stay (?:on|with)|stick (?:with|to)|drop|ship|pin|skip|switch to|go with|prefer)\b",
    re.I,
)
# A user picking one of the options the agent listed: "Option 2.", "ok, option B".
OPTION_PICK_RE = re.compile(r"^(?:(?:ok(?:ay)?|yes|fine|agreed|let'?s (?:go with|do))[,.:!]?\s+)?(?:option|approach|variant)\s+(\d|[a-d])\b", re.I)
OPTIONS_HEAD_RE = re.compile(
    r"\b(?:(?:two|three|four|several|a few) (?:ways(?: out)?|options|approaches|choices)|options|alternatives(?: i looked at)?|approaches)\s*:\s*$", re.I | re.M
)
PLAN_HEAD_RE = re.compile(
    r"(?:^|[.!] )(?:[\w-]+ )?(?:plan|proposal|proposed (?:fix|changes?)|suggested (?:fix|changes?))(?: \([^)\n]*\))?\s*:\s*$", re.I | re.M
)
# A note's cue label before a sentence: "Done: …", "Decision: …", "TODO: …", "Left (TODO): …".
CUE_LABEL_RE = re.compile(
    r"^(done|decision|decided|decisions|todo|to do|left|follow[- ]?ups?|next steps?|next|open|still open|action items?|note|notes|goal|outcome|result|"
    r"status|fixed|fix|change|changes)(?:\s*\([^)]*\))?\s*[:\-–]\s+(?=\S)",
    re.I,
)
OPEN_LABELS = frozenset("todo|to do|left|follow-up|followup|follow up|follow-ups|next step|next steps|next|open|still open|action item|action items".split("|"))
DONE_LABELS = frozenset("done fixed fix change changes outcome result".split())
PLAN_REFUSED_RE = re.compile(r"^(?:no|nope|wait|hold on|stop|instead|not|don'?t|let'?s not)\b", re.I)
# A step of a plan that only looks ("Reproduce the bug", "Read the logs"): how the agent works, not a choice.
LOOKING_RE = re.compile(
    r"^(?:first,? |then,? )?(?:read|look|check|reproduce|investigate|find|inspect|grep|search|understand|figure out|profile|measure|run the (?:tests|suite)|confirm|verify)\b",
    re.I,
)
CHANGED_RE = re.compile(r"^(?:changed|switched|replaced|moved)\b.*\b(?:to|with|instead of)\b", re.I)  # "Changed registerForPush to pass projectId …"
SHOULD_WE_RE = re.compile(
    r"^(?:(?:and|so|also|ok(?:ay)?|hm+|nice|great|right)[,.]?\s+)?(?:should|shall|do|can) we (?:also |just |still )?(.+?)\s*\?$", re.I
)  # the user asking whether to do something
ADVISED_AGAINST_RE = re.compile(r"\b(?:not|n't|out of|leave (?:it|that|this) (?:alone|out)|skip|hold off|keep (?:it|that|this) out)\b", re.I)
LIST_ITEM_RE = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.+)$", re.M)
# The agent offering to do something: "Want me to roll back?", "Shall I try it on staging?"
OFFER_RE = re.compile(r"^(?:do you )?(?:want me to|shall i|should i|ok(?:ay)? if i)\s+(.+?)\??$", re.I)
# A choice not to do something now: "let's not do that now", "not in this PR".
NOT_NOW_RE = re.compile(r"\blet'?s not\b", re.I)
# Work asked of the agent in the session, not a choice: "Write the script", "Commit this and …".
REQUEST_CLAUSE_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|fine|agreed|good|great|thanks)[,.:!]?\s+)?(?:write|commit|push|check|look|show|explain|find|give|tell me|send|draft|"
    r"open the pr|fix it|run the tests|try)\b",
    re.I,
)
UNIT_VALUE_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|s|m|h|min|mi|gi|mib|gib|mb|gb|%)(?!\w)", re.I)  # "800ms", "2s", "768Mi"
MEASURED_RE = re.compile(r"\b(?:instead of|rather than|from)\s+[~≈]?\d", re.I)  # "4 minutes instead of 40": a result, not a choice
# A setting given a value: "keep the limit at 512Mi", "raise the limit to 768Mi", "set prefetch to 100".
SETTING_RE = re.compile(
    r"\b(?:keep|set|raise|lower|bump|increase|decrease|reduce|leave|stay|pin|make)\b[^.;,]{0,30}?\b([a-z_][\w-]*)\s+(?:at|to|on)\s+[~>=<\s]*(v?\d[\w.]*\w|\d)",
    re.I,
)
LATER_RE = re.compile(r"\b(?:next we need|follow[- ]?up|todo|ticket|later|tomorrow|next week)\b", re.I)  # work left, not a choice
DONE_RE = re.compile(
    r"^(?:done|fixed|added|pushed|committed|merged|reverted|removed|updated|created|ran|all \d+)\b|\b(?:is|are|was|were) (?:done|fixed|merged|pushed)\b", re.I
)
OUTCOME_RE = re.compile(
    r"\b(?:fixed|fix(?:es)?|root cause|caused by|now |committed|pushed|merged|opened|pass(?:es|ed)?|reproduced|added|replaced|switched|rolled back|migrated|upgraded|reduced|dropped from|went from|cut)\b",
    re.I,
)
RESULT_RE = re.compile(
    r"\d\s?(?:->|→)\s?\d|\d\s?(?:ms|s|%|mib/s|mb/s|mi|gi|mb|gb)\s?(?:->|→|to|instead of)\s|\bfrom [\d.,]+\s?\S* to [\d.,]+|\b\d+ (?:tests? )?pass(?:ed|es)?\b",
    re.I,
)
PERSON_CONTEXT_BEFORE = frozenset("ask asked tell told with and ping pinged from by cc thanks for reviewer owner i'm im".split())
PERSON_CONTEXT_AFTER = re.compile(
    r"^(?:'s\b|’s\b|:| \(| said| says| asked| wants| will| can| needs| reviews?| signs?| writes?| owns?| decides?| moved| from| in (?:finance|support|ops|platform)| is (?:on|out|off|the))"
)
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


def read_session(ps: list[Part], text: str, budget: int, idf) -> Compressed:
    """Summary, decisions, open items, people, systems and keywords (all, best first: the caller
    fits them to what the budget leaves) of a session; no dates, topics or importance."""
    said = [p for p in ps if p.kind == "said"]
    summary = _summary(said, int(budget * SUMMARY_SHARE), idf)
    st = stated(ps)
    decisions = fit(_decisions(st, said), _item_budget(budget, st.decisions), first=lambda *_: True)
    actions = fit(_open_items(st, said, text), _item_budget(budget, st.open_items), first=lambda *_: True, skip_long=False)
    people = _people(text, said)
    systems = _systems(ps, said, people)
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


@lru_cache(maxsize=4096)
def _short_sentences(p: Part) -> tuple[str, ...]:
    """A user's sentences down to two content words: people answer tersely ("ok, ship 4 shards not 6")."""
    return tuple(_clean(s) for s in split_sentences(p.text) if len(content_words(s)) >= 2)


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


def _decisions(st: Stated, said: list[Part]) -> list[str]:
    found = [_item(c) for t in st.decisions for c in _clauses(t) if not _request(c)]
    if len(found) < 2:  # no list of decisions: the choices said in the conversation
        cands = []
        for i, p in enumerate(said):
            if p.role == "user":
                j = next(j for j in range(i, -1, -1) if j == 0 or said[j - 1].role != "assistant")
                turn, first = said[j:i], (_short_sentences(p) or (p.text.strip(),))[0]  # what the agent said just before; the user's first sentence
                approved = _adopted(said, i, turn, first) + _accepted_offer(turn, first) if turn and BARE_ASSENT_RE.match(first) else []
                # an assent that only approves what the agent said is read as what it approved
                cands += [(1, i, c) for c in _user_choices(said, i, turn) if not (approved and _only_assent(c))]
                cands += [(1, i - 1, c) for c in approved + _planned(turn, first)]
                continue
            if OPTIONS_HEAD_RE.search(p.text) or PLAN_HEAD_RE.search(p.text):
                continue  # options the agent lays out are weighed, not chosen; a plan counts once approved
            for s in _sentences(p):
                if QUESTION_RE.search(s) or not DECISION_RE.search(s) or MEASURED_RE.search(s):
                    continue
                if not re.search(r"\b(?:decided|agreed|going with|settled|we'?ll|chose|instead of|rather than|keep|stay)\b", s, re.I):
                    continue
                if re.match(r"^(?:option|options|alternatively|if you|either|i'd|i would|we could|you could)\b", s, re.I):
                    continue
                cands += [(0, i, c) for c in _clauses(s) if DECISION_RE.search(c) and not LATER_RE.search(c)]
        cands = _superseded(cands)
        cands.sort(key=lambda c: (-c[0], c[1]))
        found += [_item(s, asides=True) for _, _, s in cands]
        found += [_item(c, asides=True) for t in st.changes for c in _clauses(t, at_semicolons=True)]  # what the agent reports it changed
        found += [_item(s, asides=True) for p in said[len(said) // 2 :] if p.role == "assistant" for s in _sentences(p) if CHANGED_RE.match(s)]
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


def _user_choices(said: list[Part], i: int, turn: list[Part]) -> list[str]:
    """What a user's turn chose: a sentence with a choice cue, an answer that approves and adds
    something ("ok, ship 4 shards not 6"), a refusal ("Don't touch prod today"). A choice that names
    one of the options the agent listed takes that option ("Go with Decimal …" -> "… — Keep Decimal
    end to end and quantize each line …"; "… let's not do that" -> "Rejected: <option>"); a terse
    choice takes the agent's sentence just before that it answers ("keep the Expo push service" ->
    "… the backend sends through the Expo push service (exponent_server_sdk)")."""
    out = []
    options = [_clean(x) for x in _items_after(OPTIONS_HEAD_RE, turn)]
    for s in split_sentences(said[i].text):
        s = _clean(s)
        if QUESTION_RE.search(s) or (len(content_words(s)) < 2 and not OPTION_PICK_RE.match(s)):
            continue
        for c in _clauses(s):
            if LATER_RE.search(c) or _request(c):
                continue
            pick = OPTION_PICK_RE.match(c)
            option = pick and _option(said[max(0, i - 4) : i], pick.group(1))
            if option:
                out.append((split_sentences(option) or [option])[0] if option in " ".join(options) else option)
                continue
            rest = ASSENT_RE.match(c) and c[ASSENT_RE.match(c).end() - 1 :]
            refused = REFUSAL_RE.match(c) or NOT_NOW_RE.search(c)
            if refused or DECISION_RE.search(c) or CHOICE_VERB_RE.match(c) or (rest and not REQUEST_RE.match(rest) and len(content_words(rest)) >= 2):
                named = _named_option(c, options)
                if named and refused:
                    out.append(f"Rejected: {named}")
                elif named and named not in out:  # the option says what was chosen; a terse choice leads it
                    out.append(f"{c} — {named}" if len(content_words(c)) <= TERSE_CHOICE_WORDS else named)
                else:  # a refusal names what it refuses; a terse choice is read with what it answers
                    out.append(_with_context(c, turn[-1]) if turn and not refused else c)
    return out


def _items_after(head: re.Pattern, turn: list[Part]) -> list[str]:
    """The list items after a heading (options: "Two ways out:", a plan: "Plan:") in the agent's turn."""
    return [x for p in turn if (m := head.search(p.text)) for x in LIST_ITEM_RE.findall(p.text[m.end() :])]


def _named_option(choice: str, options: list[str]) -> str:
    """The one option a choice speaks of (two content words or more in common, more than any other);
    its first sentence."""
    words = _words(choice)
    ranked = sorted(((len(words & _words(o)), o) for o in options), reverse=True)
    if not ranked or ranked[0][0] < 2 or (len(ranked) > 1 and ranked[1][0] == ranked[0][0]):
        return ""
    return (split_sentences(ranked[0][1]) or [ranked[0][1]])[0]


def _planned(turn: list[Part], first: str) -> list[str]:
    """The items of the agent's plan or proposal ("Plan:", "Fix-forward proposal (v2.15.1):") when
    the user's next turn (its `first` sentence) goes ahead with it rather than refusing it."""
    if not turn or PLAN_REFUSED_RE.match(first) or QUESTION_RE.search(first):
        return []  # refused, or answered with a question: not (yet) approved
    return [x for x in _items_after(PLAN_HEAD_RE, turn) if not QUESTION_RE.search(x) and not LOOKING_RE.match(_clean(x))]


def _accepted_offer(turn: list[Part], first: str) -> list[str]:
    """An offer the user says yes to ("Want me to roll back?" -> "Yes, …"): the agent's sentence that
    says what the offer is (the one sharing most words with the offer and the answer)."""
    sentences = [s for p in turn for s in _short_sentences(p)]
    offer = next((m.group(1) for s in reversed(sentences) if (m := OFFER_RE.match(s))), "")
    if not offer:
        return []
    words = _words(offer) | _words(first)
    shared, best = max(((len(words & _words(s)), s) for s in sentences if not QUESTION_RE.search(s)), default=(0, ""))
    if shared < 2:
        return []
    return [f"{first} — {best}" if _only_assent(first) and len(content_words(first)) > 1 else best]


def _only_assent(clause: str) -> bool:
    """A short reply that starts by saying yes ("agreed, stay on v5", "Yes, roll back to 39 now")."""
    return bool(ASSENT_RE.match(clause) or BARE_ASSENT_RE.match(clause)) and len(content_words(clause)) <= TERSE_CHOICE_WORDS


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


def _option(before: list[Part], which: str) -> str:
    """The agent's option `which` ("2", "b") from the list it offered just before: "1. … / 2. Split …"."""
    line = re.compile(rf"^\s*(?:[-*]\s*)?(?:\*\*)?(?:option\s+)?{re.escape(which)}(?:[.):]|\*\*)\s*(.+)$", re.I | re.M)
    for p in reversed(before):
        m = line.search(p.text) if p.role == "assistant" else None
        if m:
            return _clean(m.group(1))
    return ""


def _with_context(choice: str, before: Part) -> str:
    """A terse choice followed by the agent's sentence it answers: the one sharing most of its words."""
    words = set(content_words(re.sub(r"^(?:yes|yep|agreed|ok(?:ay)?|sure|fine|right|correct|exactly)\b[,:!.]?", "", choice, flags=re.I)))
    if len(words) > TERSE_CHOICE_WORDS:
        return choice
    words = _words(" ".join(words))
    shared, best = max(((len(words & _words(s)), s) for s in _short_sentences(before) if not QUESTION_RE.search(s)), default=(0, ""))
    return f"{choice} — {best}" if shared >= max(2, len(words) // 2) else choice


def _adopted(said: list[Part], i: int, turn: list[Part], first: str) -> list[str]:
    """The agent's recommendation (in `turn`) just before a user turn that only approves it ("agreed.").
    When it answers the user's "Should we also cache the totals?" with "that", "it" or "this", the
    question says what: "Cache the totals: no — keep that out of this change."."""
    proposals = [
        re.sub(r"^i'?d\s+|^i would\s+", "", next((c for c in re.split(r"(?<=\.)\s+", s) if PROPOSAL_RE.search(c)), s), flags=re.I)  # the clause that proposes
        for s in _short_sentences(said[i - 1])
        if PROPOSAL_RE.search(s) and not QUESTION_RE.search(s) and not MEASURED_RE.search(s)
    ][-2:]
    asked = _asked(said, i - len(turn))
    said_too = frozenset() if _only_assent(first) else _words(first)  # a reply that says more is kept as the user's choice
    return [a for a in (_answer(asked, s) if asked else s for s in proposals) if len(said_too & _words(a)) < 2]


def _answer(asked: str, advice: str) -> str:
    """The agent's advice on a question the user asked, as the decision on that question when the
    advice speaks of it ("that", "it", or the question's own words): "<question>: no — <advice>"."""
    instead = re.split(r"\binstead of\b", asked, maxsplit=1, flags=re.I)
    ours = _words(advice)
    if len(instead) == 2:  # "pin exactly 5.81.0 instead of ~> 5.70?" answered "keep ~> 5.70; …": no
        head = _words(re.split(r"[;,:]|\b(?:because|since|as)\b", advice, maxsplit=1)[0])  # what the advice chooses, before its reasons
        against = bool(head & _words(instead[1])) and not head & _words(instead[0])
    else:
        against = ADVISED_AGAINST_RE.search(advice) is not None
    if not re.search(r"\b(?:that|it|this)\b", advice, re.I) and not ours & _words(asked):
        return advice
    return f"{asked}: {'no' if against else 'yes'} — {advice}"


def _asked(said: list[Part], j: int) -> str:
    """What the user asked whether to do in the turn before index j ("Should we also cache the
    computed totals while we're at it?" -> "Cache the computed totals"), else ""."""
    if j <= 0 or said[j - 1].role != "user":
        return ""
    for s in reversed(_short_sentences(said[j - 1])):
        m = SHOULD_WE_RE.match(s)
        if m:
            what = re.sub(r"\s*(?:,?\s*while we'?re at it|,? too|,? as well)$", "", m.group(1))
            return what[:1].upper() + what[1:]
    return ""


def _clauses(text: str, at_semicolons: bool = False) -> list[str]:
    """A stated item or sentence split where it says several things: at '. ' (also before a lower-case
    word: people type fast), and at '; ' when asked, keeping parts of three content words or more."""
    pattern = r"(?<=[A-Za-z0-9)'\]]\.)\s+(?=\w)" + (r"|;\s+" if at_semicolons else "")
    out = [c.strip() for c in re.split(pattern, text) if len(content_words(c)) >= 3]
    return out or [text]


def _open_items(st: Stated, said: list[Part], text: str = "") -> list[str]:
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
                found += [x for x in re.split(r";\s+|,\s+and\s+(?=the\b|a\b|an\b|[a-z]+ing\b|[A-Z])", m.group(1)) if len(content_words(x)) >= 2]
    tail = said[len(said) * 2 // 3 :] if len(said) > 3 else said
    if not found:  # no list: what is said to be left, in the last part of the session
        found += [s for p in tail for s in _sentences(p) if OPEN_RE.search(s) and not QUESTION_RE.search(s) and not _done(s)]
    for p in tail:  # the user's own work left: "I'll tell Ruth …"
        if p.role == "user":
            found += [
                re.sub(r"\s+myself\b", "", m.group(1))
                for s in _short_sentences(p)
                for c in _clauses(s)
                if (m := PROMISE_RE.match(c)) and len(content_words(m.group(1))) >= 3
            ]
    items = [_item(t) for t in found if not _done(_clean(t))]
    reviews = _reviews(said, text)
    items = [t for t in _distinct(items, keep_last=True) if not any(_same_review(t, r) for r in reviews)]
    return reviews + items[: MAX_ACTIONS - len(reviews)]


def _reviews(said: list[Part], text: str) -> list[str]:
    """A review the session asked for and did not see done: "<Name> reviews PR #<n>" (else the
    session's branch) from "opened PR #877 with Aiko as reviewer", "Priya will review"."""
    branch = re.search(r"(?m)^session: .*?\bbranch (\S+)", text)
    out: dict[str, str] = {}
    for p in said[len(said) // 2 :]:
        for s in _short_sentences(p):
            for m in REVIEWER_RE.finditer(s):
                name = next(g for g in m.groups() if g)
                if name.lower() in SENTENCE_WORDS or known_system(name) or re.search(rf"\b{name} (?:approved|signed off|merged)\b", text):
                    continue
                pr = re.search(r"(?:\bPR\s*#?|pull request #?|/pull/|#)(\d{1,6})\b", s)
                what = f"PR #{pr.group(1)}" if pr else f"the {branch.group(1)} PR" if branch else "the PR"
                out[name] = f"{name} reviews {what}"
    return list(out.values())[:2]


def _same_review(item: str, review: str) -> bool:
    """An open item that only names the same review ("Priya's review", "ping Priya tomorrow for the review")."""
    name = review.split()[0]
    rest = set(content_words(item)) - set(content_words(review)) - {w.lower() for w in MONTHS_DAYS} - {"ping", "ask", "morning", "afternoon"}
    return name in item and re.search(r"\breview", item, re.I) is not None and len(rest) <= 2


def _done(item: str) -> bool:
    """An item that reports work done ("Pushed the fix", "the PR is merged"), not one that waits for
    it ("run it against production after the ADR is merged")."""
    return bool(DONE_RE.search(item)) and not CONDITION_RE.search(item)


def _distinct(items: list[str], keep_last: bool = False) -> list[str]:
    """Items without near-repeats (most of one's words in another); the later wording wins with keep_last."""
    out: list[str] = []
    for item in reversed(items) if keep_last else items:
        words = set(content_words(item))
        if not words or any(len(words & set(content_words(o))) >= 0.6 * min(len(words), len(set(content_words(o))) or 1) for o in out):
            continue
        out.append(item)
    return list(reversed(out)) if keep_last else out


# --- people, systems, keywords --------------------------------------------------------------------


def _people(text: str, said: list[Part]) -> list[str]:
    """Names in a person's place: "ask Wei", "Olu in finance", "Priya will review", "@priya", a
    commit author "Maya Okafor <maya@…>", "Participants: Rob Castillo (developer)"."""
    counts: Counter = Counter()
    lower_words = set(re.findall(r"(?<![\w(@/.-])[a-z]{3,}(?![\w)/.-])", "\n".join(p.text for p in said)))
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
            if first.lower() in SENTENCE_WORDS or first.lower() in MONTHS_DAYS or known_system(name) or known_system(first):
                continue
            before = body[max(0, m.start() - 12) : m.start()].lower().split()
            after = body[m.end() : m.end() + 20]
            start_of_sentence = m.start() == 0 or body[max(0, m.start() - 2) : m.start()].strip() in ("", ".", "!", "?", "-", "*", ":")
            if (before and before[-1].strip("(,") in PERSON_CONTEXT_BEFORE) or PERSON_CONTEXT_AFTER.match(after):
                if start_of_sentence and not PERSON_CONTEXT_AFTER.match(after):
                    continue
                if after.startswith(":") and len(re.findall(rf"\b{re.escape(name)}\b", text)) < 2:
                    continue  # "Intent: ..." once is a label; "Wei: add the panel" names Wei elsewhere too
                counts[name] += 1
        for handle in re.findall(r"(?<![\w.])@([a-z][a-z0-9_-]{1,20})\b", body):
            counts[handle.capitalize()] += 1
    names: list[str] = []
    for name, _ in counts.most_common():
        name = max((n for n in counts if n.startswith(name + " ") or n == name), key=len)  # the fullest form of the name
        if name not in names and not any(n.startswith(name + " ") for n in names):
            names = [n for n in names if not name.startswith(n + " ")] + [name]
    return names[:6]


def _systems(ps: list[Part], said: list[Part], people: list[str]) -> list[str]:
    counts: Counter = Counter(mentions("\n\n".join(p.text for p in said)))
    for p in ps:
        if p.kind == "tool":
            for name in command_systems(p.text):
                counts[name] += 0.5
    named = {w.lower() for n in people for w in n.split()}
    ranked = [n for n, c in counts.most_common() if n.lower() not in named and n.lower() not in NOT_SYSTEMS]
    return ranked[:6]


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
        if (len(low) < 3 and not number) or low in named or low in SENTENCE_WORDS or low in MONTHS_DAYS or low in STOPWORDS or low in MARKUP_WORDS:
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
