"""A personal memory beside the project's, and private entries: real files, real git, the real CLI, MCP tools, hooks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool.cli.main import app
from memtool.errors import BadInput, NotAMemoryRoot

PERSONAL_NOTE = "I prefer the helix editor and the fish shell everywhere"
PROJECT_SESSION = "user: the nightly export times out.\nassistant: Decided to stream the export rows with COPY TO STDOUT; the zebrafinch job runs at 02:00.\n"
PRIVATE_SESSION = "user: my private staging notes.\nassistant: Decided the quokkamantle token rotation stays on my laptop; never share quokkamantle.\n"
PRIVATE_LOG = "the wombatvelvet hint is in my paper notebook"


def run(*args: str, ok: bool = True):
    res = CliRunner().invoke(app, list(args))
    if ok:
        assert res.exit_code == 0, res.output
    return res


def personal_home() -> Path:
    return Path(os.environ["HOME"]) / ".local" / "share" / "memtool"


def tree_bytes(folder: Path) -> bytes:
    """Every file's bytes under `folder` (the search cache too)."""
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


@pytest.fixture
def project(root, tmp_path):
    run("init")
    (tmp_path / "export.md").write_text(PROJECT_SESSION, encoding="utf-8")
    run("compress", str(tmp_path / "export.md"), "--session", "export")
    return root


@pytest.fixture
def personal(project):
    run("init", "--personal")
    run("log", "--personal", PERSONAL_NOTE)
    return personal_home()


def test_search_reads_both_roots_and_labels_each_hit(project, personal):
    hits = json.loads(run("search", "--json", "helix editor export rows").stdout)
    by_origin = {h["origin"]: h for h in hits}
    assert PERSONAL_NOTE in by_origin["personal"]["text"] and "COPY TO STDOUT" in by_origin["project"]["text"]
    assert by_origin["personal"]["id"].startswith("personal:memory/")  # not the project's memory/DAY.md
    assert "[personal]" in run("search", "helix").stdout
    shown = run("context", "helix editor").stdout
    assert f"[personal] {shown.split('[personal] ', 1)[1][:10]}" and PERSONAL_NOTE in shown


