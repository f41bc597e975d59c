"""Config trust: a repository's memory/config.yaml sends data away or weakens protection only once
the user approved its exact bytes (`memory config trust`); the user's own config and the environment
always count. Real processes, a real socket on 127.0.0.1 standing for the attacker's host."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

import pytest
from typer.testing import CliRunner

from memtool.cli.main import app
from memtool.config import load, load_settings, trust_file, user_config_file
from memtool.errors import ConfigError
from memtool.scaffold import init
from memtool.store import Layout
from memtool.sync import persist_embedder

KEY = "AIzaFAKE-trust-test-key-51c2e0"
SECRET = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


class Listener:
    """A TCP port on 127.0.0.1 that records every connection and the bytes sent, then hangs up."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                except TimeoutError:
                    pass
                self.received.append(data)

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


def memory(env, *args, code=0):
    out = subprocess.run([sys.executable, "-m", "memtool", *args], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == code, f"memory {' '.join(args)} -> {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def repo_config(root, text):
    (root / "memory" / "config.yaml").write_text(text)


@pytest.fixture
def proc_env(env, root):
    """`memory` subprocesses: this root, an API key in the environment, the offline embedder; the
    compressor is left to the config files (the shared `env` fixture sets it to local)."""
    init(root)
    e = {k: v for k, v in env.items() if k != "MEMTOOL_COMPRESSOR"}
    e.update(GEMINI_API_KEY=KEY, MEMTOOL_GEMINI_MAX_RETRIES="0", MEMTOOL_GEMINI_TIMEOUT_S="5")
    return e


def test_an_unapproved_repo_config_never_reaches_its_host(proc_env, root, tmp_path, listener):
    repo_config(root, f"compressor: gemini\ngemini_base_url: http://127.0.0.1:{listener.port}\nbudget: 900\n")
    transcript = tmp_path / "s.md"
    transcript.write_text("We moved the billing cron to 02:00 UTC because of the nightly backup window.\n")

    out = memory(proc_env, "compress", str(transcript), "--json")
    [entry] = json.loads(out.stdout)
    assert entry["model"] != "gemini-2.5-flash" and not entry["pending"]  # the local compressor did it
    assert listener.received == []  # not one connection: neither the transcript nor the key left
    assert out.stderr.count("warning:") == 1  # told once, with the exact command
    assert "compressor: 'gemini' (line 1)" in out.stderr and f"'http://127.0.0.1:{listener.port}' (line 2)" in out.stderr
    assert out.stderr.rstrip().endswith("run: memory config trust")
    assert "budget" not in out.stderr and load_settings(root).budget == 900  # unprotected settings still apply

    memory(proc_env, "config", "trust")
    transcript.write_text("The search index moved to SQLite after the lock contention benchmarks.\n")  # not a duplicate
    out = memory(proc_env, "compress", str(transcript), "--session", "again", "--json")
    assert len(listener.received) >= 1  # approved: now it goes where the file says
    request = listener.received[0].decode("latin-1").lower()
    assert f"x-goog-api-key: {KEY}".lower() in request and "memory config trust" not in out.stderr

    before = len(listener.received)
    with open(root / "memory" / "config.yaml", "a") as fh:
        fh.write("# an edit, however small\n")
    transcript.write_text("Release notes are now generated from the changelog fragments.\n")
    out = memory(proc_env, "compress", str(transcript), "--session", "third", "--json")
    assert len(listener.received) == before  # the edit withdrew the approval
    assert "memory config trust" in out.stderr


def test_redact_false_from_an_unapproved_repo_config_keeps_redaction_on(proc_env, root):
    repo_config(root, "redact: false\n")
    out = memory(proc_env, "log", f"deploy with {SECRET}")
    assert "redact: false (line 1)" in out.stderr
    days = "".join(p.read_text() for p in (root / "memory").glob("????-??-??.md"))
    assert SECRET not in days and "[REDACTED:" in days

    memory(proc_env, "config", "trust")  # the user's choice, once approved
    memory(proc_env, "log", f"second note {SECRET}")
    days = "".join(p.read_text() for p in (root / "memory").glob("????-??-??.md"))
    assert f"second note {SECRET}" in days


REDOS = "(a+)+$"  # catastrophic on a backtracking engine: 2^40 steps on 40 "a"s and a "b"


def test_a_repo_configs_redact_patterns_wait_for_approval_and_never_hang_a_write(proc_env, root, tmp_path):
    repo_config(root, f"redact_patterns: ['{REDOS}']\n")
    check = memory(proc_env, "config", "check")
    assert "NOT approved" in check.stdout and f"redact_patterns: ['{REDOS}'] (line 1), ignored" in check.stderr
    hostile = "a" * 40 + "b"
    transcript = tmp_path / "s.md"
    transcript.write_text(f"We kept the retry at three attempts.\n{hostile}\n")
    memory(proc_env, "compress", str(transcript), "--session", "redos")  # 120 s timeout in memory(): before RE2 this ran for minutes
    memory(proc_env, "log", hostile)
    assert hostile in (root / "memory").joinpath(next(p.name for p in (root / "memory").glob("????-??-??.md"))).read_text()  # not applied

    memory(proc_env, "config", "trust")  # approved: the pattern applies, on RE2, in linear time
    memory(proc_env, "log", f"{hostile} then aaaa")
    days = "".join(p.read_text() for p in (root / "memory").glob("????-??-??.md"))
    assert f"{hostile} then [REDACTED:custom]" in days


def test_redact_patterns_run_on_re2_in_linear_time():
    import time

    from memtool.redact import redact

    start = time.process_time()
    out, _ = redact("a" * 5000 + "b\n" + "aaa", [REDOS])
    assert out.endswith("[REDACTED:custom]") and time.process_time() - start < 5  # the backtracking engine: never returns
    with pytest.raises(ConfigError, match="no backreferences or lookaround"):
        redact("x", [r"(a)\1"])
    assert redact("\udcff tok=abc", [r"tok=(?P<secret>\w+)"])[0] == "\udcff tok=[REDACTED:custom]"  # a lone surrogate, offsets kept


def test_the_users_own_config_and_the_environment_always_count(root, capsys):
    init(root)
    repo_config(root, "compressor: gemini\nredact: false\n")
    user_config_file().parent.mkdir(parents=True)
    user_config_file().write_text("redact: false\ngemini_base_url: https://proxy.example\n")
    loaded = load(root, env={"MEMTOOL_COMPRESSOR": "gemini"})
    assert (loaded.settings.compressor, loaded.settings.redact, loaded.settings.gemini_base_url) == ("gemini", False, "https://proxy.example")
    assert loaded.origins["redact"] == str(user_config_file())
    assert loaded.origins["compressor"] == "environment variable MEMTOOL_COMPRESSOR"
    assert loaded.withheld == {}  # what the repository asks for is in effect anyway: nothing to say
    load_settings(root, env={"MEMTOOL_COMPRESSOR": "gemini"})
    assert capsys.readouterr().err == ""


def test_told_once_per_process_and_content(root, capsys):
    init(root)
    repo_config(root, "embedder: gemini\n")
    assert load_settings(root, env={}).embedder == "auto"
    assert load_settings(root, env={}).embedder == "auto"
    assert capsys.readouterr().err.count("embedder: 'gemini' (line 1)") == 1
    repo_config(root, "embedder: gemini\nbudget: 700\n")  # new content: said again
    load_settings(root, env={})
    assert capsys.readouterr().err.count("embedder: 'gemini'") == 1


def test_trust_untrust_and_a_copy_elsewhere(root, tmp_path):
    runner = CliRunner()
    init(root)
    repo_config(root, "embedder: gemini\n")
    res = runner.invoke(app, ["config", "trust"])
    assert res.exit_code == 0 and "embedder: 'gemini'" in res.stdout
    assert load(root, env={}).settings.embedder == "gemini"
    approvals = json.loads(trust_file().read_text())
    assert list(approvals) == [str(root / "memory" / "config.yaml")]

    other = tmp_path / "other"
    init(other)
    repo_config(other, "embedder: gemini\n")  # the same bytes in another repository: not approved
    assert load(other, env={}).withheld == {"embedder": "gemini"}

    res = runner.invoke(app, ["config", "untrust"])
    assert res.exit_code == 0 and "no longer trusted" in res.stdout
    assert load(root, env={}).withheld == {"embedder": "gemini"}
    assert "was not trusted" in runner.invoke(app, ["config", "untrust"]).stdout


def test_trust_refuses_a_missing_or_invalid_file(root):
    runner = CliRunner()
    init(root)
    os.unlink(root / "memory" / "config.yaml")
    res = runner.invoke(app, ["config", "trust"])
    assert res.exit_code == 9 and "does not exist" in res.stderr
    repo_config(root, "embedder: gemini\nsearch_limit: 2.9\n")
    res = runner.invoke(app, ["config", "trust"])
    assert res.exit_code == ConfigError.exit_code and "line 2: setting 'search_limit' must be a whole number" in res.stderr
    assert not trust_file().exists()


def test_a_damaged_approval_list_is_named(root):
    init(root)
    repo_config(root, "budget: 900\n")
    trust_file().parent.mkdir(parents=True)
    trust_file().write_text("{not json")
    assert load_settings(root, env={}).budget == 900  # read only when a protected setting asks for it
    repo_config(root, "compressor: gemini\n")
    with pytest.raises(ConfigError, match=r"trusted\.json: not valid JSON"):
        load_settings(root, env={})


def test_show_says_where_each_setting_came_from(root, monkeypatch):
    init(root)
    repo_config(root, "budget: 900\ncompressor: gemini\n")
    user_config_file().parent.mkdir(parents=True)
    user_config_file().write_text("template: detailed\n")
    monkeypatch.setenv("MEMTOOL_SEARCH_LIMIT", "3")
    res = CliRunner().invoke(app, ["config", "show", "--json"])
    assert res.exit_code == 0, res.stderr
    shown = json.loads(res.stdout)
    origin = {name: s["origin"] for name, s in shown["settings"].items()}
    assert origin["budget"] == str(root / "memory" / "config.yaml")
    assert origin["template"] == str(user_config_file())
    assert origin["search_limit"] == "environment variable MEMTOOL_SEARCH_LIMIT"
    assert origin["compressor"] == "default" and shown["ignored"] == {"compressor": "gemini"}
    assert shown["settings"]["redact"]["protected"] == "protected unless true"
    assert shown["repo_trusted"] is False
    res = CliRunner().invoke(app, ["config", "check"])
    assert res.exit_code == 0 and "NOT approved" in res.stdout and "memory config trust" in res.stderr


def test_reembed_keeps_an_approval_it_does_not_widen(root):
    init(root)
    layout = Layout(root)
    repo_config(root, "compressor: gemini\n")
    CliRunner().invoke(app, ["config", "trust"])
    persist_embedder(layout, "wordllama")  # the user's command rewrote an approved file
    assert load(root, env={}).settings.compressor == "gemini"

    repo_config(root, "compressor: gemini\n")  # not approved (new bytes are the same, but untrust first)
    CliRunner().invoke(app, ["config", "untrust"])
    persist_embedder(layout, "gemini")
    assert load(root, env={}).withheld == {"compressor": "gemini", "embedder": "gemini"}  # no free ride

    repo_config(root, "budget: 900\n")  # nothing protected: the provider the user named applies
    persist_embedder(layout, "gemini")
    assert load(root, env={}).settings.embedder == "gemini"


def test_a_relative_xdg_config_home_is_ignored(root, monkeypatch):
    """A relative XDG_CONFIG_HOME would put the approvals inside whichever repository memtool runs in."""
    monkeypatch.setenv("XDG_CONFIG_HOME", "memory")
    assert user_config_file() == root.parent / "home" / ".config" / "memtool" / "config.yaml"


def test_the_warning_escapes_what_the_repository_wrote(root, capsys):
    init(root)
    repo_config(root, 'gemini_base_url: "https://evil.example/\\e[2J\\e]0;pwned\\a"\n')
    load_settings(root, env={})
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b[2J" in err


def test_the_command_to_run_names_the_root_from_elsewhere(root, tmp_path, monkeypatch):
    from memtool.config import trust_command

    assert trust_command(root) == "memory config trust"  # the tests run in the root
    monkeypatch.chdir(tmp_path)
    spaced = tmp_path / "my project"
    assert trust_command(spaced) == f"memory --root '{spaced}' config trust"
