"""Typo tolerance: a query word no document holds is also searched as the indexed words an edit or two away."""

import json
from datetime import datetime, timezone

import numpy as np
import pytest

from memtool.app import open_memory
from memtool.scaffold import init
from memtool.search.engine import Query
from memtool.search.typos import query_terms


def when(day):
    return datetime(2026, 2, day, 9, tzinfo=timezone.utc)


SESSIONS = {
    "db": "Alice: we moved the billing database to Postgres and the deployment went fine.",
    "k8s": "Bob: the Kubernetes cluster upgrade is blocked on the ingress controller.",
    "ui": "Cara: dark mode for the settings page shipped; the contrast checker passed.",
}


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder, dense_fallback=False)  # word matches only: no vector fill-in
    for i, (name, text) in enumerate(SESSIONS.items()):
        m.compress(text, when=when(1 + i), session=name)
    return m


def sessions(m, text, **kw):
    return [h.source_session for h in m.search(Query(text=text, **kw))]


def fixes(m, text: str) -> dict[str, list[str]]:
    """What the search of `text` says it searched instead of a query word no document holds."""
    return m.search(Query(text=text)).typo_fixes


@pytest.mark.parametrize(
    "query, session",
    [
        ("postgress", "db"),  # a letter added
        ("databse", "db"),  # a letter dropped
        ("deploymnet", "db"),  # two neighbours swapped: one edit
        ("kubernetis", "k8s"),  # a letter changed
        ("contarst chekcer", "ui"),  # two words, each one swap off
        ("depolymant", "db"),  # two edits in a word of 8+ letters
    ],
)
def test_a_misspelled_word_finds_the_session(mem, query, session):
    assert sessions(mem, query)[:1] == [session]
    assert fixes(mem, query)  # and says what it searched instead


def test_without_typo_weight_a_misspelled_word_finds_nothing(root, mem, fake_embedder):
    plain = open_memory(root, embedder=fake_embedder, dense_fallback=False, typo_weight=0)
    assert sessions(plain, "postgress") == []
    assert fixes(plain, "postgress") == {}


@pytest.mark.parametrize(
    "query",
    [
        "dtabse",  # 6 letters: one edit allowed, 'database' is two away
        "chckr",  # 5 letters, two edits from 'checker'
        "clustr",  # 6 letters: 'cluster' is one edit away ...
    ],
)
def test_edit_limits_follow_word_length(mem, query):
    found = sessions(mem, query)
    if query == "clustr":
        assert found == ["k8s"]  # ... so it is found
    else:
        assert found == [] and fixes(mem, query) == {}


def test_short_words_and_known_words_are_never_corrected(mem):
    assert sessions(mem, "mod") == []  # 3 letters: 'mode' is one edit away, but short words are too ambiguous
    assert fixes(mem, "mod") == {}
    assert sessions(mem, "billing") == ["db"]
    assert fixes(mem, "billing") == {}  # an indexed word is searched as it is


def test_a_common_word_is_meant_as_written(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder, dense_fallback=False)
    m.compress("Hal: the launch party was lively and the statue in the lobby got a hat.", when=when(1), session="party")
    assert sessions(m, "likely status") == []  # one edit from 'lively' and 'statue', but words of their own
    assert fixes(m, "likely status") == {}
    assert sessions(m, "livley") == ["party"]  # not a word: corrected


def test_a_word_whose_stem_is_indexed_is_not_corrected(mem):
    assert fixes(mem, "deployments") == {}  # not written anywhere, but it stems like 'deployment'


def test_corrections_count_less_than_the_word_itself(mem):
    index = mem.view()
    exact = index.bm25_scores(["postgr"])
    fixed = query_terms(index, "postgress", 0.5)
    assert fixed.fixes == {"postgress": ["postgres"]}
    assert np.allclose(index.bm25_scores(fixed.terms, fixed.weights), 0.5 * exact)


def test_the_most_frequent_of_equally_close_words_is_searched_first(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder, dense_fallback=False)
    for i in range(3):
        m.compress(f"Dan: the router crashed again, router logs attached ({i}).", when=when(1 + i), session=f"router{i}")
    m.compress("Eve: the rooter plugin is a joke name.", when=when(5), session="rooter")
    m.compress("Fay: a routes table was added.", when=when(6), session="routes")
    terms = query_terms(m.view(), "routef", 0.8)
    assert terms.fixes["routef"][0] == "router"  # 'router' is in 3 documents, 'routes' in 1: both one edit away
    assert "rooter" not in terms.fixes["routef"]  # two edits: only the closest words are searched


def test_words_of_a_later_change_set_are_offered_too(mem):
    mem.view()  # the store built from the three sessions
    mem.compress("Gus: the Terraform staging plan timed out.", when=when(9), session="tf")
    assert sessions(mem, "terrafrom")[:1] == ["tf"]  # 'terraform' came with the compress's change set


def test_cli_says_what_it_searched_on_stderr_and_json_stays_clean(root):
    from typer.testing import CliRunner

    from memtool.cli.main import app

    def memory(*args):
        out = CliRunner().invoke(app, list(args))  # stdout and stderr kept apart
        assert out.exit_code == 0, out.output
        return out

    memory("init")
    (root / "t.md").write_text(SESSIONS["db"] + "\n", encoding="utf-8")
    memory("compress", "t.md")
    out = memory("search", "postgress", "--json")
    assert len(json.loads(out.stdout)) == 1
    assert "no document has 'postgress': also searched 'postgres'" in out.stderr
