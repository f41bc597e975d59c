import os

from memtool.fsutil import atomic_write_many, atomic_write_text


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
