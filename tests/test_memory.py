"""The write path and the read path through the Memory facade, on real files."""

import json
from datetime import datetime, timezone

import pytest

from memtool.app import open_memory
from memtool.errors import BadInput, NotAMemoryRoot
from memtool.memory import Session
from memtool.quoting import comment_tags
from memtool.scaffold import init
from memtool.search.engine import Query
from tests.conftest import embedding_path, read_vector_at, transcript_path

AUTH = "Alice: We decided to use Auth0 instead of custom JWT handling. Sarah owns the migration to Auth0 before the March 15 deadline."
DB = "Bob: The invoices query in Postgres was slow; we added an index on customer_id and the report now loads in 0.8 seconds."
ART = "Carol: I painted a sunset over the lake last weekend and joined a pottery class with my kids."


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    return open_memory(root, embedder=fake_embedder)


def when(day):
    return datetime(2026, 2, day, 14, 30, tzinfo=timezone.utc)


def test_compress_writes_every_layer2_file(mem, root):
    e = mem.compress(AUTH, when=when(7), session="s1")
    assert e.id.startswith("ctx-20260207-") and e.timestamp == "2026-02-07T14:30:00.000Z"
    day = json.loads((root / "memory/index/2026-02-07.json").read_text())
    assert [x["id"] for x in day["entries"]] == [e.id]
    index = json.loads((root / "memory/index/index.json").read_text())
    assert index["version"] == "2.0" and index["provider"] == "local" and [x["id"] for x in index["entries"]] == [e.id]
    emb = read_vector_at(embedding_path(root, e.id))
    assert (emb["model"], emb["dim"], len(emb["embedding"])) == ("fake-hash-64", 64, 64)
    assert emb["content_hash"] == e.content_hash()
    assert transcript_path(root, e.id).read_text().strip() == AUTH
    assert e.tokens_compressed > 0 and e.compression_ratio.endswith(":1")
    assert list(day["entries"][0])[:3] == ["id", "timestamp", "summary"]  # seed 003 key order


def test_json_is_deterministic_and_time_ordered(mem, root):
    mem.compress(DB, when=when(7).replace(hour=18))
    mem.compress(AUTH, when=when(7).replace(hour=9))
    text = (root / "memory/index/2026-02-07.json").read_text()
    assert text.endswith("}\n")
    stamps = [x["timestamp"] for x in json.loads(text)["entries"]]
    assert stamps == sorted(stamps)
    before = text
    mem.store.write_entries(mem.store.iter_entries().__next__() and list(mem.store.iter_entries()))
    assert (root / "memory/index/2026-02-07.json").read_text() == before  # rewrite is byte-identical


def test_batch_import(mem, root):
    sessions = [Session(text=f"Session {i}: we discussed topic number {i} with Dana.", when=when(1 + i % 9), session=f"s{i}") for i in range(30)]
    entries = mem.compress_many(sessions, batch=7)
    assert len(entries) == 30 == len({e.id for e in entries})
    assert len(json.loads((root / "memory/index/index.json").read_text())["entries"]) == 30
    assert len(list((root / "memory/index/embeddings").rglob("*.vec"))) == 30


def test_search_finds_and_filters(mem):
    a = mem.compress(AUTH, when=when(2), session="auth")
    d = mem.compress(DB, when=when(5), session="db", importance="high")
    mem.compress(ART, when=when(9), session="art")
    hits = mem.search("Auth0 migration deadline", limit=3)
    assert hits[0].id == a.id and hits[0].kind == "entry" and hits[0].source_session == "auth"
    assert mem.search(Query(text="Postgres index", limit=3))[0].id == d.id
    assert [h.id for h in mem.search(Query(text="Auth0 Postgres", since=when(4), kinds=("entry",)))] == [d.id]
    assert [h.id for h in mem.search(Query(text="Auth0 Postgres", until=when(3), kinds=("entry",)))] == [a.id]
    assert [h.id for h in mem.search(Query(text="Auth0 Postgres", min_importance="high", kinds=("entry",)))] == [d.id]
    assert mem.search("zzzz qqqq").hits == [] or all(h.score > 0 for h in mem.search("zzzz qqqq"))


