"""Duplicates and conflicts: the same transcript twice stores nothing new; a nearly identical one
supersedes the stored entry; search shows the newer first and marks the older one."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memtool import constants as C
from memtool.app import open_memory
from memtool.context import TEMPLATES, format_hit
from memtool.dayfile import day_document, read_day
from memtool.dedupe import comparable, jaccard
from memtool.errors import BadInput
from memtool.fsutil import atomic_write_text
from memtool.memory import Session
from memtool.scaffold import init
from memtool.search.engine import Hit, newer_first
from memtool.text import content_words

WHEN = datetime(2026, 2, 10, 9, tzinfo=timezone.utc)
SESSION = """User: the payment webhook keeps timing out when Stripe retries.
Assistant: I traced it to the invoice renderer holding a database lock for the whole request.
User: so we move rendering to a background worker?
Assistant: yes, Celery with a Redis broker; the webhook now only enqueues and returns 200.
User: add an alert when the queue depth passes a thousand.
"""
RESUMED = SESSION + "Assistant: done, and the alert threshold is configurable.\n"  # the same session, a turn longer
OTHER = """User: can you help me plan the offsite agenda?
Assistant: sure, two days in Lisbon: strategy on day one, hiking and team dinner on day two.
"""


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    return open_memory(root, embedder=fake_embedder)  # the real local compressor


def compressed(mem, text: str, **kw) -> tuple:
    """One session through compress_many: its entry, and the duplicates the result reports."""
    result = mem.compress_many([Session(text, **kw)])
    return result.entries[0], result.duplicates


def day_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "memory/index").glob("*.json"))}


def test_the_same_transcript_twice_stores_nothing_new(mem, root):
    first = mem.compress(SESSION, when=WHEN, session="a")
    before = day_files(root)
    again, dups = compressed(mem, SESSION, when=WHEN + timedelta(days=30), session="b")  # another day, another name
    assert again.id == first.id
    assert [(d.kind, d.existing) for d in dups] == [("same", first.id)]
    assert "already stored as " + first.id in dups[0].message()
    assert day_files(root) == before  # not a byte written (index.json included)
    assert len(list(mem.store.iter_entries())) == 1


def test_the_same_transcript_is_found_from_the_search_caches_records_or_the_folder(mem, root, monkeypatch):
    """Transcript sizes come from the cache's entry records: while the transcripts folder is
    as the store last recorded it, it is not even listed. A transcript stored without a store update
    (by another process, say) changes the folder, which is then listed and the transcript no record
    holds stat-ed. A duplicate of each is found, from a new process."""
    from memtool.memory import Memory
    from memtool.search import read
    from memtool.store import Layout

    first = mem.compress(SESSION, when=WHEN, session="a")
    later = mem.compress(OTHER, when=WHEN + timedelta(hours=1), session="b")
    assert set(read.transcript_sizes(mem.layout)) == {first.id, later.id}

    def again(text, entry):
        fresh = open_memory(root, embedder=mem.embedder)
        got, dups = compressed(fresh, text, when=WHEN + timedelta(days=40), session="c")
        assert got.id == entry.id and [(d.kind, d.existing) for d in dups] == [("same", entry.id)]

    with monkeypatch.context() as m:
        m.setattr(Layout, "transcript_files", lambda self: pytest.fail("listed the transcripts folder"))
        for text, entry in [(SESSION, first), (OTHER, later)]:
            again(text, entry)
        m.setattr(Memory, "_index_written", lambda self, fresh, warnings, written: None)  # stored, the cache left as it was
        third = mem.compress(LATER, when=WHEN + timedelta(hours=2), session="d")
    again(LATER, third)
    assert len(list(mem.store.iter_entries())) == 3


def test_the_same_transcript_twice_in_one_call(mem):
    out = mem.compress_many([Session(SESSION, when=WHEN, name="a.md"), Session(OTHER, when=WHEN, name="b.md"), Session(SESSION, when=WHEN, name="c.md")])
    assert out[0].id == out[2].id != out[1].id
    assert [d.name for d in out.duplicates] == ["c.md"]
    assert len(list(mem.store.iter_entries())) == 2


def test_a_resumed_session_supersedes_the_stored_one(mem):
    old = mem.compress(SESSION, when=WHEN, session="s1")
    share = jaccard(frozenset(content_words(SESSION)), frozenset(content_words(RESUMED)))
    assert C.DEDUPE_JACCARD <= share < 1.0
    new, dups = compressed(mem, RESUMED, when=WHEN + timedelta(days=2), session="s1")
    assert new.id != old.id and new.supersedes == [old.id]
    dup = dups[0]
    assert (dup.kind, dup.existing, dup.new, round(dup.similarity, 3)) == ("near", old.id, new.id, round(share, 3))
    assert mem.get(new.id).supersedes == [old.id]  # on disk


def test_below_the_threshold_or_outside_the_window_is_a_new_entry(mem):
    base = mem.compress(SESSION, when=WHEN)
    other = mem.compress(OTHER, when=WHEN + timedelta(hours=1))
    assert other.supersedes == []
    late, dups = compressed(mem, RESUMED, when=WHEN + timedelta(days=C.DEDUPE_WINDOW_DAYS + 1))
    assert late.supersedes == [] and dups == []
    assert base.id not in late.supersedes


def test_transcripts_not_kept_are_not_compared(root, fake_embedder):
    init(root)
    mem = open_memory(root, embedder=fake_embedder, keep_transcripts=False)
    first = mem.compress(SESSION, when=WHEN)
    second = mem.compress(SESSION, when=WHEN + timedelta(hours=1))
    assert second.id != first.id and second.supersedes == []  # documented: only kept transcripts are compared


def test_locomo_sessions_are_far_from_the_threshold():
    """The dedupe policy never fires on the benchmark: distinct conversations share few content words."""
    data = Path(__file__).resolve().parents[2] / "shared/bench/locomo-dev"
    if not data.is_dir():
        pytest.skip("LoCoMo dev data not present")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.locomo import load_conversations

    worst = 0.0
    for conv in load_conversations(data):
        words = [(when, frozenset(content_words("\n".join(lines)))) for _, when, lines in conv.sessions]
        for i, (w1, a) in enumerate(words):
            for w2, b in words[i + 1 :]:
                if abs(w1 - w2) <= timedelta(days=C.DEDUPE_WINDOW_DAYS):
                    worst = max(worst, jaccard(a, b))
    assert 0.0 < worst < C.DEDUPE_JACCARD / 2, worst


def test_unknown_supersedes_id_is_refused(mem, root):
    with pytest.raises(BadInput, match="--supersedes ctx-20200101-deadbeef: no entry"):
        mem.compress(OTHER, when=WHEN, supersedes=["ctx-20200101-deadbeef"])
    assert not list(mem.store.iter_entries())


def hand_edit_supersedes(mem, entry_id: str, old_ids: list[str]) -> None:
    entry = mem.get(entry_id)
    path = mem.layout.day_file(entry.day)
    atomic_write_text(path, day_document(entry.day, [replace(e, supersedes=old_ids) if e.id == entry_id else e for e in read_day(path)]))
    mem.invalidate()


def test_search_shows_the_newer_first_and_marks_the_older(mem):
    # the older entry matches the query better: without the link it ranks first
    old = mem.compress("Kafka retention: Kafka topics keep Kafka events 7 days; the Kafka retention setting is per topic.", when=WHEN, session="old")
    new = mem.compress("Decided to keep events 30 days in Kafka instead.", when=WHEN + timedelta(days=40), session="new")
    unlinked = mem.search("kafka retention", kinds=("entry",))
    assert [h.id for h in unlinked][:2] == [old.id, new.id] and unlinked[0].score > unlinked[1].score

    hand_edit_supersedes(mem, new.id, [old.id])  # a person declares the conflict by hand
    hits = mem.search("kafka retention", kinds=("entry",))
    assert [h.id for h in hits][:2] == [new.id, old.id]
    assert hits[1].superseded_by == new.id and hits[0].superseded_by == ""
    only_old = mem.search("kafka retention topics per topic", kinds=("entry",), limit=1)
    assert only_old[0].id == old.id and only_old[0].superseded_by == new.id  # still marked when the newer one is not shown

    ctx = mem.context("kafka retention", template="detailed")  # both match: the bundle spends nothing on the old version
    assert ctx.included[0] == new.id and old.id not in ctx.included and old.id not in ctx.text
    alone = mem.context("kafka retention topics per topic", template="detailed", limit=1)  # only the old one is a hit
    assert alone.included == [old.id] and f"(replaced by {new.id}; it lists no open items)" in alone.text


def set_fields(mem, entry_id: str, **fields) -> None:
    entry = mem.get(entry_id)
    path = mem.layout.day_file(entry.day)
    atomic_write_text(path, day_document(entry.day, [replace(e, **fields) if e.id == entry_id else e for e in read_day(path)]))
    mem.invalidate()


def test_a_replaced_entry_shows_the_newer_entrys_open_items_not_its_own(mem):
    old_text = (
        "User: the ledger export is half done.\nAssistant: exported January; TODO: run the nightly reconciliation "
        "for the ledger export and page Dana if the totals differ.\n"
    )
    old = mem.compress(old_text, when=WHEN, session="ledger")
    new = mem.compress(
        "User: resumed: the ledger reconciliation ran clean, totals match.\nAssistant: only the archive step is left.\n",
        when=WHEN + timedelta(days=1),
        session="ledger-2",
    )
    set_fields(mem, old.id, summary="Exported January of the ledger.", action_items=["run the nightly reconciliation for the ledger export"])
    set_fields(mem, new.id, action_items=["move the ledger exports to the archive bucket"], supersedes=[old.id])

    hit = mem.search("page Dana totals differ nightly reconciliation", limit=1)[0]
    assert hit.id == old.id and hit.superseded_by == new.id
    assert hit.newer_action_items == ["move the ledger exports to the archive bucket"]
    for template in ("detailed", "chat", "summary"):
        ctx = mem.context("page Dana totals differ nightly reconciliation", template=template, limit=1)
        assert ctx.included == [old.id], template
        assert f"(replaced by {new.id}; open items now: move the ledger exports to the archive bucket)" in ctx.text, template
        assert "page Dana" not in ctx.text, template  # the old passage's open list is not shown as current


def test_mcp_search_gives_a_replaced_hit_the_newer_open_items(mem, root, fake_embedder):
    from memtool.mcp_tools import MemoryTools

    old = mem.compress("User: the Kafka retention is 7 days per topic; TODO: shorten the audit topic.\n", when=WHEN, session="k")
    new = mem.compress("User: resumed: we moved Kafka to 30 days.\n", when=WHEN + timedelta(days=2), session="k2")
    set_fields(mem, new.id, action_items=["tell the data team"], supersedes=[old.id], trusted=False)
    hits = MemoryTools(root, embedder=fake_embedder).search("audit topic shorten retention", limit=5)["hits"]
    replaced = next(h for h in hits if h["id"] == old.id)
    assert replaced["superseded_by"] == new.id and replaced["current_action_items"] == ["> tell the data team"]  # untrusted: quoted


def test_newer_first_orders_chains_and_survives_cycles():
    def hit(i: str, by: str = "") -> Hit:
        return Hit(id=i, kind="entry", score=0.0, source_session="", timestamp="2026-01-01T00:00:00Z", text=i, superseded_by=by)

    chain = [hit("a", "b"), hit("x"), hit("b", "c"), hit("c")]
    assert [h.id for h in newer_first(chain)] == ["x", "c", "b", "a"]
    cycle = [hit("a", "b"), hit("b", "a"), hit("z")]
    assert sorted(h.id for h in newer_first(cycle)) == ["a", "b", "z"] and len(newer_first(cycle)) == 3
    assert format_hit(hit("a", "b"), TEMPLATES["chat"]).startswith("- [1 January 2026] (replaced by b; it lists no open items) a")


def test_cli_compress_twice_supersedes_option_and_search_mark(root, tmp_path):
    from typer.testing import CliRunner

    from memtool.cli.main import app

    init(root)
    run = lambda *args: CliRunner().invoke(app, list(args))  # noqa: E731
    first_file, other_file = tmp_path / "webhook.md", tmp_path / "offsite.md"
    first_file.write_text(SESSION)
    other_file.write_text(OTHER)
    first = run("compress", str(first_file), "--date", "2026-02-10")
    assert first.exit_code == 0, first.output
    first_id = first.stdout.split()[0]
    again = run("compress", str(first_file), "--date", "2026-02-12")
    assert again.exit_code == 0 and again.stdout.split()[0] == first_id and "[duplicate:" in again.stdout

    linked = run("compress", str(other_file), "--date", "2026-03-01", "--supersedes", first_id, "--json")
    assert linked.exit_code == 0, linked.output
    assert json.loads(linked.stdout)[0]["supersedes"] == [first_id]
    bad = run("compress", str(other_file), "--supersedes", "ctx-19990101-00000000")
    assert bad.exit_code == BadInput.exit_code and "no entry" in bad.stderr

    table = run("search", "webhook", "--kind", "entry")
    assert "replaced by" in table.stdout


def test_an_unreadable_day_file_nearby_does_not_block_compress(mem, root):
    first = mem.compress(OTHER, when=WHEN - timedelta(days=1))
    mem.layout.day_file(first.day).write_text('{"date": "broken", "entries": [')  # doctor's business, not compress's
    stored = mem.compress(SESSION, when=WHEN)
    assert mem.get(stored.id) is not None and stored.supersedes == []


RU_DB = "User: Перенесли базу данных на новый сервер.\nAssistant: Готово, миграция завершена.\n"
RU_VACATION = "User: Обсудили отпуск Ивана в августе.\nAssistant: Записал даты отпуска.\n"
ZH_SESSION = """User: 支付回调在重试时一直超时。
Assistant: 我查到发票渲染在整个请求期间都持有数据库锁。
User: 那我们把渲染移到后台任务里？
Assistant: 对，用消息队列，回调现在只负责入队然后马上返回。
User: 队列长度超过一千的时候加一个告警。
"""
ZH_OTHER = """User: 帮我安排一下团建的日程。
Assistant: 好的，在里斯本两天：第一天讨论战略，第二天徒步和聚餐。
"""


def test_unrelated_russian_sessions_are_not_near_duplicates(mem):
    """QA's repro: with ASCII-only words both transcripts were {user, assistant}, a Jaccard of 1.0."""
    first = mem.compress(RU_DB, when=WHEN, session="db")
    second, dups = compressed(mem, RU_VACATION, when=WHEN, session="vacation")
    assert second.id != first.id and second.supersedes == [] and dups == []
    assert jaccard(frozenset(content_words(RU_DB)), frozenset(content_words(RU_VACATION))) < 0.2


