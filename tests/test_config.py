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
