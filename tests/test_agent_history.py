"""memtool.agent_history: the sessions Claude Code, Codex CLI and Gemini CLI keep on disk, found by
project, on copies of real transcripts laid out as each agent lays them out."""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memtool.agent_history import claude_folder_name, find_sessions

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
FIXTURE_CWD = "/home/dev/shop"


def _retarget(text: str, project: Path) -> str:
    return text.replace(FIXTURE_CWD, str(project))


def claude_session(home: Path, project: Path, session_id: str = "5f0c2a9e-1111-4b7a-9c1d-2e3f4a5b6c7d") -> Path:
    folder = home / ".claude" / "projects" / claude_folder_name(str(project))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    path.write_text(_retarget((FIXTURES / "claude_transcript.jsonl").read_text(), project).replace("5f0c2a9e-1111-4b7a-9c1d-2e3f4a5b6c7d", session_id))
    return path


def codex_session(codex_home: Path, project: Path, session_id: str = "0199a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b", day: str = "2026/02/07") -> Path:
    folder = codex_home / "sessions" / day
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{day.replace('/', '-')}T10-00-00-{session_id}.jsonl"
    text = _retarget((FIXTURES / "codex_rollout.jsonl").read_text(), project).replace("0199a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b", session_id)
    path.write_text(text)
    return path


def gemini_session(home: Path, folder_name: str, session_id: str = "7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6", jsonl: bool = False) -> Path:
    chats = home / ".gemini" / "tmp" / folder_name / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    data = json.loads((FIXTURES / "gemini_session.json").read_text()) | {"sessionId": session_id}
    if not jsonl:
        path = chats / f"session-2026-02-07T10-00-{session_id[:8]}.json"
        path.write_text(json.dumps(data, indent=2))
        return path
    path = chats / f"session-2026-02-07T10-00-{session_id[:8]}.jsonl"
    meta = {k: v for k, v in data.items() if k != "messages"} | {"kind": "main"}
    path.write_text("\n".join(json.dumps(r) for r in [meta, *data["messages"]]) + "\n")
    return path


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(folder))
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(var, raising=False)
    return folder


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "work" / "my_shop.v2"  # '_' and '.' are '-' in Claude Code's folder name too
    folder.mkdir(parents=True)
    return folder


def test_each_agent_session_of_this_project_is_found_with_its_id_and_start(home, project, tmp_path):
    other = tmp_path / "work" / "other"
    claude = claude_session(home, project)
    claude_session(home, other, "99999999-0000-4000-8000-000000000000")
    codex = codex_session(home / ".codex", project)
    codex_session(home / ".codex", other, "0199ffff-0000-7000-8000-000000000000", "2026/02/08")
    gemini_hash = gemini_session(home, hashlib.sha256(str(project).encode()).hexdigest())  # an older Gemini CLI's folder
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(project): "my-shop-v2", str(other): "other"}}))
    gemini_short = gemini_session(home, "my-shop-v2", "8e2f3a4b-0000-4000-8000-000000000000", jsonl=True)
    gemini_session(home, "other", "aaaaaaaa-0000-4000-8000-000000000000")

    found = {(s.agent, s.session_id): s for s in find_sessions(project)}
    assert set(found) == {
        ("claude-code", "5f0c2a9e-1111-4b7a-9c1d-2e3f4a5b6c7d"),
        ("codex", "0199a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b"),
        ("gemini", "7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6"),
        ("gemini", "8e2f3a4b-0000-4000-8000-000000000000"),
    }
    by_path = {s.path: s for s in found.values()}
    assert set(by_path) == {claude, codex, gemini_hash, gemini_short}
    started = datetime(2026, 2, 7, 10, 0, tzinfo=timezone.utc)
    assert all(s.started == started and s.size == s.path.stat().st_size for s in found.values())
    assert {s.agent for s in find_sessions(project, ["codex"])} == {"codex"}
    assert len(find_sessions(project, all_projects=True)) == 7


def test_a_claude_folder_whose_name_reads_the_same_holds_another_project(home, project, tmp_path):
    """/x/my-shop.v2 and /x/my_shop.v2 share Claude Code's folder name: each file's own cwd decides."""
    twin = tmp_path / "work" / "my-shop-v2"
    twin.mkdir()
    assert claude_folder_name(str(twin)) == claude_folder_name(str(project))
    claude_session(home, twin)
    assert find_sessions(project, ["claude-code"]) == []
    assert [s.path.parent.name for s in find_sessions(twin, ["claude-code"])] == [claude_folder_name(str(twin))]


def test_a_long_project_path_matches_claude_codes_cut_name(home, tmp_path):
    project = tmp_path / ("deep" * 60)
    project.mkdir()
    name = claude_folder_name(str(project))
    folder = home / ".claude" / "projects" / f"{name[:200]}-k3j2h1"  # Claude Code: 200 characters, then a hash
    folder.mkdir(parents=True)
    (folder / "abc.jsonl").write_text(_retarget((FIXTURES / "claude_transcript.jsonl").read_text(), project))
    assert [s.session_id for s in find_sessions(project, ["claude-code"])] == ["abc"]


def test_the_agents_own_home_variables_are_followed(home, project, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    codex_session(tmp_path / "codex-home", project)
    folder = tmp_path / "claude-config" / "projects" / claude_folder_name(str(project))
    folder.mkdir(parents=True)
    (folder / "c1.jsonl").write_text(_retarget((FIXTURES / "claude_transcript.jsonl").read_text(), project))
    gemini_session(tmp_path / "gemini-home", hashlib.sha256(str(project).encode()).hexdigest())
    claude_session(home, project, "in-the-default-home")  # not where CLAUDE_CONFIG_DIR points
    assert sorted((s.agent, s.session_id) for s in find_sessions(project)) == [
        ("claude-code", "c1"),
        ("codex", "0199a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b"),
        ("gemini", "7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6"),
    ]


def test_since_empty_broken_and_foreign_files_are_skipped(home, project):
    old = claude_session(home, project, "old")
    os.utime(old, (1_700_000_000, 1_700_000_000))
    claude_session(home, project, "new")
    folder = old.parent
    (folder / "empty.jsonl").write_text("")
    (folder / "garbage.jsonl").write_text("not json\n\x00\x01")
    (folder / "summary-only.jsonl").write_text('{"type":"summary","summary":"x","leafUuid":"a"}\n')
    codex_dir = home / ".codex" / "sessions" / "2026" / "02" / "07"
    codex_dir.mkdir(parents=True)
    (codex_dir / "rollout-broken.jsonl").write_text('{"type":"session_meta","payload":{"id":3}}\n')
    gemini = home / ".gemini" / "tmp" / hashlib.sha256(str(project).encode()).hexdigest() / "chats"
    gemini.mkdir(parents=True)
    (gemini / "session-x.json").write_text("[1, 2]")
    (home / ".gemini" / "projects.json").write_text('{"projects": {"' + str(project) + '": "../../escape"}}')
    assert sorted(s.session_id for s in find_sessions(project)) == ["new", "old"]
    assert [s.session_id for s in find_sessions(project, since=datetime(2025, 1, 1, tzinfo=timezone.utc))] == ["new"]


def test_nothing_on_disk_finds_nothing(home, project):
    assert find_sessions(project) == []


def test_claude_folder_name_is_claude_codes():
    assert claude_folder_name("/home/dev/my_shop.v2") == "-home-dev-my-shop-v2"
    assert re.fullmatch(r"[A-Za-z0-9-]+", claude_folder_name("/tmp/ünï cödé"))