def test_transcript_hit_returns_entry_with_passage(mem):
    long = (
        AUTH
        + "\n"
        + "\n".join(f"Alice: filler line {i} about nothing in particular." for i in range(60))
        + "\nBob: the staging password rotation happens on Fridays at noon."
    )
    e = mem.compress(long, when=when(3), session="long")
    hit = mem.search(Query(text="when does the staging password rotation happen", kinds=("entry", "transcript")))[0]
    assert hit.id == e.id and hit.kind == "entry"
    assert "Fridays at noon" in hit.passage
    assert hit.text == e.summary


def test_markdown_layers_are_searchable(mem, root):
    (root / "MEMORY.md").write_text("# MEMORY\n\n## Key decisions\n\n- Deploys happen only on Tuesdays via ArgoCD.\n")
    mem.log("Investigated the Kafka consumer lag on the orders topic.")
    kinds = {}
    for h in mem.search("ArgoCD deploys Kafka consumer lag", limit=5):
        kinds.setdefault(h.kind, h)  # best hit of each kind
    assert kinds["memory"].ref.startswith("MEMORY.md#L")
    assert "Kafka consumer lag" in kinds["log"].text


def test_context_packs_within_budget_and_reports_drops(mem, root):
    (root / "MEMORY.md").write_text("# MEMORY\n\n" + "Important fact about the architecture. " * 200)
    for i in range(12):
        mem.compress(AUTH + f" Detail number {i} about the Auth0 rollout." * 5, when=when(1 + i % 9), session=f"s{i}")
    res = mem.context("Auth0 migration", budget=400)
    from memtool.text import count_tokens

    assert res.tokens == count_tokens(res.text) <= 400
    assert "## MEMORY.md" in res.text and "Auth0" in res.text
    assert res.truncated and any("MEMORY.md" in d for d in res.dropped)


def test_context_without_query_uses_recent_and_today_log(mem, root):
    mem.compress(DB, when=when(5), session="db")
    mem.log("Started the reporting rewrite.")
    res = mem.context(None, budget=800)
    assert "Started the reporting rewrite." in res.text
    assert "Today's log" in res.text and "0.8 seconds" in res.text
    assert res.text.count("Started the reporting rewrite.") == 1  # not repeated as a hit


def test_bad_input_changes_nothing(mem, root):
    mem.compress(AUTH, when=when(2))
    snapshot = {p: p.read_bytes() for p in (root / "memory").rglob("*") if p.is_file() and ".cache" not in p.parts}
    for bad in ["", "   \n\t", "abc\x00def"]:
        with pytest.raises(BadInput):
            mem.compress(bad)
    with pytest.raises(BadInput, match="importance"):
        mem.compress(DB, importance="urgent")
    after = {p: p.read_bytes() for p in (root / "memory").rglob("*") if p.is_file() and ".cache" not in p.parts}
    assert after == snapshot


def test_not_a_memory_root(tmp_path):
    with pytest.raises(NotAMemoryRoot, match="memory init"):
        open_memory(tmp_path / "nowhere")


def test_index_json_complete_when_batches_divide_evenly(mem, root):
    sessions = [Session(text=f"Note {i}: the quarterly report for Erin needs the churn chart.", when=when(1 + i % 5)) for i in range(8)]
    mem.compress_many(sessions, batch=4)  # two full batches, no partial one
    assert len(json.loads((root / "memory/index/index.json").read_text())["entries"]) == 8


def test_untouched_templates_are_not_memory(mem, root):
    mem.compress(DB, when=when(5), session="db")
    kinds = {h.kind for h in mem.search("agents session protocol memory compress", limit=10)}
    assert "memory" not in kinds  # AGENTS.md / MEMORY.md as `memory init` wrote them are boilerplate
    (root / "AGENTS.md").write_text((root / "AGENTS.md").read_text() + "\n## Local rule\n- Never deploy on Fridays.\n")
    mem.invalidate()  # edited outside this Memory (each command opens a fresh one)
    hits = mem.search("deploy Fridays", limit=3)
    assert hits[0].kind == "memory" and hits[0].ref.startswith("AGENTS.md#L")


