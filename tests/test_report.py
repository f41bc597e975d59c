"""`memory stats` at a glance and `memory report`: one self-contained HTML page whose charts match collect()."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timezone
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from memtool import constants as C
from memtool.app import open_memory
from memtool.cli.main import app
from memtool.memory import Session
from memtool.models import Entities
from memtool.providers import Compressed
from memtool.report import render, write_report
from memtool.scaffold import init
from memtool.stats import collect, ratio_histogram, sparkline, week_series
from tests.conftest import embedding_path

runner = CliRunner()
VOID = {"meta", "link", "br", "hr", "img", "input", "col", "area", "base", "source", "wbr", "embed", "param", "track"}
EVIL = '<script>alert("x")</script>'


class NamedCompressor:
    """'topics: a, b' / 'people: ...' / 'systems: ...' lines; the importance is left to the session."""

    name = "local"
    model = "test-named"

    def compress(self, text: str, hints=None) -> Compressed:
        got = {k: [] for k in ("topics", "people", "systems")}
        for line in text.splitlines():
            key, _, value = line.partition(": ")
            if key in got:
                got[key] = [v.strip() for v in value.split(",")]
        return Compressed(summary=text.splitlines()[0], keywords=["k"], topics=got["topics"], entities=Entities(people=got["people"], systems=got["systems"]))


# (when, importance, text): weeks 2026-W01, W01, W03 (W02 empty), W05; one topic is hostile markup
SESSIONS = [
    (
        "2026-01-01T10:00",
        "high",
        "Alpha session about billing and more words to compress away here.\ntopics: billing, database\npeople: Alice\nsystems: Postgres",
    ),
    ("2026-01-02T10:00", "medium", "Beta session.\ntopics: billing\npeople: Alice, Bob\nsystems: Redis"),
    ("2026-01-14T10:00", "critical", "Gamma session with a very long transcript.\n" + "filler " * 300 + f"\ntopics: {EVIL}\npeople: Carol"),
    ("2026-01-28T10:00", "low", "Delta.\ntopics: database\nsystems: Postgres"),
]


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder, compressor=NamedCompressor())
    m.compress_many([Session(text=t, when=datetime.fromisoformat(w).replace(tzinfo=timezone.utc), importance=i) for w, i, t in SESSIONS])
    embedding_path(root, next(m.store.iter_entries()).id).unlink()  # one pending embedding
    return m


class Page(HTMLParser):
    """Collects elements (tag, attrs) and checks that every non-void tag is closed in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.elements: list[tuple[str, dict]] = []
        self.errors: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)

    def of(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.elements if t == tag and all(a.get(k) == v for k, v in attrs.items())]

    def bars(self, chart: str) -> list[tuple[str, int]]:
        """(label, value) of the bars of one chart, in order: the bars are the rects after its <svg id>."""
        out, inside = [], False
        for tag, a in self.elements:
            if tag == "svg":
                inside = a.get("id") == f"chart-{chart}"
            elif inside and tag == "rect":
                out.append((a["data-label"], int(a["data-value"])))
        return out


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    assert page.errors == [] and page.stack == [], (page.errors, page.stack)
    return page


def test_report_is_well_formed_self_contained_and_matches_collect(mem, root):
    path, data = write_report(mem)
    assert path == root / "memory" / C.CACHE_DIR / C.REPORT_FILE  # derived and git-ignored: never committed with the memory
    assert not (root / "memory" / C.REPORT_FILE).exists()
    page = parse(path.read_text(encoding="utf-8"))
    assert data == collect(mem) | {"cache_bytes": data["cache_bytes"]}  # the page itself now adds to the cache's size

    assert {a["id"] for a in page.of("section")} == {"summary", "weeks", "topics", "importance", "compression", "entities"}
    assert {a["id"] for a in page.of("svg")} == {
        "chart-weeks",
        "chart-topics",
        "chart-importance",
        "chart-compression",
        "chart-entity-kinds",
        "chart-people",
        "chart-systems",
    }
    assert page.bars("weeks") == [("2026-W01", 2), ("2026-W02", 0), ("2026-W03", 1), ("2026-W04", 0), ("2026-W05", 1)]
    assert page.bars("weeks") == week_series(data["entries_per_week"])
    assert page.bars("topics") == list(data["top_topics"].items()) and ("billing", 2) in page.bars("topics")
    assert page.bars("importance") == [("low", 1), ("medium", 1), ("high", 1), ("critical", 1)]
    assert page.bars("compression") == list(data["compression_ratio_histogram"].items())
    assert sum(v for _, v in page.bars("compression")) == data["entries"] == 4
    assert page.bars("entity-kinds") == [(k, data["entities"][k]) for k in C.ENTITY_KINDS]
    assert page.bars("people") == [("Alice", 2), ("Carol", 1), ("Bob", 1)] == list(data["top_people"].items())
    assert page.bars("systems") == [("Postgres", 2), ("Redis", 1)]
    cards = {a["data-key"]: a["data-value"] for a in page.of("div", **{"class": "card"})}
    for key in (
        "entries",
        "days_with_entries",
        "daily_logs",
        "transcripts",
        "pending_embeddings",
        "pending_compression",
        "mean_compression_ratio",
        "tokens_original",
        "tokens_compressed",
        "store_bytes",
        "cache_bytes",
    ):
        assert cards[key] == str(data[key]), key
    assert cards["pending_embeddings"] == "1" and cards["embedder"] == "fake-hash-64"

    # self-contained: no script, nothing fetched; hostile topic text shown as text, not markup
    assert page.of("script") == [] and page.of("link") == [] and page.of("img") == []
    assert not [a for _, a in page.elements if any(k in a for k in ("src", "href"))]
    assert "url(" not in path.read_text() and "@import" not in path.read_text()
    assert page.of("meta", **{"http-equiv": "Content-Security-Policy"})[0]["content"].startswith("default-src 'none'")
    assert EVIL in "".join(page.text)


