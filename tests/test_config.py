import os
import re

import pytest

from memtool.config import Settings, load_settings
from memtool.errors import ConfigError


def write_cfg(root, text):
    (root / "memory").mkdir(exist_ok=True)
    (root / "memory" / "config.yaml").write_text(text)


def test_defaults_file_then_env(root):
    assert load_settings(root, env={}) == Settings()
    write_cfg(root, "budget: 1500\nembedder: wordllama\nkeep_transcripts: false\n")
    s = load_settings(root, env={"MEMTOOL_BUDGET": "900"})
    assert (s.budget, s.embedder, s.keep_transcripts) == (900, "wordllama", False)


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
    with pytest.raises(ConfigError, match="config.yaml line 1: setting 'budget' must be a whole number, got 'lots'"):
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


@pytest.mark.parametrize(
    "line, needle",
    [
        ("budget: 10", "'budget' must be at least 50, got 10"),
        ("date_window_days: 0", "'date_window_days' must be at least 0.1"),
        ("date_boost: .nan", "'date_boost' must be at least 0, got nan"),
        ("max_transcript_bytes: -1", "'max_transcript_bytes' must be at least 1"),
        ("log_retention_days: -3", "'log_retention_days' must be at least 0"),
    ],
)
def test_numbers_below_their_least_sensible_value_are_refused(root, line, needle):
    write_cfg(root, line + "\n")
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")) as err:
        load_settings(root)
    assert "config.yaml" in str(err.value)


def test_every_number_setting_names_its_least_value():
    from dataclasses import fields

    numbers = [f for f in fields(Settings) if f.type in ("int", "float")]
    assert numbers and all(f.metadata["min"] is not None for f in numbers)


# --- safe YAML: limits before anything is built ------------------------------------------------


def billion_laughs() -> str:
    """Nine levels of nine aliases under a real setting: 9^9 (387 million) strings once expanded,
    in about 700 bytes (before anchors were refused: minutes and gigabytes for every command)."""
    lines = ["redact_patterns:", '- &lol0 "lol"']
    for i in range(1, 10):
        lines.append(f"- &lol{i} [{', '.join(f'*lol{i - 1}' for _ in range(9))}]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_fails_fast_with_the_line(root):
    import time

    text = billion_laughs()
    assert 600 <= len(text) <= 800
    write_cfg(root, text)
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"config\.yaml line 2: YAML anchors and aliases \(& and \*\) are not allowed"):
        load_settings(root, env={})
    assert time.perf_counter() - start < 1.0


def test_billion_laughs_is_a_config_error_for_every_command(root):
    from typer.testing import CliRunner

    from memtool.cli.main import app

    runner = CliRunner()
    assert runner.invoke(app, ["init"]).exit_code == 0
    write_cfg(root, billion_laughs())
    res = runner.invoke(app, ["search", "lol"])
    assert res.exit_code == ConfigError.exit_code and "anchors and aliases" in res.stderr


@pytest.mark.parametrize(
    "text, needle",
    [
        ("budget: &b 900\n", "line 1: YAML anchors and aliases"),
        ("budget: 900\nsearch_limit: 3\nbudget: 50\n", "line 3: setting 'budget' is set twice (first on line 1)"),
        ("redact_patterns: [[a]]\n", "line 1: nested too deep"),
        ("budget: 900\n---\nbudget: 100\n", "line 2: more than one YAML document"),
        ("- budget\n", "line 1: expected a mapping"),
        ("[budget]: 3\n", "line 1: a setting's name must be a plain word"),
        ("budget: !!python/object/apply:os.system ['true']\n", "line 1: not valid YAML"),
    ],
)
def test_yaml_shapes_a_config_never_needs_are_refused(root, text, needle):
    write_cfg(root, text)
    with pytest.raises(ConfigError, match=re.escape(needle)):
        load_settings(root, env={})


