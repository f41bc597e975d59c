import pytest

from memtool.config import Settings, load_settings
from memtool.errors import ConfigError


def write_cfg(root, text):
    (root / "memory").mkdir(exist_ok=True)
    (root / "memory" / "config.yaml").write_text(text)


def test_defaults_file_then_env(root):
    assert load_settings(root, env={}) == Settings()
    write_cfg(root, "budget: 1500\nembedder: gemini\nkeep_transcripts: false\n")
    s = load_settings(root, env={"MEMTOOL_BUDGET": "900"})
    assert (s.budget, s.embedder, s.keep_transcripts) == (900, "gemini", False)


def test_every_field_is_described():
    for name, _default, help_ in Settings.describe():
        assert help_ and len(help_) > 10, name


def test_bad_yaml_names_file_and_line(root):
    write_cfg(root, "budget: 100\nembedder: [unclosed\n")
    with pytest.raises(ConfigError, match=r"config.yaml line \d+"):
        load_settings(root, env={})


def test_unknown_and_mistyped_settings(root):
    write_cfg(root, "budgett: 3\n")
    with pytest.raises(ConfigError, match="unknown setting 'budgett'"):
        load_settings(root, env={})
    write_cfg(root, "budget: lots\n")
    with pytest.raises(ConfigError, match="'budget' must be int"):
        load_settings(root, env={})
    write_cfg(root, "budget: 100\n")
    with pytest.raises(ConfigError, match="MEMTOOL_REDACT"):
        load_settings(root, env={"MEMTOOL_REDACT": "maybe"})


def _notes(root, n):
    """`memory init` plus n Markdown notes that all match 'zebra' (no compress: no embedder needed)."""
    from typer.testing import CliRunner

    from memtool.cli.main import app

    runner = CliRunner()
    assert runner.invoke(app, ["init"]).exit_code == 0
    (root / "memory" / "notes").mkdir()
    for i in range(n):
        (root / "memory" / "notes" / f"n{i}.md").write_text(f"# Note {i}\n\nThe zebra crossing plan, part {i}.\n")
    return lambda *args, **kw: runner.invoke(app, ["search", "zebra", "--json", *args], **kw)


def test_search_limit_setting_is_the_cli_default(root, monkeypatch):
    import json

    search = _notes(root, 8)
    assert len(json.loads(search().stdout)) == 5  # the built-in default
    write_cfg(root, "search_limit: 2\n")
    assert len(json.loads(search().stdout)) == 2
    assert len(json.loads(search("--limit", "3").stdout)) == 3  # an explicit --limit wins
    assert len(json.loads(search("-n", "7").stdout)) == 7
    monkeypatch.setenv("MEMTOOL_SEARCH_LIMIT", "1")  # the environment beats the file
    assert len(json.loads(search().stdout)) == 1


def test_search_limit_setting_below_one_is_a_config_error(root):
    search = _notes(root, 2)
    write_cfg(root, "search_limit: 0\n")
    res = search()
    assert res.exit_code == ConfigError.exit_code and "setting 'search_limit' must be at least 1, got 0" in res.stderr
    write_cfg(root, "")
    res = search("--limit", "0")
    assert res.exit_code == 2 and "--limit must be at least 1" in res.stderr


@pytest.mark.parametrize("line, needle", [
    ("budget: 10", "'budget' must be at least 50, got 10"),
    ("date_window_days: 0", "'date_window_days' must be at least 0.1"),
    ("date_boost: .nan", "'date_boost' must be at least 0, got nan"),
    ("max_transcript_bytes: -1", "'max_transcript_bytes' must be at least 1"),
    ("log_retention_days: -3", "'log_retention_days' must be at least 0"),
])
def test_numbers_below_their_least_sensible_value_are_refused(root, line, needle):
    write_cfg(root, line + "\n")
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")) as err:
        load_settings(root)
    assert "config.yaml" in str(err.value)


def test_every_number_setting_names_its_least_value():
    from dataclasses import fields

    numbers = [f for f in fields(Settings) if f.type in ("int", "float")]
    assert numbers and all(f.metadata["min"] is not None for f in numbers)