def test_nothing_of_the_personal_root_reaches_the_project(project, personal, tmp_path):
    run("search", "helix")  # builds both caches
    run("context", "helix")
    archive = tmp_path / "backup.tar.gz"
    run("backup", str(archive))
    exported = run("export").stdout
    assert b"helix" in tree_bytes(personal)
    assert b"helix" not in tree_bytes(project)  # the project's files and its search cache
    with tarfile.open(archive) as tar:
        assert all(b"helix" not in tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert "helix" not in exported and "zebrafinch" in exported


def test_personal_user_md_is_in_the_context_and_writes_go_where_told(project, personal):
    (personal / "USER.md").write_text("# USER\n\nPrefers short answers; works in Lisbon time.\n", encoding="utf-8")
    assert "## USER.md (personal)" in run("context").stdout and "Lisbon" in run("context").stdout
    run("log", "a project note about the zebrafinch job")
    day_logs = lambda where: b"".join(p.read_bytes() for p in (where / "memory").glob("*.md"))  # noqa: E731
    assert b"zebrafinch" in day_logs(project) and b"zebrafinch" not in day_logs(personal)
    assert PERSONAL_NOTE.encode() in day_logs(personal) and PERSONAL_NOTE.encode() not in day_logs(project)
    run("promote", "--personal", "Always answer in British English", "--section", "Preferences")
    assert "British English" in (personal / "MEMORY.md").read_text() and "British English" not in (project / "MEMORY.md").read_text()


def test_outside_any_project_commands_use_the_personal_memory(root, tmp_path, monkeypatch):
    run("init", "--personal")
    elsewhere = tmp_path / "scratch"
    elsewhere.mkdir()
    monkeypatch.delenv("MEMTOOL_ROOT")
    monkeypatch.chdir(elsewhere)
    assert str(personal_home()) in run("log", "a note from a scratch folder").stdout
    assert "scratch folder" in run("search", "scratch folder").stdout
    monkeypatch.setenv("MEMTOOL_PERSONAL_OUTSIDE_PROJECTS", "false")
    res = run("log", "not stored", ok=False)
    assert res.exit_code == NotAMemoryRoot.exit_code and "not a memory root" in res.output
    assert b"not stored" not in tree_bytes(personal_home()) and not (elsewhere / "memory").exists()


def test_personal_root_off_or_relative_is_refused_and_nothing_is_stored(project, monkeypatch):
    before = tree_bytes(project)
    monkeypatch.setenv("MEMTOOL_PERSONAL_ROOT", "off")
    res = run("log", "--personal", "nowhere to go", ok=False)
    assert res.exit_code != 0 and "personal_root is 'off'" in res.output
    monkeypatch.setenv("MEMTOOL_PERSONAL_ROOT", "relative/folder")
    res = run("log", "--personal", "nowhere to go", ok=False)
    assert res.exit_code != 0 and "not an absolute path" in res.output
    assert tree_bytes(project) == before and not personal_home().exists()


def test_a_repository_config_cannot_move_the_personal_root(project, tmp_path):
    """personal_root is protected: a clone's memory/config.yaml naming it is withheld until approved."""
    elsewhere = tmp_path / "attacker"
    with open(project / "memory" / "config.yaml", "a", encoding="utf-8") as fh:
        fh.write(f"personal_root: {elsewhere}\n")
    res = run("log", "--personal", "where does this go")
    assert "personal_root" in res.stderr and str(personal_home()) in res.stdout and not elsewhere.exists()


# -- private entries ----------------------------------------------------------------------------------
def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def all_objects(repo: Path) -> bytes:
    """Every object in the repository, whatever reaches it (`git cat-file --batch-all-objects`)."""
    return subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, check=True, capture_output=True).stdout


@pytest.fixture
def private(root, tmp_path):
    git(root, "init", "-q", "-b", "main")
    run("init")
    (tmp_path / "export.md").write_text(PROJECT_SESSION, encoding="utf-8")
    (tmp_path / "private.md").write_text(PRIVATE_SESSION, encoding="utf-8")
    run("compress", str(tmp_path / "export.md"), "--session", "export")
    stored = run("compress", "--private", str(tmp_path / "private.md"), "--session", "staging-secrets", "--json").stdout
    run("log", "--private", PRIVATE_LOG)
    return json.loads(stored)[0]["id"]


def test_a_private_entry_leaves_no_trace_in_git_after_commit_clone_and_push(private, root, tmp_path):
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "memory")
    git(tmp_path, "init", "-q", "--bare", "remote.git")
    git(root, "push", "-q", str(tmp_path / "remote.git"), "main")
    git(tmp_path, "clone", "-q", str(root), "clone")
    for repo in (root, tmp_path / "clone", tmp_path / "remote.git"):
        objects = all_objects(repo)
        assert b"zebrafinch" in objects  # the check can see a shared entry's words ...
        for trace in (b"quokkamantle", b"wombatvelvet", b"staging-secrets", private.encode()):
            assert trace not in objects, (repo, trace)  # ... and no private byte is there
    assert (root / "memory" / ".private" / ".gitignore").read_text().strip().endswith("*")
    assert git(root, "status", "--porcelain", "--ignored").count(".private") == 1  # ignored, listed as such


def test_private_hits_are_marked_in_search_context_and_show(private):
    hits = json.loads(run("search", "--json", "quokkamantle token rotation").stdout)
    mine = next(h for h in hits if h["id"] == private)
    assert mine["private"] is True and mine["origin"] == "project"
    assert "[private]" in run("search", "quokkamantle").stdout
    assert "[private]" in run("context", "quokkamantle token rotation").stdout
    assert "[private]" in run("context", "wombatvelvet hint").stdout
    assert "from: private memory" in run("show", private).stdout