def test_a_huge_config_is_refused_before_it_is_read(root):
    write_cfg(root, "# padding\n" * 8000)  # 80 KB of comments
    with pytest.raises(ConfigError, match="larger than 65536 bytes"):
        load_settings(root, env={})


def test_a_config_that_is_not_a_regular_file_is_refused_without_blocking(root, tmp_path):
    (root / "memory").mkdir()
    os.mkfifo(root / "memory" / "config.yaml")  # nobody ever writes: a plain open() would hang
    with pytest.raises(ConfigError, match="not a regular file"):
        load_settings(root, env={})
    os.unlink(root / "memory" / "config.yaml")
    (tmp_path / "elsewhere.yaml").write_text("budget: 900\n")
    os.symlink(tmp_path / "elsewhere.yaml", root / "memory" / "config.yaml")
    with pytest.raises(ConfigError, match="is a symbolic link: a repository's config is read only as a regular file"):
        load_settings(root, env={})


def test_the_users_own_config_may_be_a_link_but_not_to_a_device(root, tmp_path):
    from memtool.config import user_config_file

    user = user_config_file()
    user.parent.mkdir(parents=True)
    (tmp_path / "dotfiles.yaml").write_text("budget: 900\n")
    user.symlink_to(tmp_path / "dotfiles.yaml")  # a dotfiles manager's link is fine
    assert load_settings(root, env={}).budget == 900
    user.unlink()
    user.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="not a regular file"):
        load_settings(root, env={})


# --- typed values: the field named, no silent conversion ---------------------------------------


@pytest.mark.parametrize(
    "line, needle",
    [
        ("search_limit: 2.9", "line 1: setting 'search_limit' must be a whole number, got 2.9"),
        ("search_limit: true", "setting 'search_limit' must be a whole number, got True"),
        ("budget: '900'", "setting 'budget' must be a whole number, got '900'"),
        ("date_boost: yes", "setting 'date_boost' must be a number, got True"),
        ("keep_transcripts: 'yes'", "setting 'keep_transcripts' must be true or false, got 'yes'"),
        ("gemini_model: 2", "setting 'gemini_model' must be a string, got 2"),
        ("redact_patterns: 'sk-[a-z]+'", "setting 'redact_patterns' must be a list of strings, got 'sk-[a-z]+'"),
        ("redact_patterns: [abc, 3]", "setting 'redact_patterns' must be a list of strings, got ['abc', 3]"),
        ("redact_patterns: ['ok', '(unclosed']", "setting 'redact_patterns' item 2 '(unclosed' is not a valid regular expression"),
        ("template: fancy", "setting 'template' must be one of chat, detailed, summary, got 'fancy'"),
        ("compressor: nope", "setting 'compressor' must be one of gemini, local, openai, got 'nope'"),
        ("embedder: nope", "setting 'embedder' must be one of auto, e5, fake, gemini, wordllama, got 'nope'"),  # fake: conftest's, registered here
        ("gemini_embed_dim: 5000", "setting 'gemini_embed_dim' must be at most 3072, got 5000"),
        ("sibling_weight: 1.5", "setting 'sibling_weight' must be at most 1, got 1.5"),
        ("gemini_timeout_s: .inf", "setting 'gemini_timeout_s' must be at most 3600, got inf"),
        ("date_boost: .inf", "setting 'date_boost' must be a finite number, got inf"),
        ("gemini_base_url: ftp://example.com", "setting 'gemini_base_url' must be an https:// URL, got 'ftp://example.com'"),
        ("gemini_base_url: http://example.com", "setting 'gemini_base_url' may use plain http only to this machine"),
    ],
)
def test_wrong_types_and_ranges_are_refused_with_the_field_named(root, line, needle):
    write_cfg(root, line + "\n")
    with pytest.raises(ConfigError, match=re.escape(needle)) as err:
        load_settings(root, env={})
    assert "config.yaml line " in str(err.value)