def test_speaker_labels_alone_never_make_a_near_duplicate(mem):
    mem.compress("User: ok, thanks!\nAssistant: yes.\n", when=WHEN)  # content words: user, assistant
    second, dups = compressed(mem, "User: hi!\nAssistant: hey, what's up?\n", when=WHEN)  # the same two
    assert second.supersedes == [] and dups == []


def test_too_few_content_words_besides_speaker_labels_are_not_compared():
    nine = frozenset(f"word{i}" for i in range(C.DEDUPE_MIN_WORDS - 1))
    assert not comparable(nine | {"user", "assistant", "human", "system"})
    assert comparable(nine | {"tenth"})


def test_a_resumed_chinese_session_supersedes_and_an_unrelated_one_does_not(mem):
    old = mem.compress(ZH_SESSION, when=WHEN, session="zh")
    other, dups = compressed(mem, ZH_OTHER, when=WHEN, session="zh-other")
    assert other.supersedes == [] and dups == []
    new, dups = compressed(mem, ZH_SESSION + "Assistant: 好了，告警阈值可以配置。\n", when=WHEN + timedelta(days=1), session="zh")
    assert new.supersedes == [old.id] and C.DEDUPE_JACCARD <= dups[0].similarity < 1.0


LATER = """User: next, the nightly reconciliation job reports mismatched invoice totals for EU customers.
Assistant: VAT rounding: we round per line item while Stripe rounds the invoice total.
User: switch to rounding the total, and backfill the last ninety days.
Assistant: the backfill script is ready; it writes corrections as credit notes, never edits paid invoices.
User: ship it behind a feature flag and tell finance before the month closes.
"""


