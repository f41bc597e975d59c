import numpy as np

from memtool.search.engine import top_docs, weighted_rrf


def test_top_docs_orders_and_filters():
    scores = np.array([0.1, 0.0, 0.9, 0.5, 0.7], dtype=np.float32)
    allowed = np.array([True, True, True, True, False])
    assert top_docs(scores, allowed, depth=2).tolist() == [2, 3]
    assert top_docs(scores, allowed, depth=10).tolist() == [2, 3, 0]  # zero score and disallowed doc left out


def test_weighted_rrf_formula_and_weights():
    a = (np.array([7, 8]), 1.0)  # docs best first: ranks 1, 2
    b = (np.array([8, 9]), 0.5)
    fused = weighted_rrf([a, b], k=60)
    assert fused[7] == 1 / 61
    assert fused[8] == 1 / 62 + 0.5 / 61
    assert fused[9] == 0.5 / 62
    assert max(fused, key=fused.get) == 8  # found by both channels
    assert weighted_rrf([a, (b[0], 0.0)], k=60) == {7: 1 / 61, 8: 1 / 62}