def test_right_types_pass(root):
    from memtool.config import user_config_file

    write_cfg(root, "date_boost: 3\ntemplate: summary\n")
    user_config_file().parent.mkdir(parents=True)
    user_config_file().write_text("gemini_base_url: https://proxy.example/v1\nredact_patterns: ['(?:x):y']\n")
    s = load_settings(root, env={})
    assert s.date_boost == 3.0 and isinstance(s.date_boost, float)
    assert (s.gemini_base_url, s.redact_patterns, s.template) == ("https://proxy.example/v1", ["(?:x):y"], "summary")


@pytest.mark.parametrize(
    "var, raw, needle",
    [
        ("MEMTOOL_SEARCH_LIMIT", "2.9", "environment variable MEMTOOL_SEARCH_LIMIT: setting 'search_limit' must be a whole number, got '2.9'"),
        ("MEMTOOL_SEARCH_LIMIT", "true", "MEMTOOL_SEARCH_LIMIT: setting 'search_limit' must be a whole number, got 'true'"),
        ("MEMTOOL_SEARCH_LIMIT", "0", "MEMTOOL_SEARCH_LIMIT: setting 'search_limit' must be at least 1, got 0"),
        ("MEMTOOL_REDACT", "maybe", "MEMTOOL_REDACT: setting 'redact' must be true or false, got 'maybe'"),
        ("MEMTOOL_REDACT_PATTERNS", "abc", "MEMTOOL_REDACT_PATTERNS: setting 'redact_patterns' must be a list of strings (a JSON array"),
        ("MEMTOOL_REDACT_PATTERNS", '["(bad"]', "MEMTOOL_REDACT_PATTERNS: setting 'redact_patterns' item 1 '(bad' is not a valid regular expression"),
        ("MEMTOOL_GEMINI_TIMEOUT_S", "soon", "MEMTOOL_GEMINI_TIMEOUT_S: setting 'gemini_timeout_s' must be a number, got 'soon'"),
        ("MEMTOOL_TEMPLATE", "fancy", "MEMTOOL_TEMPLATE: setting 'template' must be one of chat, detailed, summary"),
    ],
)
def test_bad_environment_values_name_the_variable(root, var, raw, needle):
    with pytest.raises(ConfigError, match=re.escape(needle)):
        load_settings(root, env={var: raw})


def test_environment_values_are_parsed_to_the_fields_type(root):
    s = load_settings(
        root, env={"MEMTOOL_SEARCH_LIMIT": " 7 ", "MEMTOOL_GEMINI_TIMEOUT_S": "2.5", "MEMTOOL_REDACT": "off", "MEMTOOL_REDACT_PATTERNS": '["a:b", "(?:x)"]'}
    )
    assert (s.search_limit, s.gemini_timeout_s, s.redact, s.redact_patterns) == (7, 2.5, False, ["a:b", "(?:x)"])


def test_options_given_in_code_are_checked_too(root):
    from memtool.app import open_memory

    _notes(root, 0)
    with pytest.raises(ConfigError, match="option search_limit: setting 'search_limit' must be a whole number, got 2.9"):
        open_memory(root, search_limit=2.9)
    with pytest.raises(ConfigError, match="option budgett: unknown setting 'budgett'"):
        open_memory(root, budgett=3)


def test_init_writes_the_trust_model_into_the_config_header(root):
    from memtool.config import FIELDS
    from memtool.scaffold import config_text

    text = config_text()
    assert "memory config trust" in text and "~/.config/memtool/config.yaml" in text
    assert load_settings(root, env={}) == Settings()  # all commented out
    lines = text.splitlines()
    marked = [name for name in FIELDS if "[protected unless" in lines[lines.index(next(line for line in lines if line.startswith(f"# {name}: "))) - 1]]
    assert marked == ["compressor", "embedder", "gemini_base_url", "openai_base_url", "redact", "cache", "personal_root", "redact_patterns"]
