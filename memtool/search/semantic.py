"""The semantic stage: re-score the results that matched by words with the query's vector.

Rank fusion (RRF) of BM25 with a vector channel keeps only ranks, and on conversation memory it
lowered recall (docs/benchmarks.md: LoCoMo). This stage keeps score sizes instead and works per result (an
entry with its transcript chunks), not per chunk:

    score(result) = lexical(result) / best lexical  +  weight * z(result)

`lexical` is the result's fused word-match score (its best passages summed with sibling support);
`z` is the cosine of the result's most similar document to the query, in standard deviations
from the mean over the candidate results, counted from the lowest document's (so that no score is
negative: recency and use boosts multiply scores). Only the candidates' documents are scored, so
the cost follows the candidates, not the store.

An entry's own vector stands for its whole session (memtool.session_vectors). It counts only when
none of the session's passages is a candidate (entries searched alone, or a transcript not kept):
the best passage is sharper evidence than a session's mean (LoCoMo dev `full` with e5: MRR 0.845
with the entry counted like a passage, 0.860 without; docs/benchmarks.md).
"""

from __future__ import annotations

import numpy as np

from memtool.search.read import KIND_CODE, CacheView
from memtool.search.union import UnionView


def run_starts(keys: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts in sorted `keys`."""
    return np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))


SIBLINGS_COUNTED = 3  # documents of one result whose scores add up in `sibling_sums`


def sibling_sums(docs: np.ndarray, scores: np.ndarray, group: np.ndarray, weight: float) -> dict[int, tuple[int, float]]:
    """result -> (position of its best doc in `docs`, s1 + w*s2 + w^2*s3) for `docs` best first,
    `scores` theirs: a result whose documents match in several places counts them all."""
    sums: dict[int, tuple[int, float]] = {}
    counted: dict[int, int] = {}
    for i, (g, s) in enumerate(zip(group[docs].tolist(), scores.tolist())):
        c = counted.get(g, 0)
        if c == 0:
            sums[g] = (i, s)
        elif c < SIBLINGS_COUNTED:
            sums[g] = (sums[g][0], sums[g][1] + weight**c * s)
        counted[g] = c + 1
    return sums


def rescore(
    index: CacheView | UnionView, docs: np.ndarray, scores: np.ndarray, qvec: np.ndarray, allowed: np.ndarray, sibling_weight: float, weight: float
) -> dict[int, float]:
    """doc -> score for the candidates `docs` (with their lexical `scores`, best first) and the other
    allowed documents of their results. Each result's best document carries the result's score, so
    grouping by result keeps the results' order."""
    if docs.size == 0:
        return {}
    group = index.group
    lexical = {g: total for g, (_, total) in sibling_sums(docs, scores, group, sibling_weight).items()}
    top = max(lexical.values()) or 1.0
    of_result = np.zeros(int(group.max()) + 1, dtype=bool)
    of_result[np.fromiter(lexical, dtype=np.int64)] = True
    members = np.flatnonzero(allowed & of_result[group])  # ascending
    cos = index.dense_scores_of(qvec, members).astype(np.float64)
    member_groups = group[members]
    is_entry = index.kind[members] == KIND_CODE["entry"]
    counted = ~is_entry | ~np.isin(member_groups, member_groups[~is_entry])  # an entry whose passages are candidates: its session-wide vector gives way to them
    # each result's best cosine over its counted documents, results in the order they first appear
    at = np.flatnonzero(counted)
    by_result = at[np.argsort(member_groups[at], kind="stable")]
    starts = run_starts(member_groups[by_result])
    shown = np.argsort(by_result[starts], kind="stable")
    results, best_cos = member_groups[by_result[starts]][shown], np.maximum.reduceat(cos[by_result], starts)[shown]
    std = float(best_cos.std()) or 1.0  # 0: one result, or all alike: the vectors cannot tell them apart
    low = float(cos[counted].min())
    cos[~counted] = low
    lex = np.zeros(members.size, dtype=np.float64)
    lex[np.searchsorted(members, docs)] = np.asarray(scores, dtype=np.float64)
    own = lex / top + weight * (cos - low) / std
    # no document outscores its result: s1 <= lexical, cosine <= best
    order = np.lexsort((-own, member_groups))  # by result, its best document first (a stable sort: the first of equals)
    bests = order[run_starts(member_groups[order])]
    z = dict(zip(results.tolist(), ((best_cos - low) / std).tolist()))
    for g, pos in zip(member_groups[bests].tolist(), bests.tolist()):
        own[pos] = lexical[g] / top + weight * z[g]
    return dict(zip(members.tolist(), own.tolist()))