def test_a_long_resumed_session_of_the_same_name_continues_the_stored_one(mem):
    """A session resumed for a long while shares too few words for "near"; with the agent's session id
    it supersedes its first part all the same, and the session-start bundle shows only the newer one."""
    old = mem.compress(SESSION, when=WHEN, session="claude-4f1c")
    grown = SESSION + LATER
    assert jaccard(frozenset(content_words(SESSION)), frozenset(content_words(grown))) < C.DEDUPE_JACCARD
    new, dups = compressed(mem, grown, when=WHEN + timedelta(hours=5), session="claude-4f1c")
    assert new.supersedes == [old.id] and mem.get(new.id).supersedes == [old.id]
    dup = dups[0]
    assert (dup.kind, dup.existing, dup.new, dup.similarity) == ("continued", old.id, new.id, 1.0)
    assert dup.message().startswith("<text>: continues the session stored as " + old.id)
    bundle = mem.context("payment webhook queue alert")
    assert new.id in bundle.included and old.id not in bundle.included and old.id not in bundle.text
    recent = mem.context()  # no query: the most recent entries, old versions left out
    assert recent.included == [new.id]
    hits = mem.search("payment webhook queue alert", kinds=("entry",))  # search still lists both, the old one marked
    assert [h.id for h in hits][:2] == [new.id, old.id] and hits[1].superseded_by == new.id


