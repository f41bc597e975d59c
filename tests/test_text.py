from memtool.text import count_tokens, split_sentences, tokenize, truncate_to_tokens


def test_tokenize_drops_stopwords_and_stems():
    assert tokenize("The databases were migrated to Postgres") == ["databas", "migrat", "postgr"]


def test_tokenize_keeps_identifiers_and_numbers():
    terms = tokenize("Upgrade node.js to v20 and fix auth-service")
    assert "node.j" in terms or "node.js" in terms
    assert "v20" in terms and "auth-servic" in terms


def test_count_tokens_tracks_length():
    assert count_tokens("") == 0
    short, long = count_tokens("hello world"), count_tokens("hello world " * 50)
    assert 2 <= short <= 6
    assert 40 * short <= long <= 60 * short


def test_truncate_respects_budget_and_word_boundary():
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa " * 10
    out = truncate_to_tokens(text, 20)
    assert count_tokens(out) <= 20
    assert out.endswith("…")
    assert out[:-1].rstrip().split()[-1] in text.split()


def test_truncate_keeps_short_text():
    assert truncate_to_tokens("short text", 50) == "short text"


def test_split_sentences():
    parts = split_sentences("We chose Postgres. It is faster! Is it? Yes.\n\n- a bullet\nNext: thing")
    assert parts[:3] == ["We chose Postgres.", "It is faster!", "Is it?"]
    assert "- a bullet" in parts
