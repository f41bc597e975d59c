"""The team simulation (bench/team.py), small: three people, three days, a real bare repository."""

from __future__ import annotations

from bench.team import run


def test_three_people_three_days_lose_nothing_and_agree(tmp_path, env, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])  # the WordLlama matrix the env fixture warmed
    result = run(people=3, days=3, seed=5, setup=True, workdir=tmp_path)
    assert result["pushes"] == 9 and result["entries_stored"] >= 9
    assert result["entries_lost"] == 0 and result["entries_resurrected"] == 0
    assert result["clones_agree_on_entries"] and result["clones_agree_on_search"]
    assert result["hand_resolved_conflicts"] == result["by_file"].get("day file", 0) + result["by_file"].get("embedding file", 0)