def files_under(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".cache" not in p.parts and p.name != ".lock"}


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(when=datetime(202, 2, 4, tzinfo=timezone.utc)), "out of range"),  # a typo'd year: its day file name would not be a date
        (dict(when=datetime(9999, 6, 1, tzinfo=timezone.utc)), "out of range"),
        (dict(importance="bogus"), "importance must be one of"),
        (dict(source="bogus"), "source must be one of"),
    ],
)
def test_session_options_are_checked_before_anything_is_stored(mem, root, kw, message):
    """Also for a session already stored: the duplicate shortcut must not skip the checks."""
    mem.compress(AUTH, when=when(7))
    before = files_under(root)
    for text in (AUTH, DB):
        with pytest.raises(BadInput, match=message):
            mem.compress(text, **{"when": when(7), **kw})
    with pytest.raises(Exception, match="bogus"):
        mem.compress(AUTH, when=when(7), provider="bogus")
    assert files_under(root) == before


def test_a_hand_edited_timestamp_out_of_range_is_reported_not_indexed(mem, root):
    e = mem.compress(AUTH, when=when(7))
    day = root / "memory/index/2026-02-07.json"
    day.write_text(day.read_text().replace("2026-02-07T14:30", "0202-02-07T14:30"))
    from memtool.dayfile import read_day
    from memtool.errors import StoreCorrupt

    with pytest.raises(StoreCorrupt, match="out of range"):
        read_day(day)
    assert mem.search("Auth0").hits == [] or all(h.id != e.id for h in mem.search("Auth0"))


def test_context_without_query_skips_an_unreadable_day_file(mem, root):
    """The session-start hook runs `memory context` with no query: one bad hand edit must not blank it."""
    mem.compress(AUTH, when=when(4))
    mem.compress(DB, when=when(5))
    (root / "memory/index/2026-02-04.json").write_text('{"date": "2026-02-04", "entries": [ {broken')
    res = mem.context()
    assert "invoices" in res.text and "Auth0" not in res.text
    assert any("2026-02-04.json" in w and "memory doctor" in w for w in res.warnings)


def test_context_budget_zero_is_refused_not_defaulted(mem):
    mem.compress(AUTH, when=when(7))
    with pytest.raises(BadInput, match="at least 50"):
        mem.context("Auth0", budget=0)


def test_context_dates_are_local_like_the_anchored_entity_dates(mem, monkeypatch):
    """A session on 7 Feb at 08:00 in Tokyo is 6 Feb in UTC: its label and its 'yesterday' say 7 and 6 Feb."""
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        local = datetime(2026, 2, 7, 8, 0).astimezone()
        e = mem.compress("User: Yesterday we deployed the ocelot service to the Frankfurt cluster.", when=local)
        assert "yesterday (6 february 2026)" in [d.lower() for d in e.entities.dates]
        chat = mem.context("ocelot service deployed").text
        assert "[7 February 2026]" in chat and "(6 February 2026)" in chat and "5 February" not in chat
        assert "2026-02-07T08:00+09:00" in mem.context("ocelot service deployed", template="detailed").text
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_hit_cut_to_fit_keeps_some_of_its_content(mem):
    """The last hit that does not fit whole is cut; if the cut would leave only its header line
    (the detailed template's is long), it is dropped instead of being listed as included."""
    import re

    for day in range(1, 9):
        mem.compress(
            f"Alice: the quokka webhook retry policy, part {day}: backoff doubles from one to sixty-four seconds, jitter added, "
            f"dead letters go to the quokka audit queue and page the on-call engineer after five failures.",
            when=when(day),
            session=f"s{day}",
        )
    for budget in range(120, 700, 9):
        res = mem.context("quokka webhook retry", budget=budget, template="detailed")
        for i in res.included:
            after = res.text.split(f"entry {i} ", 1)[1].split("]", 1)[1]
            content = re.split(r"\n\n\[entry ", after, maxsplit=1)[0]
            assert len(content.split()) >= 3, (budget, i, content)


SESSION_SECRET = "ghp_" + "R7tY2uI9oP4aS6dF8gH1jK3lZ5xC7vB9nM2q"
AGENT_SECRET = "sk-ant-api03-" + "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7"


def _files_holding(root, secret):
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_session_and_agent_names_are_redacted_before_anything_is_written(mem, root):
    e = mem.compress(AUTH, when=when(7), session=f"deploy {SESSION_SECRET}", agent=f"bot {AGENT_SECRET}")
    mem.log("rotated the deploy key", session=f"deploy {SESSION_SECRET}", agent=f"bot {AGENT_SECRET}", source="ai_inferred")
    assert e.source_session == "deploy [REDACTED:github_token]" and e.agent == "bot [REDACTED:anthropic_key]"
    assert _files_holding(root, SESSION_SECRET) == [] and _files_holding(root, AGENT_SECRET) == []
    day_log = next((root / "memory").glob("*.md")).read_text(encoding="utf-8")
    line = next(x for x in day_log.splitlines() if "rotated the deploy key" in x)  # tag values are escaped (tests/test_quoting.py)
    assert comment_tags(line)["session"] == "deploy [REDACTED:github_token]" and "[REDACTED:anthropic_key]" in day_log


