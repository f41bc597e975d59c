import subprocess
import sys

import numpy as np

from memtool.providers.wordllama import WordLlamaEmbedder, load_wordllama

TEXTS = ["We moved billing to Postgres.", "Caroline went hiking with her kids", "", "🙂 unicode ok?"]


def test_matches_wordllama_and_fast_path_is_identical(tmp_path):
    reference = load_wordllama().embed(TEXTS[:2] + TEXTS[3:], norm=True)
    first = WordLlamaEmbedder(tmp_path)  # loads wordllama, exports the matrix
    stale = tmp_path / f"{first.model}.tokenizer.json"  # an earlier export format
    stale.write_text("{}")
    got = first.embed_documents(TEXTS)
    assert got.shape == (4, 256) and got.dtype == np.float32
    assert np.allclose(got[[0, 1, 3]], reference, atol=1e-5)
    assert not got[2].any()  # empty text -> zero vector, not NaN
    assert (tmp_path / f"{first.model}.npy").is_file()
    assert not stale.exists()  # the export replaced it
    second = WordLlamaEmbedder(tmp_path)  # memory-mapped fast path, no wordllama import
    assert np.allclose(second.embed_documents(TEXTS), got, atol=1e-6)
    assert np.allclose(second.embed_query(TEXTS[0]), got[0], atol=1e-6)


def test_related_texts_are_closer():
    e = WordLlamaEmbedder()
    a, b, c = e.embed_documents(["database migration to postgres", "postgres schema migration", "painting a sunset at the lake"])
    assert a @ b > a @ c


def test_a_batch_embeds_each_text_exactly_as_alone():
    """Batches tokenize word pieces (each distinct piece once); a single text takes the plain encoder.
    Both give the same bits, whatever the spacing, line ends, Unicode or special tokens in the text."""
    import random

    rng = random.Random(5)
    alphabet = [*"ab cd\n\t\u2581xyZé中.,'", "🙂", "  ", "\u00a0", "\r\n", "<s>", "</s>", "<unk>", "Postgres", " migration"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(40))) for _ in range(300)] + TEXTS
    e = WordLlamaEmbedder()
    batch = e.embed_documents(texts)
    assert e._piecewise  # the word-piece path ran
    for text, vec in zip(texts, batch):
        assert np.array_equal(vec, e.embed_query(text)), repr(text)


def test_loading_wordllama_leaves_the_root_logger_as_it_was():
    # wordllama calls logging.basicConfig() on import: a fresh process shows whether it is undone.
    check = (
        "import logging; root = logging.getLogger(); before = (list(root.handlers), root.level)\n"
        "from memtool.providers.wordllama import load_wordllama; load_wordllama()\n"
        "assert (list(root.handlers), root.level) == before, root.handlers"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=120)