def test_report_of_an_empty_store_and_cli_output_option(root, tmp_path):
    assert runner.invoke(app, ["init"]).exit_code == 0
    target = tmp_path / "out" / "r.html"
    res = runner.invoke(app, ["report", "--output", str(target)])
    assert res.exit_code == 0 and "0 entries" in res.output
    page = parse(target.read_text())
    assert page.of("svg", id="chart-weeks") == [] and "No entries yet." in "".join(page.text)


def test_stats_at_a_glance_and_json_keeps_old_keys(mem):
    res = runner.invoke(app, ["stats"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "per week" in out and "2026-W01" in out and "2026-W05" in out and "█" in out
    assert "1 embeddings" in out and "memory retry" in out and "top topics" in out and "compression ratios" in out
    data = json.loads(runner.invoke(app, ["stats", "--json"]).stdout)
    old = {
        "root",
        "entries",
        "days_with_entries",
        "daily_logs",
        "transcripts",
        "pending_compression",
        "pending_embeddings",
        "mean_compression_ratio",
        "tokens_original",
        "tokens_compressed",
        "importance",
        "top_topics",
        "entries_per_week",
        "store_bytes",
        "cache_bytes",
        "embedder",
        "problems",
    }
    assert old <= set(data) and data["entries"] == 4 and data["pending_embeddings"] == 1
    assert data["entries_per_week"] == {"2026-W01": 2, "2026-W03": 1, "2026-W05": 1}
    assert data["entities"] == {"people": 3, "systems": 2, "dates": 0, "topics": 3}
    assert data["first_day"] == "2026-01-01" and data["last_day"] == "2026-01-28"
    lo, hi = data["compression_ratio_range"]
    assert lo <= data["median_compression_ratio"] <= hi and hi > 10  # the long transcript compresses well


def test_stats_helpers():
    assert week_series({"2026-W52": 1, "2027-W02": 2}) == [("2026-W52", 1), ("2026-W53", 0), ("2027-W01", 0), ("2027-W02", 2)]
    assert week_series({}) == []
    hist = ratio_histogram([1.99, 2.0, 4.9, 5.0, 99.9, 100.0, 250.0])
    assert hist == {"<2:1": 1, "2-5:1": 2, "5-10:1": 1, "10-20:1": 0, "20-50:1": 0, "50-100:1": 1, ">=100:1": 2}
    assert sparkline([0, 1, 4, 8]) == " ▁▄█" and sparkline([]) == ""


def test_render_escapes_every_label():
    data = {
        "root": "/r<b>",
        "entries": 1,
        "days_with_entries": 1,
        "daily_logs": 0,
        "transcripts": 0,
        "pending_compression": 0,
        "pending_embeddings": 0,
        "mean_compression_ratio": 2.0,
        "tokens_original": 2,
        "tokens_compressed": 1,
        "importance": {"medium": 1},
        "top_topics": {EVIL: 1},
        "entries_per_week": {"2026-W01": 1},
        "store_bytes": 1,
        "cache_bytes": 0,
        "embedder": '"><svg onload=x>',
        "problems": ["bad <file>"],
        "first_day": "2026-01-01",
        "last_day": "2026-01-01",
        "median_compression_ratio": 2.0,
        "compression_ratio_range": [2.0, 2.0],
        "compression_ratio_histogram": ratio_histogram([2.0]),
        "entities": {k: 1 for k in C.ENTITY_KINDS},
        "top_people": {"<i>Eve</i>": 1},
        "top_systems": {},
    }
    page = parse(render(data))
    assert page.of("script") == [] and page.of("b") == [] and page.of("i") == []
    assert not [a for _, a in page.elements if "onload" in a]
    assert page.bars("people") == [("<i>Eve</i>", 1)] and page.of("section", id="problems")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_report_renders_in_a_headless_browser(mem, tmp_path):
    path, data = write_report(mem)
    args = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*args, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=60, check=True).stdout
    page = parse(dom.replace("<!DOCTYPE html>", ""))  # the browser's own serialisation of what it built
    assert page.bars("weeks") == week_series(data["entries_per_week"]) and len(page.of("svg")) == 7
    shot = tmp_path / "report.png"
    subprocess.run([*args, "--window-size=1000,1800", f"--screenshot={shot}", path.as_uri()], capture_output=True, timeout=60, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000  # a blank page is ~5 KB
