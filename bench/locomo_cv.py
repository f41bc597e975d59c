"""LoCoMo held out by conversation: the ranking settings chosen on four conversations, scored on the fifth.

The shipped ranking settings (date_boost, date_match, answer_cue_boost, sibling_weight, semantic_weight,
dense_weight) were chosen on all five LoCoMo dev conversations, so `bench/locomo.py`'s figure is a tuned
one. This bench runs `bench/locomo.py --per-conversation` once per value of a small grid (one setting
moved at a time from the shipped defaults), then, for each conversation in turn, picks each setting's
value by the mean `full` MRR of the other four and runs that choice again: the figures on the held-out
conversations, weighted by their questions, are the held-out ones. The shipped settings' figures on
the same runs stand beside them.

    python bench/locomo_cv.py --data ../shared/bench/locomo-dev [--set embedder=wordllama] [--workdir DIR]

Prints one line per fold (held-out conversation, the settings chosen) and one JSON line last:
{"tuned": {mode: metrics}, "held_out": {mode: metrics}, "folds": [...]}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# one setting moved at a time; the first value of each is the shipped default (memtool/constants.py)
GRID = {
    "date_boost": [2.0, 0.0, 1.0, 4.0],
    "date_match": [1.0, 0.0, 0.5, 2.0],
    "answer_cue_boost": [0.3, 0.0, 0.6],
    "sibling_weight": [0.2, 0.0, 0.4],
    "semantic_weight": [0.15, 0.0, 0.3],
    "dense_weight": [0.0, 0.3],
}
MODES = ("entries", "full")
METRICS = ("R@1", "R@5", "MRR", "answer_in_context")


def run(data: str, settings: dict[str, float], extra: list[str], out: Path) -> dict:
    """bench/locomo.py with these settings, its per-conversation figures."""
    if not out.exists():
        sets = [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
        cmd = [sys.executable, str(HERE / "locomo.py"), "--data", data, "--mode", "both", "--per-conversation", "--out", str(out), *sets]
        subprocess.run([*cmd, *extra], check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text(encoding="utf-8"))["per_conversation"]


def weighted(per: dict, convs: list[str], mode: str, metric: str) -> float:
    """The question-weighted mean of one metric over these conversations."""
    n = sum(per[c][mode]["n"] for c in convs)
    return sum(per[c][mode][metric] * per[c][mode]["n"] for c in convs) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="passed to bench/locomo.py (e.g. embedder=wordllama)")
    parser.add_argument("--workdir", type=Path, help="keep each run's JSON here (a rerun reuses them)")
    args = parser.parse_args()
    extra = [a for s in args.set for a in ("--set", s)]
    work = args.workdir or Path(tempfile.mkdtemp(prefix="locomo-cv-"))
    work.mkdir(parents=True, exist_ok=True)
    shipped = {k: values[0] for k, values in GRID.items()}

    def runs_of(settings: dict[str, float]) -> dict:
        name = "_".join(f"{k}={v}" for k, v in sorted(settings.items()))
        return run(args.data, settings, extra, work / f"{name}.json")

    base = runs_of(shipped)
    convs = sorted(base)
    moved = {(k, v): runs_of({**shipped, k: v}) for k, values in GRID.items() for v in values[1:]}
    folds = []
    held: dict[str, dict[str, float]] = {m: dict.fromkeys(METRICS, 0.0) for m in MODES}
    total = {m: 0 for m in MODES}
    for c in convs:
        train = [x for x in convs if x != c]
        chosen = dict(shipped)
        for k, values in GRID.items():
            score = {v: weighted(base if v == values[0] else moved[(k, v)], train, "full", "MRR") for v in values}
            chosen[k] = max(values, key=lambda v: (score[v], v == values[0]))  # a tie keeps the default
        per = runs_of(chosen)
        folds.append({"held_out": c, "chosen": {k: v for k, v in chosen.items() if v != shipped[k]}, "full_MRR": per[c]["full"]["MRR"]})
        print(f"held out {c}: chose {folds[-1]['chosen'] or 'the shipped settings'}; full MRR {per[c]['full']['MRR']:.4f}", flush=True)
        for m in MODES:
            n = per[c][m]["n"]
            total[m] += n
            for metric in METRICS:
                held[m][metric] += per[c][m][metric] * n
    held_out = {m: {metric: round(held[m][metric] / total[m], 4) for metric in METRICS} for m in MODES}
    tuned = {m: {metric: round(weighted(base, convs, m, metric), 4) for metric in METRICS} for m in MODES}
    print(json.dumps({"tuned": tuned, "held_out": held_out, "folds": folds}))


if __name__ == "__main__":
    main()