def test_backup_and_export_leave_private_out_unless_asked(private, root, tmp_path):
    plain, full = tmp_path / "plain.tar.gz", tmp_path / "full.tar.gz"
    run("backup", str(plain))
    run("backup", "--include-private", str(full))
    with tarfile.open(plain) as tar:
        assert not [m.name for m in tar.getmembers() if ".private" in m.name]
        assert all(b"quokkamantle" not in tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    with tarfile.open(full) as tar:
        names = [m.name for m in tar.getmembers()]
    assert "memory/.private/.gitignore" in names and not [n for n in names if "/.cache" in n]
    res = run("export")
    assert "quokkamantle" not in res.stdout and "1 private entry left out" in res.stderr
    assert "quokkamantle" in run("export", "--include-private").stdout
    # the full backup restores into a new root, its private entries still out of git
    new = tmp_path / "restored"
    run("--root", str(new), "restore", str(full))
    assert (new / "memory" / ".private" / ".gitignore").is_file()
    assert any(h["private"] for h in json.loads(run("--root", str(new), "search", "--json", "quokkamantle").stdout))


def test_a_restore_of_a_crafted_private_member_still_ignores_it(root, tmp_path):
    """An archive with files under memory/.private but no .gitignore: restore writes the .gitignore first."""
    import io

    run("init")
    archive = tmp_path / "crafted.tar.gz"
    data = b"# 2026-01-02\n- 10:00 crafted private line\n"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("memory", "memory/.private", "memory/.private/memory"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        info = tarfile.TarInfo("memory/.private/memory/2026-01-02.md")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    run("restore", str(archive))
    assert (root / "memory" / ".private" / ".gitignore").is_file()
    git(root, "init", "-q")
    assert ".private" not in git(root, "status", "--porcelain", "-uall")


# -- MCP tools and hooks --------------------------------------------------------------------------------
def test_mcp_tools_search_both_roots_and_write_where_told(project, personal, fake_embedder):
    from memtool.mcp_tools import MemoryTools

    tools = MemoryTools(project, embedder=fake_embedder)
    tools.log("a private aside about the ocelotquill rota", private=True)
    tools.log("the user likes tabs over spaces", personal=True)
    answer = tools.search("helix editor ocelotquill tabs spaces", limit=10)
    labels = {h["from"] for h in answer["hits"] if "from" in h}
    assert labels == {"personal", "private"}, answer
    assert b"ocelotquill" in tree_bytes(project / "memory" / ".private") and b"tabs over spaces" in tree_bytes(personal)
    assert b"tabs over spaces" not in tree_bytes(project)


@pytest.fixture
def wordllama(model_cache, monkeypatch):
    """The real offline embedder, in this process: recall's score floor is set for real embedders' scores."""
    monkeypatch.setenv("MEMTOOL_EMBEDDER", "wordllama")
    monkeypatch.setenv("MEMTOOL_COMPRESSOR", "local")


def test_the_prompt_hook_recalls_personal_entries(wordllama, project, personal, tmp_path):
    from memtool.app import open_memory
    from memtool.hooks.session import HookPayload, run_prompt

    (tmp_path / "prefs.md").write_text(
        "user: set up my editor the way I like it.\nassistant: Decided helix with the gruvbox theme, fish shell and tmux for the user.\n", encoding="utf-8"
    )
    open_memory(personal=True).compress((tmp_path / "prefs.md").read_text(), session="prefs")
    payload = HookPayload(session_id="s1", cwd=project, prompt="please set up helix with the gruvbox theme and tmux", transcript_path=None)
    out = json.loads(run_prompt(payload, "claude-code"))["hookSpecificOutput"]["additionalContext"]
    assert "[personal]" in out and "gruvbox" in out


def test_the_session_start_hook_context_includes_personal_hits(project, personal, env, tmp_path):
    """The real hook, as the agent runs it: `memory hooks run session-start` in the project, its `memory context`."""
    (personal / "USER.md").write_text("# USER\n\nThe user reads everything in a terminal at 80 columns.\n", encoding="utf-8")
    (tmp_path / "prefs.md").write_text(
        "user: my terminal.\nassistant: Decided the user's terminal stays at 80 columns with the solarized palette.\n", encoding="utf-8"
    )
    run("compress", "--personal", str(tmp_path / "prefs.md"), "--session", "prefs")
    payload = {"session_id": "s2", "cwd": str(project), "hook_event_name": "SessionStart", "transcript_path": ""}
    done = subprocess.run(
        [sys.executable, "-m", "memtool", "hooks", "run", "session-start", "--agent", "claude-code"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "USER.md (personal)" in context and "80 columns" in context and "[personal] my terminal" in context, context


def test_personal_and_private_at_once_is_the_personal_memorys_private_root(project, personal):
    run("log", "--personal", "--private", "the okapiring code of my own bike lock")
    assert list((personal / "memory" / ".private" / "memory").glob("*.md")) and (personal / "memory" / ".private" / ".gitignore").is_file()
    [hit] = [h for h in json.loads(run("search", "--json", "okapiring bike lock").stdout) if "okapiring" in h["text"]]
    assert (hit["origin"], hit["private"]) == ("personal", True) and hit["id"].startswith("personal:memory/.private/memory/")
    assert "[personal, private]" in run("context", "okapiring bike lock").stdout
    assert b"okapiring" not in tree_bytes(project)


def test_a_session_outside_any_project_is_stored_in_the_personal_memory_by_the_hook(root, env, tmp_path, monkeypatch):
    """The rule personal_outside_projects, for the hooks too: the real session-end hook in a folder with no
    memory/ compresses the session into the personal memory; with the rule off it stores nothing."""
    from memtool.hooks.session import HookPayload, memory_root_for
    from memtool.store import Layout, Store

    run("init", "--personal")
    elsewhere = tmp_path / "scratch"
    elsewhere.mkdir()
    transcript = tmp_path / "session.md"
    transcript.write_text("user: tidy my dotfiles.\nassistant: Decided to keep the dotfiles in a bare git repository called cfg.\n", encoding="utf-8")
    outside = {k: v for k, v in env.items() if k != "MEMTOOL_ROOT"}
    payload = {"session_id": "dotfiles-1", "transcript_path": str(transcript), "cwd": str(elsewhere), "hook_event_name": "SessionEnd"}
    worker = [sys.executable, "-m", "memtool", "hooks", "run", "session-end", "--agent", "claude-code", "--foreground"]
    done = subprocess.run(worker, input=json.dumps(payload), capture_output=True, text=True, timeout=300, cwd=elsewhere, env=outside)
    assert done.returncode == 0, done.stderr
    assert [e.source_session for e in Store(Layout(personal_home())).iter_entries()] == ["dotfiles-1"]
    assert not (elsewhere / "memory").exists()
    monkeypatch.delenv("MEMTOOL_ROOT")
    assert memory_root_for(HookPayload("s", None, elsewhere)) == personal_home()  # where catch-up and prompt recall look too
    off = {**outside, "MEMTOOL_PERSONAL_OUTSIDE_PROJECTS": "false"}  # the hook as the agent starts it: it spawns no worker
    done = subprocess.run(
        worker[:-1], input=json.dumps(payload | {"session_id": "dotfiles-2"}), capture_output=True, text=True, timeout=300, cwd=elsewhere, env=off
    )
    assert done.returncode == 0 and "no memory/ here or above" in done.stderr
    assert [e.source_session for e in Store(Layout(personal_home())).iter_entries()] == ["dotfiles-1"]


def test_a_private_entry_is_promoted_only_into_the_private_memory_md(private, root):
    res = run("promote", private, ok=False)  # the project's MEMORY.md is committed: the private entry is not one of its entries
    assert res.exit_code != 0 and "no entry with id" in res.output and "quokkamantle" not in (root / "MEMORY.md").read_text()
    run("promote", "--private", private)
    assert "quokkamantle" in (root / "memory" / ".private" / "MEMORY.md").read_text()
    assert "## MEMORY.md (private)" in run("context").stdout
    git(root, "add", "-A")
    assert "quokkamantle" not in git(root, "diff", "--cached")


def test_mcp_get_reads_a_personal_file_hit_by_its_id(project, personal, fake_embedder):
    from memtool.mcp_tools import MemoryTools

    tools = MemoryTools(project, embedder=fake_embedder)
    [hit] = [h for h in tools.search("helix editor fish shell")["hits"] if h.get("from") == "personal"]
    got = tools.get(hit["id"])
    assert got["id"].startswith("personal:memory/") and PERSONAL_NOTE in got["text"]
    with pytest.raises(BadInput, match="outside the memory root"):  # confined to the personal root as any id is to the project's
        tools.get("personal:../../../../../../etc/passwd.md")


# -- commands on an entry, in the root that holds it ---------------------------------------------------
PERSONAL_SESSION = "user: my own laptop setup.\nassistant: Decided to keep the capybaraflint dotfiles in a private repo; the otterglen alias opens them.\n"


@pytest.fixture
def mine(project, personal, tmp_path):
    """A personal entry's id (beside the project's entry and the personal log line)."""
    (tmp_path / "mine.md").write_text(PERSONAL_SESSION, encoding="utf-8")
    return json.loads(run("compress", "--personal", str(tmp_path / "mine.md"), "--session", "dotfiles", "--json").stdout)[0]["id"]


def project_entry_id(project: Path) -> str:
    return json.loads(run("search", "--json", "zebrafinch export rows").stdout)[0]["id"]


def test_edit_archive_and_forget_act_on_a_personal_entry_in_the_personal_root(project, personal, mine):
    before = tree_bytes(project / "memory" / "index")
    edited = json.loads(run("edit", mine, "--summary", "Dotfiles live in the capybaraflint repo.", "--json").stdout)
    assert edited["changed"] == ["summary"] and edited["day_file"].startswith("memory/index/")
    assert b"Dotfiles live in the capybaraflint repo." in (personal / edited["day_file"]).read_bytes()
    assert "from: personal memory" in run("show", mine).stdout and "capybaraflint repo." in run("show", mine).stdout

    moved = run("archive", mine)
    assert f"in the personal memory: {personal}" in moved.stdout
    assert any(mine in p.read_text() for p in (personal / "memory" / "archive").rglob("*.json"))

    forgot = run("forget", mine, "--yes")
    assert f"forgot {mine}" in forgot.stdout and "commit it" not in forgot.stdout and "not in git, nothing to commit" in forgot.stdout
    assert mine in (personal / "memory" / "index" / "tombstones.jsonl").read_text()
    assert run("show", mine, ok=False).exit_code == 9
    assert tree_bytes(project / "memory" / "index") == before  # no byte of the project's files changed, no tombstone there


def test_a_forget_of_a_private_entry_keeps_its_tombstone_in_the_private_root(private, root):
    forgot = run("forget", private, "--yes")
    assert "in the private memory:" in forgot.stdout and "nothing to commit" in forgot.stdout and "commit it" not in forgot.stdout
    assert private in (root / "memory" / ".private" / "memory" / "index" / "tombstones.jsonl").read_text()
    assert not (root / "memory" / "index" / "tombstones.jsonl").exists()


def test_ids_in_two_roots_are_refused_and_nothing_changes(project, personal, mine):
    theirs = project_entry_id(project)
    before = tree_bytes(project / "memory" / "index") + tree_bytes(personal / "memory" / "index")
    for args in (("forget", theirs, mine, "--yes"), ("archive", theirs, mine)):
        res = run(*args, ok=False)
        assert res.exit_code == 2 and "different memories" in res.stderr and f"personal: {mine}" in res.stderr, res.output
    assert tree_bytes(project / "memory" / "index") + tree_bytes(personal / "memory" / "index") == before
    assert run("forget", "ctx-20260301-00000000", "--yes", ok=False).exit_code == 9


def test_the_mcp_forget_acts_in_the_personal_root(project, personal, mine, fake_embedder):
    from memtool.mcp_tools import MemoryTools

    tools = MemoryTools(project, embedder=fake_embedder)
    preview = tools.forget([mine])
    assert preview["forgotten"] is False and preview["from"] == "personal" and [e["id"] for e in preview["entries"]] == [mine]
    done = tools.forget([mine], confirm=True)
    assert done["from"] == "personal" and "commit it" not in done["note"] and "nothing to commit" in done["note"]
    assert mine in (personal / "memory" / "index" / "tombstones.jsonl").read_text()
    assert not (project / "memory" / "index" / "tombstones.jsonl").exists()


def test_stats_and_doctor_personal_read_the_personal_root_and_need_it_made(project, tmp_path):
    for command in ("stats", "doctor"):
        res = run(command, "--personal", ok=False)
        assert res.exit_code == 9 and "memory init --personal" in res.stderr, res.output
    assert not personal_home().exists()  # a read makes nothing
    run("init", "--personal")
    (tmp_path / "mine.md").write_text(PERSONAL_SESSION, encoding="utf-8")
    run("compress", "--personal", str(tmp_path / "mine.md"))
    mine, theirs = json.loads(run("stats", "--personal", "--json").stdout), json.loads(run("stats", "--json").stdout)
    assert (mine["root"], mine["entries"]) == (str(personal_home()), 1) and theirs["root"] == str(project)
    doctor = run("doctor", "--personal", "--json")
    assert json.loads(doctor.stdout)["root"] == str(personal_home())


def test_archive_by_age_personal_moves_the_personal_roots_old_entries_only(project, personal, tmp_path):
    (tmp_path / "old.md").write_text(PERSONAL_SESSION, encoding="utf-8")
    old = json.loads(run("compress", "--personal", str(tmp_path / "old.md"), "--date", "2019-04-02", "--json").stdout)[0]["id"]
    run("compress", str(tmp_path / "old.md"), "--date", "2019-04-02", "--session", "theirs")  # the project's, as old
    before = tree_bytes(project / "memory")
    moved = run("archive", "--personal", "--json")
    assert json.loads(moved.stdout)["entries"] == [old]
    assert any(old in p.read_text() for p in (personal / "memory" / "archive" / "2019").rglob("*.json"))
    assert tree_bytes(project / "memory") == before  # the project's old entry stays where it was
    assert len(json.loads(run("archive", "--dry-run", "--json").stdout)["entries"]) == 1  # the project's: its own


def test_archive_personal_before_the_personal_memory_exists_makes_nothing(project):
    res = run("archive", "--personal", ok=False)
    assert res.exit_code == 9 and "memory init --personal" in res.stderr, res.output
    assert not personal_home().exists()


def test_the_mcp_archive_acts_in_the_personal_root_when_told(project, personal, tmp_path, fake_embedder):
    from memtool.mcp_tools import MemoryTools

    (tmp_path / "old.md").write_text(PERSONAL_SESSION, encoding="utf-8")
    old = json.loads(run("compress", "--personal", str(tmp_path / "old.md"), "--date", "2019-04-02", "--json").stdout)[0]["id"]
    tools = MemoryTools(project, embedder=fake_embedder)
    assert tools.archive(dry_run=True)["entries"] == []  # the project's: nothing that old
    assert tools.archive(personal=True)["entries"] == [old]
    assert any(old in p.read_text() for p in (personal / "memory" / "archive" / "2019").rglob("*.json"))
