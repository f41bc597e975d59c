"""`memory entities` / `memory entity` / `memory entities --pages`: counts, timelines, browsable pages."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from memtool import constants as C
from memtool.app import open_memory
from memtool.cli.main import app
from memtool.entities import collect_entities, render_pages, slugify, timeline, write_pages
from memtool.errors import BadInput, NotFound, WouldOverwrite
from memtool.memory import Session
from memtool.models import Entities
from memtool.providers import Compressed
from memtool.scaffold import init

runner = CliRunner()


class TaggedCompressor:
    """Reads 'people: A, B' / 'systems: ...' / 'dates: ...' / 'topics: ...' / 'decided: ...' lines; the first line is the summary."""

    name = "local"
    model = "test-tagged"

    def compress(self, text: str, hints=None) -> Compressed:
        fields: dict[str, list[str]] = {}
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key in ("people", "systems", "dates", "topics", "decided"):
                fields[key] = [v.strip() for v in value.split(",") if v.strip()]
        return Compressed(
            summary=text.splitlines()[0],
            keywords=["x"],
            topics=fields.get("topics", []),
            decisions=fields.get("decided", []),
            entities=Entities(people=fields.get("people", []), systems=fields.get("systems", []), dates=fields.get("dates", [])),
        )


SESSIONS = [
    ("2026-01-05T10:00", "billing", "Moved billing to Postgres.\npeople: Alice, Bob\nsystems: Postgres\ntopics: database\ndecided: use Postgres"),
    ("2026-01-20T10:00", "main", "Alice reviewed the cache.\npeople: alice, alice\nsystems: Redis, postgres\ntopics: performance"),
    (
        "2026-02-03T09:00",
        "infra",
        "Deploy rehearsal with Carol Smith.\npeople: Carol Smith, ALICE\nsystems: Kubernetes, C++, C#\ndates: March 15\ntopics: infrastructure, database",
    ),
]


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder, compressor=TaggedCompressor())
    m.compress_many([Session(text=t, when=datetime.fromisoformat(w).replace(tzinfo=timezone.utc), session=s) for w, s, t in SESSIONS])
    return m


def found_in(mem):
    return collect_entities(mem.store.iter_entries())


def cli(*args):
    return runner.invoke(app, list(args))


def test_counts_first_last_seen_and_case_insensitive_grouping(mem):
    found = found_in(mem)
    people = {e.name: e for e in found["people"]}
    assert list(people) == ["Alice", "Carol Smith", "Bob"]  # most entries first, then most recent
    alice = people["Alice"]
    # "Alice", "alice" (twice in one entry: counted once) and "ALICE" are one person, shown as the commonest
    # spelling, the earliest on a tie
    assert alice.count == 3 and (alice.first_seen, alice.last_seen) == ("2026-01-05", "2026-02-03")
    assert alice.spellings == {"Alice": 1, "alice": 1, "ALICE": 1}
    systems = {e.name: e.count for e in found["systems"]}
    assert systems["Postgres"] == 2 and systems["Kubernetes"] == 1
    assert [e.name for e in found["dates"]] == ["March 15"]
    assert {e.name: e.count for e in found["topics"]} == {"database": 2, "performance": 1, "infrastructure": 1}


def test_timeline_any_case_or_slug_oldest_first_with_decisions(mem):
    found = found_in(mem)
    t = timeline(found, "  POSTGRES ")
    data = t.to_dict()
    assert data["name"] == "Postgres" and data["kinds"] == ["systems"] and data["count"] == 2
    assert [i["date"] for i in data["timeline"]] == ["2026-01-05", "2026-01-20"]
    assert data["timeline"][0]["session"] == "billing" and data["timeline"][0]["decisions"] == ["use Postgres"]
    assert data["timeline"][0]["summary"] == "Moved billing to Postgres."
    assert timeline(found, "carol-smith").name == "Carol Smith"  # the page folder name works too


def test_unknown_name_suggests_close_matches(mem):
    found = found_in(mem)
    with pytest.raises(NotFound, match=r"Did you mean: Alice\?"):
        timeline(found, "Alcie")
    with pytest.raises(NotFound, match="Did you mean: Carol Smith"):
        timeline(found, "smith")
    with pytest.raises(NotFound) as err:
        timeline(found, "zzzzqqq")
    assert "Did you mean" not in str(err.value) and "memory entities" in str(err.value)
    with pytest.raises(BadInput):
        timeline(found, "   ")


def test_cli_list_timeline_and_errors(mem):
    res = cli("entities", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert set(data) == set(C.ENTITY_KINDS)
    assert data["people"][0] == {"kind": "people", "name": "Alice", "count": 3, "first_seen": "2026-01-05", "last_seen": "2026-02-03"}
    only = json.loads(cli("entities", "--kind", "systems", "--json", "--limit", "2").stdout)
    assert list(only) == ["systems"] and len(only["systems"]) == 2
    table = cli("entities", "--kind", "people")
    assert table.exit_code == 0 and "Carol Smith" in table.stdout and "2026-02-03" in table.stdout
    assert cli("entities", "--kind", "projects").exit_code == BadInput.exit_code

    res = cli("entity", "alice")
    assert res.exit_code == 0 and "Alice" in res.stdout and "2026-01-20" in res.stdout and "Alice reviewed the cache." in res.stdout
    assert json.loads(cli("entity", "redis", "--json").stdout)["timeline"][0]["session"] == "main"
    res = cli("entity", "Bobb")
    assert res.exit_code == NotFound.exit_code and "Did you mean: Bob?" in res.output


def test_slugs_are_unique_and_safe():
    assert slugify("Node.js") == "node-js" and slugify("Carol  Smith") == "carol-smith" and slugify("../etc") == "etc"
    assert slugify("++") == "entity" and "/" not in slugify("a/b\\c") and len(slugify("x" * 500)) == C.ENTITY_SLUG_MAX


def test_pages_browsable_links_resolve_and_regenerating_writes_nothing(mem, root):
    found = found_in(mem)
    rep = write_pages(mem.layout, found)
    areas = root / "memory" / "areas"
    assert (areas / "README.md").is_file() and (areas / "people/alice/summary.md").is_file()
    assert (areas / "systems/c/summary.md").is_file() and (areas / "systems/c-2/summary.md").is_file()  # C# and C++ clash
    pages = sorted(areas.rglob("*.md"))
    assert len(rep.written) == len(pages) == 1 + 3 + 5  # index, 3 people, 5 systems (no pages for dates or topics)
    for page in pages:
        text = page.read_text()
        assert text.splitlines()[0] == C.GENERATED_MARK
        for target in re.findall(r"\]\(([^)]+)\)", text):  # every link points at a page that exists
            assert (page.parent / target).resolve().is_file(), (page, target)
    alice = (areas / "people/alice/summary.md").read_text()
    assert "# Alice" in alice and "3 entries · first seen 2026-01-05 · last seen 2026-02-03" in alice
    days = re.findall(r"^### (\S+)", alice.split("## Timeline")[1], re.M)
    assert days == ["2026-02-03", "2026-01-20", "2026-01-05"]  # newest first on the page
    assert "- Decision: use Postgres" in alice and "[Bob](../../people/bob/summary.md) (1)" in alice
    index = (areas / "README.md").read_text()
    assert "| [Alice](people/alice/summary.md) | 3 | 2026-01-05 | 2026-02-03 |" in index

    before = {p: p.stat().st_mtime_ns for p in pages}
    again = write_pages(mem.layout, found_in(mem))
    assert again.written == [] and again.removed == [] and again.unchanged == len(pages)
    assert {p: p.stat().st_mtime_ns for p in pages} == before
    assert render_pages(found) == render_pages(found_in(mem))  # deterministic


def test_pages_never_overwrite_a_hand_written_file(mem, root):
    mine = root / "memory/areas/people/bob/summary.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("# Bob\nMy own notes about Bob.\n")
    res = cli("entities", "--pages")
    assert res.exit_code == WouldOverwrite.exit_code
    assert "memory/areas/people/bob/summary.md" in res.output and "Nothing was written" in res.output
    assert mine.read_text() == "# Bob\nMy own notes about Bob.\n"
    assert sorted(p.relative_to(root).as_posix() for p in (root / "memory/areas").rglob("*.md")) == ["memory/areas/people/bob/summary.md"]
    mine.write_text(C.GENERATED_MARK + "\n# Bob\nold\n")  # marked as generated: now it may be replaced
    assert cli("entities", "--pages").exit_code == 0
    assert "old" not in mine.read_text() and "# Bob" in mine.read_text()


def test_pages_of_entities_no_longer_seen_are_removed_but_hand_files_stay(mem, root):
    assert cli("entities", "--pages").exit_code == 0
    notes = root / "memory/areas/systems/kubernetes/notes.md"
    notes.write_text("hand-written\n")
    (root / "memory/index/2026-02-03.json").unlink()  # the only entry naming Kubernetes, Carol Smith, C++ and C#
    res = cli("entities", "--pages", "--json")
    assert res.exit_code == 0, res.output
    removed = json.loads(res.stdout)["removed"]
    assert sorted(removed) == [
        "memory/areas/people/carol-smith/summary.md",
        "memory/areas/systems/c-2/summary.md",
        "memory/areas/systems/c/summary.md",
        "memory/areas/systems/kubernetes/summary.md",
    ]
    assert notes.read_text() == "hand-written\n" and not (root / "memory/areas/people/carol-smith").exists()


def test_area_pages_are_not_searched(mem, root):
    assert cli("entities", "--pages").exit_code == 0
    assert not any("areas" in p.parts for p in mem.layout.markdown_files())
    hits = mem.search("rehearsal Kubernetes Carol", limit=20, kinds=("entry", "transcript", "log", "memory"))
    assert hits and not any("areas/" in h.ref for h in hits)


def test_page_links_survive_markdown_syntax_in_names():
    from memtool.models import Entry

    e = Entry(id="ctx-20260101-00000001", timestamp="2026-01-01T00:00:00.000Z", summary="s", entities=Entities(systems=["a[b]|c", "plain"]))
    pages = render_pages(collect_entities([e]))
    assert "| [a\\[b\\]\\|c](systems/a-b-c/summary.md) | 1 |" in pages["memory/areas/README.md"]
    assert "- [a\\[b\\]\\|c](../../systems/a-b-c/summary.md) (1)" in pages["memory/areas/systems/plain/summary.md"]


def test_names_with_diacritics_and_other_scripts_are_whole_entities(root, fake_embedder):
    """The local compressor's names reach `memory entities` whole: José, Zoë, Иван, Łódź."""
    init(root)
    m = open_memory(root, embedder=fake_embedder)  # the real local compressor
    when = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    m.compress("Alice: José said the Łódź office opens in May, and Zoë told Иван to book the flights.", when=when, session="trip")
    m.compress("Иван: José said the visas are done.", when=when.replace(day=2), session="visas")
    found = found_in(m)
    assert {"José", "Zoë", "Иван"} <= {e.name for e in found["people"]}
    assert "Łódź" in {e.name for e in found["systems"]}
    assert timeline(found, "JOSÉ").to_dict()["count"] == 2 and timeline(found, "иван").kinds == ["people"]
    assert slugify("Łódź") == "łódź"
