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

from memtool.search.fusion import sibling_sums
from memtool.search.store import KIND_CODE, SearchIndex


def rescore(
    index: SearchIndex, docs: np.ndarray, scores: np.ndarray, qvec: np.ndarray, allowed: np.ndarray, sibling_weight: float, weight: float
) -> dict[int, float]:
    """doc -> score for the candidates `docs` (with their lexical `scores`, best first) and the other
    allowed documents of their results. Each result's best document carries the result's score, so
    grouping by result keeps the results' order."""
    if docs.size == 0:
        return {}
    group = index.group
    lexical = {g: total for g, (_, total) in sibling_sums(docs, scores, group, sibling_weight).items()}
    top = max(lexical.values()) or 1.0
    members = np.flatnonzero(allowed & np.isin(group, np.fromiter(lexical, dtype=group.dtype)))
    cos = index.dense_scores_of(qvec, members).astype(np.float64)
    member_groups = group[members]
    is_entry = index.kind[members] == KIND_CODE["entry"]
    counted = ~is_entry | ~np.isin(member_groups, member_groups[~is_entry])
    cos[~counted] = -np.inf  # an entry whose passages are candidates: its session-wide vector gives way to them
    best_cos: dict[int, float] = {}
    for g, c in zip(member_groups.tolist(), cos.tolist()):
        if c > best_cos.get(g, -np.inf):
            best_cos[g] = c
    std = float(np.fromiter(best_cos.values(), dtype=np.float64).std())
    if std == 0.0:  # one result, or all alike: the vectors cannot tell them apart
        std = 1.0
    low = float(cos[counted].min())
    cos[~counted] = low
    z = {g: (c - low) / std for g, c in best_cos.items()}
    doc_lexical = dict(zip(docs.tolist(), scores.tolist()))
    out: dict[int, float] = {}
    best_doc: dict[int, tuple[int, float]] = {}
    for d, g, c in zip(members.tolist(), member_groups.tolist(), cos.tolist()):
        own = doc_lexical.get(d, 0.0) / top + weight * (c - low) / std
        out[d] = own
        if g not in best_doc or own > best_doc[g][1]:
            best_doc[g] = (d, own)
    for g, (d, _) in best_doc.items():  # no document outscores its result: s1 <= lexical, cosine <= best
        out[d] = lexical[g] / top + weight * z[g]
    return out