def test_a_grown_transcript_continues_the_stored_one_without_a_session_name(mem):
    old = mem.compress(SESSION, when=WHEN)  # the default session name links nothing by itself
    new, dups = compressed(mem, SESSION + LATER, when=WHEN + timedelta(hours=5))
    assert new.supersedes == [old.id] and dups[0].kind == "continued"


def test_containment_alone_links_only_sessions_of_the_same_explicit_name(mem):
    reordered = "\n".join(reversed(SESSION.splitlines())) + "\n" + LATER  # every word of SESSION, not its beginning
    assert not reordered.startswith(SESSION)
    mem.compress(SESSION, when=WHEN)
    unnamed, dups = compressed(mem, reordered, when=WHEN + timedelta(hours=1))
    assert unnamed.supersedes == [] and dups == []  # both 'main': the default name links nothing
    other, dups = compressed(
        mem,
        OTHER + "User: then the flaky login test: the session cookie expires during slow CI runs.\n" + reordered,
        when=WHEN + timedelta(hours=2),
        session="b",
    )  # holds every word of both, begins with neither
    assert other.supersedes == [] and dups == []

    later = WHEN + timedelta(days=30)  # away from the entries above
    named = mem.compress(SESSION + "User: also rotate the signing keys.\n", when=later, session="s")
    again, dups = compressed(mem, reordered + "User: and the runbook.\n", when=later + timedelta(hours=1), session="s")
    dup = dups[0]
    assert again.supersedes == [named.id] and dup.kind == "continued"
    assert C.DEDUPE_CONTAINMENT <= dup.similarity < 1.0  # 'signing' and 'keys' are not in the resumed text


