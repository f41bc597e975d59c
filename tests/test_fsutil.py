import os
import tempfile
from pathlib import Path

import pytest

from memtool.errors import NotAMemoryRoot, StorageError
from memtool.fsutil import atomic_write_many, atomic_write_text, locked
from memtool.scaffold import init
from memtool.store import Layout, Store

as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving files to other users needs root")


def test_new_files_get_the_umask_default_and_rewrites_keep_their_mode(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    new = tmp_path / "new.json"
    atomic_write_text(new, "{}\n")
    assert new.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600
    new.chmod(0o640)
    atomic_write_text(new, "[]\n")
    assert new.stat().st_mode & 0o777 == 0o640 and new.read_text() == "[]\n"
    batch = [tmp_path / f"b{i}.json" for i in range(3)]
    atomic_write_many([(p, b"{}\n") for p in batch])
    assert {p.stat().st_mode & 0o777 for p in batch} == {0o666 & ~umask}


@pytest.fixture
def linked(tmp_path):
    """A project whose Layer 3 files are relative links into a dotfiles folder, one through a second link."""
    dot, proj = tmp_path / "dot", tmp_path / "proj"
    dot.mkdir(), proj.mkdir()
    (dot / "MEMORY.md").write_text("# MEMORY\n")
    (dot / "USER.md").write_text("# USER\n")
    (proj / "MEMORY.md").symlink_to("../dot/MEMORY.md")
    (proj / "user-link").symlink_to("../dot/USER.md")
    (proj / "USER.md").symlink_to("user-link")  # a chain: USER.md -> user-link -> ../dot/USER.md
    return proj, dot


def leftovers(*folders) -> list[str]:
    return [n for folder in folders for n in os.listdir(folder) if n.endswith(".tmp")]


def test_a_write_to_a_symbolic_link_goes_to_its_target_and_the_link_stays(linked):
    proj, dot = linked
    (dot / "MEMORY.md").chmod(0o640)
    atomic_write_text(proj / "MEMORY.md", "# MEMORY\n- We use Postgres 15\n")
    assert os.readlink(proj / "MEMORY.md") == "../dot/MEMORY.md"
    assert (dot / "MEMORY.md").read_text() == "# MEMORY\n- We use Postgres 15\n"
    assert (dot / "MEMORY.md").stat().st_mode & 0o777 == 0o640  # the target's mode, not the link's
    written = atomic_write_many([(proj / "MEMORY.md", b"# M\n"), (proj / "USER.md", b"# U\n"), (proj / "plain.md", b"x\n")])
    assert written == [proj / "MEMORY.md", proj / "USER.md", proj / "plain.md"]  # the paths asked for
    assert os.readlink(proj / "USER.md") == "user-link" and os.readlink(proj / "user-link") == "../dot/USER.md"
    assert (dot / "MEMORY.md").read_bytes() == b"# M\n" and (dot / "USER.md").read_bytes() == b"# U\n"
    assert not (proj / "plain.md").is_symlink() and leftovers(proj, dot) == []


def test_a_link_to_a_missing_file_creates_it_but_never_a_missing_folder(linked):
    proj, dot = linked
    (proj / "AGENTS.md").symlink_to("../dot/AGENTS.md")
    atomic_write_text(proj / "AGENTS.md", "# AGENTS\n")  # as `echo > AGENTS.md` or an editor would
    assert (proj / "AGENTS.md").is_symlink() and (dot / "AGENTS.md").read_text() == "# AGENTS\n"

    (proj / "notes.md").symlink_to("../not-checked-out/notes.md")
    with pytest.raises(StorageError, match="the folder .*not-checked-out does not exist"):
        atomic_write_text(proj / "notes.md", "x\n")
    with pytest.raises(StorageError, match="not-checked-out"):  # checked before any file of the batch is written
        atomic_write_many([(proj / "MEMORY.md", b"changed\n"), (proj / "notes.md", b"x\n")])
    assert not (proj.parent / "not-checked-out").exists() and (proj / "notes.md").is_symlink()
    assert (dot / "MEMORY.md").read_text() == "# MEMORY\n" and leftovers(proj, dot) == []


def test_a_link_loop_or_a_link_to_a_folder_is_a_storage_error(linked):
    proj, dot = linked
    (proj / "a.md").symlink_to("b.md")
    (proj / "b.md").symlink_to("a.md")
    with pytest.raises(StorageError, match="cannot be followed"):
        atomic_write_text(proj / "a.md", "x\n")
    (proj / "folder.md").symlink_to("../dot")
    with pytest.raises(StorageError, match="cannot write"):
        atomic_write_text(proj / "folder.md", "x\n")
    assert os.readlink(proj / "a.md") == "b.md" and os.readlink(proj / "folder.md") == "../dot"
    assert (dot / "MEMORY.md").read_text() == "# MEMORY\n" and leftovers(proj, dot) == []


@as_root
def test_a_rewrite_keeps_the_files_owner(tmp_path):
    one, many = tmp_path / "MEMORY.md", tmp_path / "day.json"
    for path in (one, many):
        path.write_text("old\n")
        os.chown(path, 12345, 23456)
        path.chmod(0o640)
    atomic_write_text(one, "new\n")
    atomic_write_many([(many, b"new\n")])
    for path in (one, many):
        st = path.stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777, path.read_text()) == (12345, 23456, 0o640, "new\n")


@as_root
def test_a_user_without_the_right_keeps_the_group_and_becomes_owner():
    """fchown to another owner fails with EPERM for a plain user: the write still happens, and the
    group (which the writer belongs to) is kept, so a shared folder stays readable by the team."""
    with tempfile.TemporaryDirectory() as shared:  # pytest's own folders are private to root
        os.chmod(shared, 0o777)
        path = Path(shared) / "MEMORY.md"
        path.write_text("old\n")
        os.chown(path, 12345, 23456)
        path.chmod(0o664)
        groups, egid, euid = os.getgroups(), os.getegid(), os.geteuid()
        os.setgroups([23456])
        os.setegid(65534)
        os.seteuid(65534)  # another user, a member of the file's group
        try:
            atomic_write_text(path, "new\n")
        finally:
            os.seteuid(euid)
            os.setegid(egid)
            os.setgroups(groups)
        st = path.stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777, path.read_text()) == (65534, 23456, 0o664, "new\n")


def test_a_lock_never_makes_the_store_again(root, tmp_path):
    """memory/ moved away while a command runs: the store's lock is an error, and no empty memory/
    comes back, nor through a lock in a folder of it (the search cache's). A lock may make its own
    folder inside one that exists (memory/.cache deleted by hand), never a tree."""
    init(root)
    store = Store(Layout(root))
    cache_lock = root / "memory" / ".cache" / "build.lock"
    with store.lock(), locked(cache_lock):
        assert cache_lock.parent.is_dir()
    os.rename(root / "memory", tmp_path / "away")
    with pytest.raises(NotAMemoryRoot, match="memory does not exist .*moved or deleted"):
        with store.lock():
            pass
    with pytest.raises(NotAMemoryRoot, match="memory does not exist"):
        with locked(cache_lock):
            pass
    assert not (root / "memory").exists()
    (root / "memory").write_text("a file now\n")
    with pytest.raises(NotAMemoryRoot, match="is not a folder"):
        with locked(root / "memory" / ".lock"):
            pass
