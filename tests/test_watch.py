"""`memory watch`: a real watchdog observer over a real tmp root, edited the ways editors and git do."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from types import SimpleNamespace

import pytest

from memtool.scaffold import init
from memtool.sync import persist_embedder
from memtool.watch import Watcher, relevant
from tests.conftest import read_vector_at, transcript_path
from tests.test_sync import TEXTS, RecordingEmbedder, day_path, mem_with, when

DEBOUNCE, MAX_LATENCY = 0.1, 1.0
TIMEOUT = 20.0


def wait_for(pred, what: str, timeout: float = TIMEOUT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@pytest.fixture
def watched(root):
    init(root)
    mem = mem_with(root)
    entries = [mem.compress(t, when=when(3 + i % 2)) for i, t in enumerate(TEXTS[:3])]
    log = mem.log("Deploys are frozen during the audit.", when=datetime(2026, 2, 3, 9, 0).astimezone())
    reports, errors = [], []
    watcher = Watcher(mem_with(root), debounce=DEBOUNCE, max_latency=MAX_LATENCY, on_sync=reports.append, on_error=errors.append)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, kwargs={"stop": stop}, daemon=True)
    thread.start()
    assert watcher.ready.wait(TIMEOUT), "the watcher did not start"
    w = SimpleNamespace(root=root, reports=reports, watcher=watcher, entries=entries, log=log, mark=len(reports))
    yield w
    stop.set()
    thread.join(TIMEOUT)
    assert not thread.is_alive(), "the watcher did not stop"
    assert errors == []


def since(w) -> list:
    return w.reports[w.mark :]


def md_seen(w, kind: str, rel: str):
    return lambda: any(rel in getattr(r.markdown, kind) for r in since(w))


def searchable(root, word: str) -> bool:
    return any(word in h.text for h in mem_with(root).search(word, limit=10))


def test_create_edit_rename_delete(watched):
    w, root = watched, watched.root
    notes = root / "memory/notes.md"
    notes.write_text("# Notes\nThe Grafana dashboard lives in the ops folder.\n")
    wait_for(md_seen(w, "added", "memory/notes.md"), "the new file")
    assert searchable(root, "Grafana")

    with open(w.log, "a", encoding="utf-8") as fh:
        fh.write("- 10:00 Switched the cache to Valkey\n")
    wait_for(md_seen(w, "changed", w.log.relative_to(root).as_posix()), "the edited daily log")
    assert searchable(root, "Valkey")

    os.rename(notes, root / "memory/ops.md")
    wait_for(lambda: md_seen(w, "removed", "memory/notes.md")() and md_seen(w, "added", "memory/ops.md")(), "the rename")
    assert any("ops.md" in h.ref for h in mem_with(root).search("Grafana"))

    (root / "memory/ops.md").unlink()
    wait_for(md_seen(w, "removed", "memory/ops.md"), "the deletion")
    assert not searchable(root, "Grafana")
    assert all(r.changed for r in w.reports), "a sync ran for nothing"


def test_editor_save_patterns(watched):
    w, root = watched, watched.root
    path = root / "MEMORY.md"
    # vim: probe file, swap file, backup by rename, write the new file, delete the backup
    (root / "memory/4913").write_text("")
    (root / "memory/4913").unlink()
    swap = root / ".MEMORY.md.swp"
    swap.write_bytes(b"\x00swap")
    os.rename(path, root / "MEMORY.md~")
    path.write_text("# Memory\nWe never deploy on Fridays.\n")
    (root / "MEMORY.md~").unlink()
    swap.unlink()
    wait_for(md_seen(w, "changed", "MEMORY.md"), "the vim-style save")
    assert searchable(root, "Fridays")

    # delete, then create again
    mark = len(w.reports)
    path.unlink()
    path.write_text("# Memory\nWe never deploy on Saturdays either.\n")
    wait_for(lambda: any("MEMORY.md" in r.markdown.changed + r.markdown.added for r in w.reports[mark:]), "delete-then-create")
    assert searchable(root, "Saturdays")

    # atomic save: write a temp file, then replace the target
    mark = len(w.reports)
    tmp = root / "memory/.goutputstream-XYZ123"
    tmp.write_text("# Memory\nWe deploy on Thursdays after the standup.\n")
    os.replace(tmp, root / "memory/team.md")
    tmp2 = root / ".MEMORY.md.3f2a.tmp"
    tmp2.write_text("# Memory\nDeploys happen on Thursdays.\n")
    os.replace(tmp2, path)
    wait_for(lambda: any("MEMORY.md" in r.markdown.changed for r in w.reports[mark:]), "the atomic save")
    wait_for(lambda: any("memory/team.md" in r.markdown.added for r in w.reports[mark:]), "the renamed temp file")
    assert searchable(root, "Thursdays") and not searchable(root, "Fridays")
    assert not any(n for r in w.reports for n in r.markdown.added if "goutputstream" in n or n.endswith((".tmp", "~", ".swp")))


def test_burst_of_200_files_is_one_or_few_syncs(watched):
    w, root = watched, watched.root
    folder = root / "memory/imported"
    folder.mkdir()
    for i in range(200):
        (folder / f"note-{i:03d}.md").write_text(f"# Note {i}\nImported note number {i} about topic{i}.\n")
    wait_for(lambda: sum(len(r.markdown.added) for r in since(w)) >= 200, "200 files indexed")
    assert len(since(w)) <= 3, [r.line() for r in since(w)]
    assert searchable(root, "topic137")


def test_hand_edited_entry_reembeds_it_and_own_writes_are_ignored(watched):
    w, root = watched, watched.root
    target = w.entries[0]
    path = day_path(root, 3)
    doc = json.loads(path.read_text())
    for e in doc["entries"]:
        if e["id"] == target.id:
            e["summary"] = "We decided to move billing to Cockroachdb."
    path.write_text(json.dumps(doc, indent=2) + "\n")
    report = wait_for(lambda: next((r for r in since(w) if r.entries.changed), None), "the edited entry")
    assert report.entries.changed == [target.id] and report.embedded == 1 and report.index_rebuilt == "stale"
    # the embedding file and index.json it wrote come back as events: recognised as ours, no sync
    wait_for(lambda: w.watcher.skipped >= 1, "the watcher to skip its own writes")
    assert all(r.changed for r in since(w))
    assert searchable(root, "Cockroachdb")


def test_transcript_edited_in_place(watched):
    w, root = watched, watched.root
    target = w.entries[1]
    with open(transcript_path(root, target.id), "a", encoding="utf-8") as fh:
        fh.write("Bob later traced it to a Zephyrix sidecar.\n")
    wait_for(lambda: any(r.search_rebuilt for r in since(w)), "a sync for the edited transcript")
    hit = mem_with(root).search("Zephyrix", limit=3)[0]
    assert hit.id == target.id and "Zephyrix" in hit.passage


def test_folders_made_under_memory_are_watched(watched):
    """memory/ is watched folder by folder (the cache folder never): a new one is followed, a removed
    one dropped, and the same one made again followed again."""
    w, root = watched, watched.root
    notes, plan = root / "memory/notes", "memory/notes/plan.md"
    for round_ in range(2):
        mark = len(w.reports)
        notes.mkdir()
        (notes / "plan.md").write_text("# Plan\nShip the Quetzal release.\n")
        wait_for(lambda: any(plan in r.markdown.added for r in w.reports[mark:]), f"the new folder's file ({round_})")
        (notes / "plan.md").write_text("# Plan\nShip the Quetzal release on Friday.\n")  # seen only if the folder is watched
        wait_for(lambda: any(plan in r.markdown.changed for r in w.reports[mark:]), f"an edit in the new folder ({round_})")
        mark = len(w.reports)
        shutil.rmtree(notes)
        wait_for(lambda: any(plan in r.markdown.removed for r in w.reports[mark:]), f"the folder removed ({round_})")


def _replace_by_rename(path, edit) -> None:
    """Edit a JSON file as editors and scripts do: write a temp file, then rename it over the target."""
    doc = json.loads(path.read_text())
    edit(doc)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)


@pytest.mark.parametrize("folder", ["memory/index", "memory"])
def test_folder_deleted_and_made_again_at_once_is_watched_again(watched, tmp_path, folder):
    """`rm -rf memory/index && git checkout -- memory/index` (or the same for memory/ itself) within one
    burst: the folder at that path is another one (inotify watches follow the inode, and watchdog stops a
    watch whose folder is deleted), so it gets a fresh watch and later edits in it are synced."""
    w, root = watched, watched.root
    copy = tmp_path / "copy"
    shutil.copytree(root / folder, copy, ignore=shutil.ignore_patterns(".cache", ".lock"))  # what git restores
    mark = len(w.reports)
    shutil.rmtree(root / folder)
    shutil.copytree(copy, root / folder)
    wait_for(lambda: len(w.reports) > mark, "the sync after the folder came back")

    mark = len(w.reports)
    target = next(e for e in w.entries if e.day == "2026-02-03")
    _replace_by_rename(
        day_path(root, 3), lambda doc: [e.update(summary="We named the billing service Wyvern.") for e in doc["entries"] if e["id"] == target.id]
    )
    wait_for(lambda: any(target.id in r.entries.changed for r in w.reports[mark:]), "the day file edited by rename")
    index = json.loads((root / "memory/index/index.json").read_text())
    assert "Wyvern" in next(e["summary"] for e in index["entries"] if e["id"] == target.id)
    assert searchable(root, "Wyvern")

    with open(w.log, "a", encoding="utf-8") as fh:  # a file directly in memory/, and a new one
        fh.write("- 11:00 Rotated the Kestrel signing keys\n")
    (root / "memory/2026-02-05.md").write_text("# 2026-02-05\n- 08:00 Booked the Ocelot review\n")
    wait_for(lambda: any(w.log.relative_to(root).as_posix() in r.markdown.changed for r in w.reports[mark:]), "the log edit")
    wait_for(lambda: any("memory/2026-02-05.md" in r.markdown.added for r in w.reports[mark:]), "the new day file")
    assert searchable(root, "Kestrel") and searchable(root, "Ocelot")


def test_memory_gone_during_a_sync_is_a_warning(root, tmp_path, monkeypatch):
    """memory/ vanishing while a sync reads it is not a crash: the watcher warns and waits for it.
    A file missing while memory/ is still there remains an error."""
    import memtool.watch as watch_mod

    init(root)
    warnings: list[str] = []
    watcher = Watcher(mem_with(root), on_warning=warnings.append)

    def sync_while_moved(mem, **kw):
        os.rename(root / "memory", tmp_path / "away")
        raise FileNotFoundError(2, "No such file or directory", str(root / "memory/index/index.json"))

    monkeypatch.setattr(watch_mod, "sync", sync_while_moved)
    assert watcher.sync_now() is None and watcher.gone
    assert len(warnings) == 1 and "is gone" in warnings[0]
    os.rename(tmp_path / "away", root / "memory")

    def sync_missing_file(mem, **kw):
        raise FileNotFoundError(2, "No such file or directory", str(root / "memory/index/index.json"))

    monkeypatch.setattr(watch_mod, "sync", sync_missing_file)
    with pytest.raises(FileNotFoundError):
        watcher.sync_now()


def test_memory_gone_before_a_sync_takes_the_lock_is_a_warning_and_not_made_again(root, tmp_path):
    """A real sync with memory/ moved away: the lock refuses to make it again (it once made an empty
    memory/ tree here), and the watcher warns and waits instead of reporting an error."""
    init(root)
    warnings: list[str] = []
    errors: list = []
    watcher = Watcher(mem_with(root), on_warning=warnings.append, on_error=errors.append)
    os.rename(root / "memory", tmp_path / "away")
    assert watcher.sync_now() is None and watcher.gone
    assert len(warnings) == 1 and "is gone" in warnings[0] and errors == []
    assert not (root / "memory").exists()


def test_malformed_file_then_fixed_and_index_json_deleted(watched):
    w, root = watched, watched.root
    path = day_path(root, 4)
    good = path.read_text()
    kept = [e.id for e in w.entries if e.day == "2026-02-04"]
    path.write_text(good.replace('"summary":', '"summary"', 1))
    report = wait_for(lambda: next((r for r in since(w) if r.errors), None), "the parse error")
    line = good.splitlines().index(next(ln for ln in good.splitlines() if '"summary":' in ln)) + 1
    assert report.errors[0].startswith(f"{path}:{line}:")
    index = json.loads((root / "memory/index/index.json").read_text())
    assert set(kept) <= {e["id"] for e in index["entries"]}

    mark = len(w.reports)
    path.write_text(good)
    wait_for(lambda: any(not r.errors for r in w.reports[mark:]), "the fixed file")

    mark = len(w.reports)
    (root / "memory/index/index.json").unlink()
    wait_for(lambda: any(r.index_rebuilt == "missing" for r in w.reports[mark:]), "index.json rebuilt")
    assert len(json.loads((root / "memory/index/index.json").read_text())["entries"]) == len(w.entries)


def test_config_change_reopens_the_memory(root):
    """Another embedder in memory/config.yaml (as `memory reembed --provider` writes it): the watcher
    rebuilds its Memory and re-embeds with it, instead of fighting the switch."""
    init(root)
    mem = mem_with(root)
    entries = [mem.compress(t, when=when(3)) for t in TEXTS[:2]]
    other = RecordingEmbedder(model="other", dim=32)
    reports: list = []
    watcher = Watcher(mem_with(root), debounce=DEBOUNCE, max_latency=MAX_LATENCY, on_sync=reports.append, reopen=lambda: mem_with(root, other))
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, kwargs={"stop": stop}, daemon=True)
    thread.start()
    try:
        assert watcher.ready.wait(TIMEOUT)
        persist_embedder(watcher.layout, "wordllama")  # a registered name: settings are checked; the Memory reopened injects `other`
        report = wait_for(lambda: next((r for r in reports if r.model == "other"), None), "a sync with the new embedder")
        assert report.embedded == len(entries)
        assert {read_vector_at(p)["model"] for p in (root / "memory/index/embeddings").rglob("*.vec")} == {"other"}
    finally:
        stop.set()
        thread.join(TIMEOUT)


def test_relevant_paths(root):
    from memtool.store import Layout

    layout = Layout(root)
    yes = ["MEMORY.md", "AGENTS.md", "memory/2026-02-03.md", "memory/index/2026-02-03.json", "memory/index/embeddings/x.json", "memory/sub/n.md"]
    no = [
        "README.md",
        "src/app.py",
        "memory/.cache/search/docs.jsonl",
        "memory/.lock",
        "memory/.n.md.swp",
        "memory/n.md~",
        "memory/4913",
        "memory/.goutputstream-AB12",
        "memory/index/.x.json.abcd.tmp",
        "memory/.#n.md",
        "/elsewhere/MEMORY.md",
    ]
    assert [p for p in yes if not relevant(layout, str(root / p))] == []
    assert [p for p in no if relevant(layout, str(root / p))] == []


def _reader(proc) -> queue.Queue:
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True).start()
    return lines


def test_cli_watch_once_and_ctrl_c(root, env):
    init(root)
    log = root / "memory/2026-02-03.md"
    log.write_text("# 2026-02-03\n- 09:00 first note\n")
    cmd = [sys.executable, "-m", "memtool.cli.main", "--root", str(root), "watch", "--debounce", "0.05"]
    env = {**env, "PYTHONUNBUFFERED": "1"}
    once = subprocess.run([*cmd, "--once"], capture_output=True, text=True, env=env, timeout=120)  # one pass: it never waits for a change
    assert once.returncode == 0 and "markdown +" in once.stdout, once.stderr
    with open(log, "a", encoding="utf-8") as fh:
        fh.write("- 10:00 second note\n")
    again = subprocess.run([*cmd, "--once"], capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and "markdown +0 ~1 -0" in again.stdout, again.stderr

    # Ctrl-C as a terminal sends it: a process started in the background of a non-interactive shell
    # (as CI may run this suite) inherits SIGINT ignored, and Python then keeps ignoring it.
    forever = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
    )
    assert "up to date" in _reader(forever).get(timeout=120)
    forever.send_signal(signal.SIGINT)
    forever.wait(timeout=30)  # stops at once, says so; the status is 0, or (rarely, under load) death by
    assert forever.returncode in (0, -signal.SIGINT)  # SIGINT after "stopped": what a shell reports for Ctrl-C
    assert "stopped" in forever.stderr.read()


def test_cli_watch_survives_memory_moved_away_and_back(root, tmp_path, env):
    """A branch checkout without memory/, `git stash -u` or a `mv`: memory/ is briefly gone. The watch
    warns, keeps running, syncs nothing meanwhile (a sync would make a new memory/ in its place), and
    syncs once memory/ is back and after every later change."""
    init(root)
    log = root / "memory/2026-02-03.md"
    log.write_text("# 2026-02-03\n- 09:00 first note\n")
    cmd = [sys.executable, "-m", "memtool.cli.main", "--root", str(root), "watch", "--debounce", "0.05"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**env, "PYTHONUNBUFFERED": "1"})
    out, err = _reader(proc), queue.Queue()
    threading.Thread(target=lambda: [*[err.put(ln) for ln in proc.stderr], err.put(None)], daemon=True).start()
    seen_err: list[str] = []

    def stderr_has(text: str, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while not any(text in ln for ln in seen_err):
            try:
                line = err.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:  # timed out, or the watch died
                raise AssertionError(f"no {text!r} on stderr: {''.join(seen_err)}")
            seen_err.append(line)

    try:
        assert "markdown +" in out.get(timeout=120)  # the initial sync (loads the embedder)
        away = tmp_path / "away"
        os.rename(root / "memory", away)
        stderr_has("warning:")
        assert "is gone" in "".join(seen_err) and "Traceback" not in "".join(seen_err)
        (root / "MEMORY.md").write_text("# Memory\nWritten while memory/ was away.\n")
        time.sleep(0.5)
        assert proc.poll() is None, "".join(seen_err)
        assert not (root / "memory").exists(), "a sync made a new memory/ while it was away"

        os.rename(away, root / "memory")
        back = out.get(timeout=30)
        assert "markdown +0 ~1 -0" in back, back  # MEMORY.md, changed while memory/ was away
        with open(log, "a", encoding="utf-8") as fh:
            fh.write("- 10:00 Moved the build cache to Tardigrade\n")
        assert "markdown +0 ~1 -0" in out.get(timeout=30)
        (root / "memory/2026-02-04.md").write_text("# 2026-02-04\n- 08:00 Booked the Ocelot review\n")
        assert "markdown +1 ~0 -0" in out.get(timeout=30)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    found = subprocess.run([*cmd[:5], "search", "Tardigrade", "--json"], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert "Tardigrade" in found.stdout


def test_cold_cli_does_not_import_watchdog():
    code = "import sys, memtool.cli.main, memtool.sync; print(sorted(m for m in ('watchdog', 'rich.progress') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