def test_the_third_compress_of_a_session_supersedes_the_second(mem):
    """Each version holds the ones before it: the longest contained one is superseded, so the versions chain."""
    first = mem.compress(SESSION, when=WHEN, session="s")
    second = mem.compress(SESSION + LATER, when=WHEN, session="s")
    third = mem.compress(SESSION + LATER + "User: and write it up for the changelog.\n", when=WHEN, session="s")
    assert second.supersedes == [first.id] and third.supersedes == [second.id]
    assert mem.context("payment webhook VAT rounding invoice").included[:1] == [third.id]
    assert {first.id, second.id}.isdisjoint(mem.context("payment webhook VAT rounding invoice").included)


def test_a_supersedes_cycle_keeps_its_newest_entry_current(mem):
    from memtool.search.docs import superseded_by

    a = mem.compress(SESSION, when=WHEN, session="a")
    b = mem.compress(OTHER, when=WHEN + timedelta(days=1), session="b")
    hand_edit_supersedes(mem, a.id, [b.id])
    hand_edit_supersedes(mem, b.id, [a.id])  # a person made each replace the other
    entries = list(mem.store.iter_entries())
    assert superseded_by(entries) == {a.id: b.id}  # b, the newer, stays current
    assert mem.context().included == [b.id]
    assert [h.id for h in mem.search("webhook offsite Lisbon", kinds=("entry",))] == [b.id, a.id]


BUILD = """User: run the nightly deploy of build {n} to staging and report.
Assistant: deployed build {n} to staging; smoke tests passed, migrations applied, no alerts fired.
User: good, post the release notes for build {n} in the channel.
"""


def test_templated_runs_that_differ_only_in_their_numbers_or_session_ids_are_distinct(mem):
    """A bot's nightly sessions share every content word: the numbers they state and their session ids
    tell them apart, so none supersedes (and hides from the bundle) another."""
    first = mem.compress(BUILD.format(n=41), when=WHEN)
    second, dups = compressed(mem, BUILD.format(n=42), when=WHEN + timedelta(days=1))
    assert frozenset(content_words(BUILD.format(n=41))) == frozenset(content_words(BUILD.format(n=42)))
    assert second.supersedes == [] and dups == []
    third = mem.compress(BUILD.format(n=43) + "User: thanks.\n", when=WHEN + timedelta(days=2), session="nightly-43")
    fourth, dups = compressed(mem, BUILD.format(n=43) + "User: thanks, bot.\n", when=WHEN + timedelta(days=2, hours=1), session="nightly-43b")
    assert fourth.supersedes == [] and dups == []  # near by their words, but different ids: different sessions
    bundle = mem.context("nightly deploy staging build", limit=8)
    assert {first.id, second.id, third.id, fourth.id} <= set(bundle.included)
    fork, dups = compressed(mem, BUILD.format(n=43) + "User: thanks.\nAssistant: done.\n", when=WHEN + timedelta(days=2, hours=2), session="fork-9")
    assert fork.supersedes == [third.id] and dups[0].kind == "continued"  # a prefix continues whatever the name
