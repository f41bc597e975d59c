"""What each sentence of a session is, for the offline compressor: a decision, an open item, a key
fact, or other. A small multinomial logistic model scores every sentence someone said; its weights
(`sentence_model.json`, beside this module) are trained by `bench/train_sentences.py` on the
labelled sentences of the coding-session benchmarks (see docs/compression.md).

The features are the sentence's WordLlama embedding (the local embedder, memtool.providers.wordllama),
cue words (a list of words and short phrases, each one feature, the same for every session), who
said it, where in the session, and what followed: whether the user's request was answered, and
whether an edit was applied after it. Deterministic: the same text gives the same scores.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from memtool.providers.local_parts import Part
from memtool.text import content_words, count_tokens, split_sentences

CLASSES = ("other", "decision", "open", "fact")
MODEL_FILE = Path(__file__).with_name("sentence_model.json")
MAX_SENTENCE_CHARS = 600  # a longer "sentence" is a block of pasted text: no candidate
# Cue words and phrases, one feature each: a sentence holds it (as whole words, case aside) or not.
CUES = (
    "decided|decide|agreed|settled|chose|choose|opted|prefer",
    "go with|going with|stick with|stay with|keep|keeping",
    "let's|lets|we'll|we will|i'll|i will",
    "use|using|switch to|switched to|instead of|rather than|replace|move to",
    "only|must|always|never|don't|do not|no need",
    "should|need to|needs to|has to|have to",
    "todo|to do|follow-up|follow up|next step|next steps|later|remaining|still|pending|left",
    "not yet|never|wasn't|weren't|didn't|did not|was not|were not|skipped|declined",
    "tomorrow|next week|by monday|by tuesday|by wednesday|by thursday|by friday|deadline|ticket",
    "would you like|want me to|shall i|should i|do you want|if you want|let me know",
    "i suggest|i recommend|i'd|i would|you could|we could|you can|consider|option",
    "fixed|fix|added|created|updated|changed|removed|implemented|committed|applied|done",
    "error|failed|fails|exception|traceback|cannot|can't|unable|broken|crash",
    "because|caused|cause|root cause|so that|since",
    "yes|ok|okay|sure|sounds good|great|perfect|thanks|thank you",
    "please|can you|could you|make|add|create|write|change|update|implement",
    "here is|here's|here are|i've|i have|now",
    "version|commit|branch|file|config|env|port|path",
)
CUE_RES = tuple(re.compile(rf"(?<![\w'])(?:{c})(?![\w'])", re.I) for c in CUES)
APPLIED_RE = re.compile(r"^(?:Applied edit to|Commit [0-9a-f]{7}|Wrote |Created |Edited |Updated )", re.M)
FAILED_RE = re.compile(r"did not conform|failed to apply|SearchReplaceNoExactMatch|Traceback|Error|Exception|Skipping edits|Skipping|declined", re.I)
PATH_RE = re.compile(r"[\w-]+\.(?:py|js|ts|tsx|jsx|json|md|yml|yaml|toml|sh|txt|html|css|go|rs|java|cpp|h|sql|env)\b|`[^`]+`")
LIST_ITEM_RE = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")
CODE_CHAR_RE = re.compile(r"[{}()\[\]=;$<>\\|\"&]")
CODE_WORD_RE = re.compile(r"^[\w$]+(?:[._][\w$]+)+\W*$|^[a-z]+[A-Z]\w*\W*$|^\W*[$#]|[=;{}]")  # a.b, snake_case, camelCase, $VAR, x=1
CODE_KEYWORDS = frozenset("const let var function def return import export if fi then else elif echo new class async await for do done".split())
MAX_CODE_SHARE = 0.12  # a "sentence" this dense in code characters is code or a command line pasted into prose: no candidate
MAX_CODE_WORDS = 0.4  # … and so is one whose words are this often identifiers, assignments or keywords ("TOKEN=x OWNER=y ./check.sh")


@dataclass(frozen=True)
class Sentence:
    text: str  # cleaned: no list marker, no Markdown emphasis, white space collapsed
    role: str  # user | assistant | summary | ""
    part: int  # index of its paragraph among the said parts
    item: bool  # a list item
    context: tuple[float, ...]  # what followed its turn (CONTEXT_NAMES)


CONTEXT_NAMES = (
    "turn_applied",
    "turn_failed",
    "turn_unanswered",
    "next_user_assents",
    "next_user_refuses",
    "last_user_turn",
    "last_assistant_turn",
    "agent_acts_after",
    "agent_turn_applied",
    "agent_turn_failed",
    "answers_question",
)
ASSENT_RE = re.compile(r"^\W*(?:yes|yep|ok(?:ay)?|sure|great|perfect|good|agreed|sounds good|do it|go ahead|thanks|thank you)\b", re.I)
REFUSE_RE = re.compile(r"^\W*(?:no|nope|don'?t|do not|stop|wait|not)\b", re.I)


def sentences(ps: list[Part]) -> tuple[list[Part], list[Sentence]]:
    """What people said (the parts of kind "said") and their sentences, in order, each with what
    followed it: a user's turn is `applied` when a tool or output after it reports an edit written,
    `failed` when one reports an error, `unanswered` when no assistant text follows it; an agent's
    sentence sees whether the user's next turn assents or refuses, and whether a tool call or code
    follows it in its turn (the agent did what it said)."""
    said = [p for p in ps if p.kind == "said"]
    turns: list[list[Part]] = [[]]  # cut before each user paragraph: a user's turn and what answered it
    for p in ps:
        if p.kind == "said" and p.role == "user":
            turns.append([])
        turns[-1].append(p)
    last_user = max((k for k, p in enumerate(said) if p.role == "user"), default=-1)
    last_agent = max((k for k, p in enumerate(said) if p.role == "assistant"), default=-1)
    context: list = []  # per said part
    for t, turn in enumerate(turns):
        rest = turn[1:]
        # from each part on to the end of its turn: an edit applied, an error, a tool call or code (each part searched once)
        applied, failed, acted = [False] * (len(turn) + 1), [False] * (len(turn) + 1), [False] * (len(turn) + 1)
        for j in range(len(turn) - 1, -1, -1):
            q = turn[j]
            tool = q.kind != "said"
            applied[j] = applied[j + 1] or (tool and APPLIED_RE.search(q.text) is not None)
            failed[j] = failed[j + 1] or (tool and FAILED_RE.search(q.text) is not None)
            acted[j] = acted[j + 1] or q.kind in ("tool", "code")
        reply = turns[t + 1][0].text if t + 1 < len(turns) else ""
        asked = bool(turn) and turn[0].kind == "said" and turn[0].role == "user" and turn[0].text.rstrip().endswith("?")
        for j, q in enumerate(turn):
            if q.kind != "said":
                continue
            user = q.role == "user"
            k = len(context)
            context.append(
                (
                    float(user and applied[1]),
                    float(user and failed[1]),
                    float(user and not any(r.kind == "said" and r.role == "assistant" for r in rest)),
                    float(not user and bool(ASSENT_RE.match(reply))),
                    float(not user and bool(REFUSE_RE.match(reply))),
                    float(k == last_user),
                    float(k == last_agent),
                    float(not user and acted[j + 1]),
                    float(not user and applied[j + 1]),
                    float(not user and failed[j + 1]),
                    float(not user and asked),
                )
            )
    out = []
    for k, p in enumerate(said):
        ctx = context[k]
        minimum = 2 if p.role == "user" else 3
        for item, block in _blocks(p.text):
            for s in split_sentences(block):
                s = clean(s)
                if len(s) <= MAX_SENTENCE_CHARS and len(content_words(s)) >= minimum and code_share(s) < MAX_CODE_SHARE and _code_words(s) < MAX_CODE_WORDS:
                    out.append(Sentence(s, p.role, k, item, ctx))
    return said, out


def _blocks(text: str) -> list[tuple[bool, str]]:
    """A paragraph's list items and runs of prose (wrapped lines joined), without table rows."""
    out: list[tuple[bool, list[str]]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("|"):
            continue
        item = bool(LIST_ITEM_RE.match(line))
        if item or not out or (out[-1][0] and not line.startswith((" ", "\t"))):
            out.append((item, []))
        out[-1][1].append(line.strip())
    return [(item, " ".join(lines)) for item, lines in out]


def code_share(s: str) -> float:
    """The share of a sentence's characters that are brackets, operators or quotes."""
    return len(CODE_CHAR_RE.findall(s)) / max(1, len(s))


def _code_words(s: str) -> float:
    """The share of a sentence's words that look like code (identifiers, variables, keywords)."""
    words = s.split()
    return sum(1 for w in words if w in CODE_KEYWORDS or CODE_WORD_RE.search(w)) / max(1, len(words))


def clean(s: str) -> str:
    s = LIST_ITEM_RE.sub("", s)
    return " ".join(s.replace("**", "").replace("`", "").split()).strip()


def features(ss: list[Sentence], n_parts: int, embed) -> np.ndarray:
    """One row per sentence: embedding, cues, role, position, shape, context. `embed(texts)` gives
    L2-normalised vectors (WordLlama's embed_documents)."""
    if not ss:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = np.asarray(embed([s.text for s in ss]), dtype=np.float32)
    rows = []
    first_user = next((s.part for s in ss if s.role == "user"), -1)
    for i, s in enumerate(ss):
        pos = s.part / max(1, n_parts - 1)
        tokens = count_tokens(s.text)
        rows.append(
            [
                *(float(bool(r.search(s.text))) for r in CUE_RES),
                float(s.role == "user"),
                float(s.role == "assistant"),
                float(s.role not in ("user", "assistant")),
                pos,
                float(pos >= 2 / 3),
                float(s.part == first_user),
                float(i == 0 or ss[i - 1].part != s.part),  # the first candidate of its paragraph: where a reply says what it is about
                float(s.item),
                float(s.text.rstrip().endswith("?")),
                math.log1p(tokens) / 4,
                float(bool(re.search(r"\d", s.text))),
                float(bool(PATH_RE.search(s.text))),
                code_share(s.text),
                _code_words(s.text),
                sum(not c.isascii() for c in s.text) / max(1, len(s.text)),
                *s.context,
            ]
        )
    return np.hstack([vectors, np.asarray(rows, dtype=np.float32)])


@dataclass(frozen=True)
class SentenceModel:
    """Multinomial logistic regression over standardised features; `thresholds`: the probability a
    sentence needs to be kept as a decision / an open item; `limits`: at most this many of each."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # features x classes
    bias: np.ndarray
    thresholds: dict[str, float]
    limits: dict[str, int]

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        if not len(x):
            return np.zeros((0, len(CLASSES)), dtype=np.float32)
        z = ((x - self.mean) / self.scale) @ self.weights + self.bias
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def to_json(self) -> str:
        def r(a: np.ndarray) -> list:
            return np.round(a.astype(np.float64), 5).tolist()

        return json.dumps(
            {
                "classes": CLASSES,
                "mean": r(self.mean),
                "scale": r(self.scale),
                "weights": r(self.weights),
                "bias": r(self.bias),
                "thresholds": self.thresholds,
                "limits": self.limits,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> "SentenceModel":
        d = json.loads(text)
        f = np.float32
        return cls(np.asarray(d["mean"], f), np.asarray(d["scale"], f), np.asarray(d["weights"], f), np.asarray(d["bias"], f), d["thresholds"], d["limits"])


@lru_cache(maxsize=1)
def shipped_model() -> SentenceModel:
    return SentenceModel.from_json(MODEL_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _embedder():
    from memtool.config import user_cache_dir
    from memtool.providers.wordllama import WordLlamaEmbedder

    return WordLlamaEmbedder(user_cache_dir() / "models")


def embed(texts: list[str]) -> np.ndarray:
    """WordLlama vectors of the texts (its matrix exported to the user cache on first use)."""
    return _embedder().embed_documents(texts)


def picks(ss: list[Sentence], probs: np.ndarray, cls: str, model: SentenceModel) -> list[int]:
    """Indices of the sentences kept as `cls` ("decision" or "open"), most probable first: its
    probability at least the model's threshold and above the other kind's; distinct texts."""
    c, other = CLASSES.index(cls), CLASSES.index("open" if cls == "decision" else "decision")
    ranked = sorted((i for i in range(len(ss)) if probs[i, c] >= model.thresholds[cls] and probs[i, c] > probs[i, other]), key=lambda i: (-probs[i, c], i))
    out: list[int] = []
    seen: set[str] = set()
    for i in ranked:
        if ss[i].text not in seen:
            seen.add(ss[i].text)
            out.append(i)
    return out[: model.limits[cls]]
