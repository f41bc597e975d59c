"""What a user reads every day: the demo, the search table's ids, the stats week line."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from memtool.cli.demo import NEXT_COMMANDS, RELEVANT_SHARE, relevant
from memtool.cli.main import app
from memtool.cli.read import week_line
from memtool.search.engine import Hit

ID_RE = re.compile(r"ctx-\d{8}-[0-9a-f]{8}")


@pytest.fixture
def offline(env, monkeypatch):
    """The offline providers with the shared WordLlama cache (the e5 embedder is not the subject here)."""
    for var in ("MEMTOOL_EMBEDDER", "MEMTOOL_COMPRESSOR", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, env[var])


def hit(score: float, n: int) -> Hit:
    return Hit(id=f"ctx-20260101-0000000{n}", kind="entry", score=score, source_session="s", timestamp="2026-01-01", text="t")


def test_relevant_hits_drop_the_unmatched_and_the_far_weaker():
    assert [h.score for h in relevant([hit(1.4, 1), hit(0.71, 2), hit(0.0, 3)])] == [1.4, 0.71]
    assert [h.score for h in relevant([hit(1.355, 1), hit(0.358, 2), hit(0.009, 3)])] == [1.355]
    assert relevant([hit(0.0, 1)]) == [] and relevant([]) == []


def test_demo_shows_relevant_hits_a_clean_context_and_what_to_do_next(offline, tmp_path):
    res = CliRunner().invoke(app, ["demo", "--keep", str(tmp_path / "demo")], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    out = res.stdout
    search = out[out.index("2. search") : out.index("3. context")]
    scores = [float(s) for s in re.findall(r"^\s+(\d+\.\d{3})\s+entry", search, re.M)]
    assert scores and min(scores) > 0 and min(scores) >= RELEVANT_SHARE * max(scores)
    assert "ctx-20260202-" in search  # the Auth0 session answers the demo query
    assert "weaker hits left out" in search  # and the demo says it held hits back
    assert "<!--" not in out and "source=" not in out
    context = out[out.index("3. context") : out.index("Files are plain")]
    assert "Demo: started work on refresh token rotation tests." in context  # today's log, without its tag
    assert "dark mode" not in context and "billing" not in context  # entries the search did not find relevant
    tail = out[out.index("Next") :]
    assert [c for c, _ in NEXT_COMMANDS] == [c for c, _ in NEXT_COMMANDS if c in tail] and len(NEXT_COMMANDS) == 3
    table = out[: out.index("2. search")]
    assert len(ID_RE.findall(table)) == 5  # every id on one line at 80 columns


def test_search_table_never_wraps_ids(offline, root):
    runner = CliRunner()
    assert runner.invoke(app, ["init"]).exit_code == 0
    long = "We moved the billing service to Postgres because the Redis cache kept evicting invoices " * 3
    (root / "s.md").write_text(long + "\n")
    assert runner.invoke(app, ["compress", "s.md"]).exit_code == 0
    res = runner.invoke(app, ["search", "billing postgres redis invoices"], env={"COLUMNS": "60"})
    assert res.exit_code == 0, res.output
    assert ID_RE.search(res.stdout), res.stdout  # whole, on one line, at 60 columns


def test_week_line_labels():
    assert week_line([("2026-W48", 5)]) == "2026-W48: 5 entries"
    assert week_line([("2026-W48", 1)]) == "2026-W48: 1 entry"
    line = week_line([("2026-W45", 1), ("2026-W46", 0), ("2026-W47", 4)])
    assert line.startswith("2026-W45 ") and "2026-W47 (3 weeks, peak 4)" in line


def test_stats_of_a_single_week_names_it_once(offline, root):
    runner = CliRunner()
    assert runner.invoke(app, ["init"]).exit_code == 0
    (root / "s.md").write_text("We decided to move billing to Postgres.\n")
    assert runner.invoke(app, ["compress", "s.md"]).exit_code == 0
    res = runner.invoke(app, ["stats"], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    [line] = [line for line in res.stdout.splitlines() if "per week" in line]
    assert re.search(r"per week\s+\d{4}-W\d{2}: 1 entry$", line.rstrip()), line