# -- typed results ---------------------------------------------------------------------------------
def test_compress_many_returns_what_it_stored_and_the_duplicates_it_found(mem):
    first = mem.compress_many([Session(AUTH, when=when(2), session="a")])
    assert [e.source_session for e in first.entries] == ["a"] and first.duplicates == [] and first.warnings == []
    again = mem.compress_many([Session(AUTH, when=when(9), session="b"), Session(DB, when=when(9), session="db")])
    assert [e.id for e in again.entries][:1] == [first.entries[0].id]  # the stored entry the repeat names
    assert [(d.kind, d.existing, d.name) for d in again.duplicates] == [("same", first.entries[0].id, "<text>")]
    assert first.repeats == set() and again.repeats == {0}  # the session at position 0 added nothing
    assert again.superseded == [] and len(list(mem.store.iter_entries())) == 2
    assert list(again) == again.entries and len(again) == 2  # iterating a result iterates its entries
    twice = mem.compress_many([Session(ART, when=when(9), session="c"), Session(ART, when=when(9), session="c")])
    assert twice.entries[0].id == twice.entries[1].id and twice.repeats == {1}  # stored by this call, then repeated


def test_compress_many_names_the_entries_a_session_supersedes(mem):
    old = mem.compress(AUTH, when=when(2), session="a")
    new = mem.compress_many([Session(DB, when=when(3), session="b", supersedes=[old.id])])
    assert new.entries[0].supersedes == [old.id] and new.superseded == [old.id]


def test_search_returns_its_typo_fixes_and_warnings_with_the_hits(mem):
    mem.compress(DB, when=when(5), session="db")
    fixed = mem.search(Query(text="postgrse"))
    assert [h.source_session for h in fixed.hits][:1] == ["db"]
    assert fixed.typo_fixes == {"postgrse": ["postgres"]} and fixed.warnings == []
    plain = mem.search(Query(text="invoices"))
    assert plain.typo_fixes == {} and [h.id for h in plain] == [h.id for h in plain.hits]  # one search's fixes, not the last one's


def test_context_carries_its_own_warnings(mem, root):
    mem.compress(DB, when=when(5))
    (root / "memory/index/2026-02-05.json").write_text("{broken")
    bad = mem.context()
    assert any("2026-02-05.json" in w for w in bad.warnings)
    (root / "memory/index/2026-02-05.json").unlink()
    assert mem.context().warnings == []  # a later call does not inherit the earlier one's


def test_context_memtool_injected_is_never_stored_whatever_door_the_text_comes_in_by(mem, root):
    given = mem.context(None, budget=400).text or "## Relevant past work\n- nothing yet"
    e = mem.compress(f"user: <memtool-context>\n{given}\n</memtool-context>\n{DB}", when=when(5), session="db")
    stored = transcript_path(root, e.id).read_text()
    assert "memtool-context" not in stored and "Relevant past work" not in stored and "0.8 seconds" in stored
    with pytest.raises(BadInput, match="empty"):  # nothing but injected context: nothing to compress, nothing stored
        mem.compress("<hook_context>## Relevant past work\n- [5 February 2026] invoices index</hook_context>", when=when(6))


MIGRATION = (
    "user: How do we migrate the orders table without downtime?\n\n"
    "assistant: We decided to use dual writes behind a feature flag, then backfill.\n\n"
    "user: TODO: Dana writes the cut-over runbook by Friday.\n"
)


def test_the_start_context_carries_what_was_decided_and_what_is_open(mem, root):
    e = mem.compress(MIGRATION, when=when(5), session="mig")
    assert e.decisions and e.action_items
    text = mem.context(None, budget=2000).text
    assert f"Decided: {e.decisions[0].rstrip('.')}" in text and f"Open: {e.action_items[0].rstrip('.')}" in text
    assert "Dana writes the cut-over runbook" in mem.context("orders table migration", budget=2000).text
