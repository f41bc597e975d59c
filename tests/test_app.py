"""Finding the memory root: --root and MEMTOOL_ROOT through symbolic links."""

import os

import pytest
from typer.testing import CliRunner

from memtool.app import resolve_root
from memtool.cli.main import app
from memtool.errors import NotAMemoryRoot

runner = CliRunner()


def test_a_link_to_a_root_is_followed_and_a_new_root_is_fine(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    assert resolve_root(tmp_path / "link") == (tmp_path / "real").resolve()
    assert resolve_root(tmp_path / "link" / "new") == (tmp_path / "real" / "new").resolve()  # `memory init` makes it
    assert resolve_root(tmp_path / "nothing" / "yet") == (tmp_path / "nothing" / "yet").resolve()


def test_a_dangling_or_looping_root_link_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "dangling").symlink_to(tmp_path / "unmounted" / "proj")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(NotAMemoryRoot, match=r"--root .*dangling is a symbolic link to .*unmounted/proj, which does not exist"):
        resolve_root(tmp_path / "dangling")
    with pytest.raises(NotAMemoryRoot, match=r"dangling is a symbolic link"):
        resolve_root(tmp_path / "dangling" / "sub")
    with pytest.raises(NotAMemoryRoot, match="cannot be followed"):
        resolve_root(tmp_path / "a")
    monkeypatch.setenv("MEMTOOL_ROOT", str(tmp_path / "dangling"))
    with pytest.raises(NotAMemoryRoot, match="MEMTOOL_ROOT"):
        resolve_root()


@pytest.mark.parametrize("args", [["search", "x"], ["init"], ["log", "a note"]])
def test_commands_on_a_dangling_root_link_fail_clearly_and_create_nothing(tmp_path, args):
    (tmp_path / "proj").symlink_to(tmp_path / "dotfiles" / "proj")
    (tmp_path / "loop").symlink_to("loop")
    for root in (tmp_path / "proj", tmp_path / "loop"):
        res = runner.invoke(app, ["--root", str(root), *args])
        assert res.exit_code == 3, res.output
        assert "symbolic link" in res.stderr and "Traceback" not in res.output
    assert sorted(os.listdir(tmp_path)) == ["home", "loop", "proj", "root"]  # no dotfiles/proj made at the far end
