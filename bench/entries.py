"""Entry quality of the offline compressor on the coding-session benchmarks, tuned and held out.

Runs memtool's local compressor in-process over `coding-sessions` (12 synthetic) and `coding-real`
(20 real) from ../shared/bench (or --bench DIR), each transcript read as `memory compress` reads
it (memtool.transcripts, then the configured redaction), with the stored entries' word counts
handed on as `memory compress` does, and scores every entry with the benchmark's own scorer
(score_entries.score_entry: decisions, action items, people, systems, key facts, gist, junk).

    python bench/entries.py [--bench DIR]            # the shipped sentence model: per-set means
    python bench/entries.py --cv [--folds K]         # also cross-validated by file (default: leave one file out)
    python bench/entries.py --json                    # per file

--cv trains the sentence model (bench/train_sentences.py) on all files but the held-out ones,
over the union of both sets, and scores the held-out files with it: the held-out figure is the one
that counts; the shipped model (trained on all 32 files) scores its own training files. One JSON
line last: {"shipped": {set: means}, "cv": {set: means}}.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sentence_labels import DEFAULT_BENCH, SETS, Session, load, scorer  # noqa: E402

from memtool.config import Settings  # noqa: E402
from memtool.providers import Hints  # noqa: E402
from memtool.providers.local import LocalCompressor  # noqa: E402
from memtool.redact import redact  # noqa: E402
from memtool.text import content_words  # noqa: E402

FIELDS = ("decisions_f1", "action_items_f1", "people_f1", "systems_f1", "key_fact_coverage", "gist_recall", "junk_keyword_rate")


def entry_of(compressor, text: str, df: Counter, n: int) -> dict:
    out = compressor.compress(text, Hints(doc_freq=df, n_docs=n))
    e = out.entities
    return {
        "summary": out.summary,
        "keywords": out.keywords,
        "decisions": out.decisions,
        "action_items": out.action_items,
        "entities": {"people": e.people, "systems": e.systems, "dates": e.dates},
    }


def score(sessions: list[Session], compressor_for, se) -> dict[str, dict]:
    """Per file scores; `compressor_for(session)` gives the compressor to read it with. Files go in
    name order within each set, each seeing the word counts of the entries before it in its set."""
    rows: dict[str, dict] = {}
    for name in SETS:
        df: Counter = Counter()
        n = 0
        for s in (s for s in sessions if s.set == name):
            entry = entry_of(compressor_for(s), s.text, df, n)
            rows[s.name] = {k: v for k, v in se.score_entry(entry, s.gold).items() if k in FIELDS or k == "detail"}
            df.update(set(content_words(" ".join([entry["summary"], *entry["keywords"], *entry["decisions"], *entry["action_items"]]))))
            n += 1
    return rows


def means(sessions: list[Session], rows: dict[str, dict]) -> dict[str, dict]:
    out = {}
    for name in (*SETS, "all"):
        names = [s.name for s in sessions if name in (s.set, "all")]
        out[name] = {k: round(sum(rows[f][k] for f in names) / len(names), 3) for k in FIELDS} | {"files": len(names)}
    return out


def cross_validated(sessions: list[Session], folds: int, se) -> dict[str, dict]:
    from train_sentences import all_features, train

    feats = all_features(sessions)
    k = folds or len(sessions)
    held_model = {}
    for fold in range(k):
        held = [s for i, s in enumerate(sessions) if i % k == fold]
        model = train([s for s in sessions if s not in held], feats, se)
        held_model.update({s.name: model for s in held})
        print(f"fold {fold + 1}/{k}: {[s.name for s in held]} thresholds {model.thresholds} limits {model.limits}", file=sys.stderr, flush=True)
    return score(sessions, lambda s: LocalCompressor(sentence_model=held_model[s.name]), se)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--cv", action="store_true", help="also cross-validate the sentence model by file")
    ap.add_argument("--folds", type=int, default=0, help="k folds by file (files i with i %% k == fold held out); 0: leave one file out")
    ap.add_argument("--json", action="store_true", help="print each file's scores")
    args = ap.parse_args(argv)
    se = scorer(args.bench)
    patterns = Settings().redact_patterns
    sessions = load(args.bench)
    for s in sessions:
        s.text = redact(s.text, patterns)[0]
    result = {"shipped": score(sessions, lambda s: LocalCompressor(), se)}
    if args.cv:
        result["cv"] = cross_validated(sessions, args.folds, se)
    for kind, rows in result.items():
        if args.json:
            for name, row in rows.items():
                print(json.dumps({"run": kind, "file": name, **row}))
        for name, m in means(sessions, rows).items():
            print(f"{kind:8} {name:16} " + " ".join(f"{k.split('_')[0][:6]} {m[k]:.3f}" for k in FIELDS) + f"  ({m['files']} files)")
    print(json.dumps({kind: means(sessions, rows) for kind, rows in result.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
