"""The three real agent clients (from node_modules/.bin, pinned in package.json) set up as a new
user would, in a throwaway HOME and project, pointed at the fake model server; and how each one
shows a hook's context to the model, so a test can tell what memtool injected, and where.

What each client needs (found by running them, versions in package.json):
  Claude Code  ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY. Hook context reaches the model as
               "SessionStart hook additional context: ..." / "UserPromptSubmit hook additional
               context: ..."; over 10,000 characters it is replaced by a <persisted-output> preview.
               `claude -p` starts without waiting for MCP servers unless MCP_CONNECTION_NONBLOCKING=false.
  Codex CLI    [model_providers.X] with base_url and wire_api = "responses" in $CODEX_HOME/config.toml;
               project hooks load only in a trusted project ([projects."<dir>"] trust_level =
               "trusted", what `codex exec --trust` writes) and each hook runs only once trusted:
               [hooks.state."<hooks.json>:<event>:<group>:<handler>"] trusted_hash = "sha256:..."
               (what /hooks "Trust" writes; `codex app-server`'s hooks/list gives key, currentHash and
               trustStatus). SessionStart context is a developer message before the prompt,
               UserPromptSubmit context one after it; over 2,500 tokens (bytes / 4) it is cut to
               "Warning: truncated output ...".
  Gemini CLI   GOOGLE_GEMINI_BASE_URL + GEMINI_API_KEY with security.auth.selectedType
               "gemini-api-key", and the project folder trusted (trustedFolders.json) for project
               hooks. SessionStart context is put before the prompt inside the same part as
               "<hook_context>...</hook_context>\\n\\n<prompt>", BeforeAgent context is a part of
               its own after it; BeforeAgent's payload "prompt" already holds the SessionStart part.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from tests.real_clients.fake_model import FakeModelServer, Request

HERE = Path(__file__).parent
BIN = HERE / "node_modules" / ".bin"
MEMORY = Path(sys.executable).parent / "memory"  # the venv's `memory`, which the hooks run by its absolute path
CLIENT_TIMEOUT_S = 180.0
ENTRY_WAIT_S = 120.0  # the detached session-end worker: 4-8 s on a quiet machine, much more on a loaded one
# variables of the machine's own agents and of memtool that must not reach the sandbox
_DROP = re.compile(r"^(MEMTOOL_|ANTHROPIC_|CLAUDE|OPENAI_|CODEX_|GEMINI_|GOOGLE_|XDG_|VIRTUAL_ENV|MCP_)")


@dataclass
class Run:
    """One run of a client: its exit, output, time span, and the generation requests it sent."""

    client: str
    argv: list[str]
    returncode: int | None  # None: killed
    stdout: str
    stderr: str
    started: datetime
    ended: datetime
    requests: list[Request] = field(default_factory=list)

    def main_request(self, prompt_words: str) -> Request:
        """The last generation request that carries the prompt (Gemini CLI sends a routing request first)."""
        found = [r for r in self.requests if prompt_words in r.text()]
        assert found, f"{self.client}: no request to the model carried the prompt\n{self.describe()}"
        return found[-1]

    def describe(self) -> str:
        tail = lambda text: text[-3000:] if len(text) > 3000 else text  # noqa: E731
        return f"$ {' '.join(self.argv[:2])} ... (exit {self.returncode})\n--- stdout ---\n{tail(self.stdout)}\n--- stderr ---\n{tail(self.stderr)}"


class Sandbox:
    """A throwaway HOME and project (a git repository with `memory init` done), and the environment
    every process of the test runs with."""

    def __init__(self, root: Path, server: FakeModelServer):
        self.home, self.project, self.server = root / "home", root / "project", server
        self.home.mkdir(parents=True)
        self.project.mkdir(parents=True)
        base = {k: v for k, v in os.environ.items() if not _DROP.match(k)}
        bins = os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")])
        self.env = base | {"HOME": str(self.home), "PATH": bins, "NO_COLOR": "1", "CI": "true"}
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.project)], check=True, env=self.env)

    def memory(self, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(MEMORY), *args], cwd=self.project, env=self.env, capture_output=True, text=True, input=input, timeout=300)
        if check:
            assert done.returncode == 0, f"memory {' '.join(args)} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
        return done

    def entries(self) -> list[dict[str, Any]]:
        out = self.memory("export").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]

    def kept_transcript(self, entry_id: str) -> str:
        """The transcript memtool kept for an entry (memory/transcripts/YYYY-MM/<id>.md), or ''."""
        found = list((self.project / "memory" / "transcripts").glob(f"*/{entry_id}.md"))
        return found[0].read_text(encoding="utf-8") if found else ""

    def wait_for_entries(self, known: set[str], count: int = 1, timeout: float = ENTRY_WAIT_S) -> list[dict[str, Any]]:
        """Entries not in `known`, once at least `count` are there (polling; [] after `timeout`)."""
        deadline = time.monotonic() + timeout
        while True:
            new = [e for e in self.entries() if e["id"] not in known]
            if len(new) >= count or time.monotonic() > deadline:
                return new
            time.sleep(1.0)

    def hooks_log(self) -> str:
        log = self.home / ".cache" / "memtool" / "hooks" / "hooks.log"
        return log.read_text(encoding="utf-8", errors="replace") if log.exists() else "(no hooks log)"


class Client:
    """One agent client: memtool's name for it, how to set it up, run it, and read what it sent."""

    agent: str  # memtool's --agent name
    api: str  # the fake server's name for its API
    program: str  # in node_modules/.bin

    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox
        self.setup()

    @property
    def binary(self) -> Path:
        return BIN / self.program

    def setup(self) -> None:
        """Write the client's own settings into the sandbox HOME."""

    def env(self) -> dict[str, str]:
        return dict(self.sandbox.env)

    def argv(self, prompt: str) -> list[str]:
        raise NotImplementedError

    def install_hooks(self) -> subprocess.CompletedProcess[str]:
        """`memory hooks install` for this client, then whatever the client needs to run them (trust)."""
        return self.sandbox.memory("hooks", "install", "--agent", self.agent, "--memory", str(MEMORY))

    def start(self, prompt: str, extra_env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], datetime, int]:
        seen = len(self.sandbox.server.log.requests)
        proc = subprocess.Popen(
            self.argv(prompt),
            cwd=self.sandbox.project,
            env=self.env() | (extra_env or {}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: a kill takes the hooks and MCP servers it started too
        )
        return proc, datetime.now(timezone.utc), seen

    def finish(self, proc: subprocess.Popen[str], started: datetime, seen: int, killed: bool = False) -> Run:
        if killed:
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=CLIENT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            err += f"\n[killed by the test after {CLIENT_TIMEOUT_S:.0f} s]"
        requests = [r for r in self.sandbox.server.log.requests[seen:] if r.is_generation and r.api == self.api]
        return Run(self.agent, self.argv("…"), None if killed else proc.returncode, out, err, started, datetime.now(timezone.utc), requests)

    def run(self, prompt: str, extra_env: dict[str, str] | None = None) -> Run:
        return self.finish(*self.start(prompt, extra_env))

    # --- what memtool injected, as this client showed it to the model -------------------------
    def start_context(self, request: Request, prompt: str) -> str:
        """The session-start hook's context in this request ('' when none)."""
        raise NotImplementedError

    def prompt_context(self, request: Request, prompt: str) -> str:
        """The prompt hook's (UserPromptSubmit / BeforeAgent) context in this request ('' when none)."""
        raise NotImplementedError

    def capped(self, context: str) -> str:
        """Why the client replaced or cut this hook context ('' when it took it whole)."""
        return ""

    # --- the client's own transcripts -----------------------------------------------------------
    def sessions(self) -> dict[str, Path]:
        """The session ids of the transcripts the client left on disk, with each file."""
        raise NotImplementedError


# --- Claude Code ------------------------------------------------------------------------------

_CLAUDE_LABEL = re.compile(r"(SessionStart|UserPromptSubmit) hook additional context: ")
_CLAUDE_AFTER = ("\n\n# Environment\n", "\n\nToday's date is ", "\n\nIMPORTANT: ")
CLAUDE_CONTEXT_CAP_CHARS = 10_000


class ClaudeCode(Client):
    agent, api, program = "claude-code", "anthropic", "claude"

    def env(self) -> dict[str, str]:
        return super().env() | {
            "ANTHROPIC_BASE_URL": self.sandbox.server.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-memtool-tests",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }

    def argv(self, prompt: str) -> list[str]:
        return [str(self.binary), "-p", prompt]

    def _labelled(self, request: Request, event: str) -> str:
        for text in _texts(request.body):
            for match in _CLAUDE_LABEL.finditer(text):
                if match.group(1) != event:
                    continue
                rest = text[match.end() :]
                following = _CLAUDE_LABEL.search(rest)
                cut = min([rest.find(m) for m in _CLAUDE_AFTER if m in rest] + ([following.start()] if following else []) + [len(rest)])
                return rest[:cut]
        return ""

    def start_context(self, request: Request, prompt: str) -> str:
        return self._labelled(request, "SessionStart")

    def prompt_context(self, request: Request, prompt: str) -> str:
        return self._labelled(request, "UserPromptSubmit")

    def capped(self, context: str) -> str:
        return "Claude Code replaced it with a <persisted-output> preview" if "<persisted-output>" in context else ""

    def sessions(self) -> dict[str, Path]:
        return {p.stem: p for p in (self.sandbox.home / ".claude" / "projects").glob("*/*.jsonl")}

    def add_mcp_server(self) -> subprocess.CompletedProcess[str]:
        """`claude mcp add memtool -- <memory> --root <project> serve`, as docs/agents.md says."""
        argv = [str(self.binary), "mcp", "add", "memtool", "--", str(MEMORY), "--root", str(self.sandbox.project), "serve"]
        return subprocess.run(argv, cwd=self.sandbox.project, env=self.env(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


# --- Codex CLI --------------------------------------------------------------------------------

CODEX_CONTEXT_CAP_TOKENS = 2_500  # Codex's default hook additionalContext limit (hooks/list additionalContextLimit)
CODEX_DEFAULT_TIMEOUT_S = 600


def codex_hook_hash(event: str, group: dict[str, Any], handler: dict[str, Any]) -> str:
    """The trusted_hash Codex (0.171.0) wants for one command hook of hooks.json: sha256 of the compact,
    key-sorted JSON of the hook's normalised identity (codex-rs hooks discovery: command_hook_hash,
    version_for_toml). `event` is the snake-case key label, e.g. session_start."""
    import hashlib

    normal = {"type": "command", "command": handler["command"], "timeout": handler.get("timeout", CODEX_DEFAULT_TIMEOUT_S), "async": bool(handler.get("async"))}
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event, "hooks": [normal]}
    if group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    raw = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()


class Codex(Client):
    agent, api, program = "codex", "openai", "codex"

    @property
    def codex_home(self) -> Path:
        return self.sandbox.home / ".codex"

    def setup(self) -> None:
        self.codex_home.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "fake"\n\n'
            '[model_providers.fake]\nname = "fake model server"\n'
            f'base_url = "{self.sandbox.server.url}/v1"\nwire_api = "responses"\nenv_key = "FAKE_OPENAI_API_KEY"\n\n'
            f'[projects.{json.dumps(str(self.sandbox.project))}]\ntrust_level = "trusted"\n',
            encoding="utf-8",
        )

    def env(self) -> dict[str, str]:
        return super().env() | {"CODEX_HOME": str(self.codex_home), "FAKE_OPENAI_API_KEY": "sk-fake-memtool-tests"}

    def argv(self, prompt: str) -> list[str]:
        return [str(self.binary), "exec", "--skip-git-repo-check", prompt]

    def install_hooks(self) -> subprocess.CompletedProcess[str]:
        done = super().install_hooks()
        self.trust_hooks()
        return done

    def hooks_list(self) -> list[dict[str, Any]]:
        """Codex's own view of the project's hooks: `codex app-server`, JSON-RPC `hooks/list`."""
        proc = subprocess.Popen(
            [str(self.binary), "app-server"],
            cwd=self.sandbox.project,
            env=self.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for message in (
                {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "memtool-tests", "version": "0"}}},
                {"method": "initialized"},
                {"id": 2, "method": "hooks/list", "params": {"cwds": [str(self.sandbox.project)]}},
            ):
                proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                assert line, "codex app-server closed its output before answering hooks/list"
                answer = json.loads(line)
                if answer.get("id") == 2:
                    assert "result" in answer, f"hooks/list failed: {answer}"
                    return [hook for entry in answer["result"]["data"] for hook in entry["hooks"]]
            raise AssertionError("codex app-server did not answer hooks/list within 60 s")
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def trust_hooks(self) -> None:
        """Trust every untrusted project hook, as a user does in /hooks: a trusted_hash per hook key."""
        lines = [
            f"\n[hooks.state.{json.dumps(h['key'])}]\ntrusted_hash = {json.dumps(h['currentHash'])}\n"
            for h in self.hooks_list()
            if h["trustStatus"] in ("untrusted", "modified")
        ]
        with open(self.codex_home / "config.toml", "a", encoding="utf-8") as out:
            out.write("".join(lines))

    def _around_prompt(self, request: Request, prompt: str) -> tuple[list[str], list[str]]:
        """The developer messages right before the prompt's user message, and those after it."""
        items = [i for i in request.body.get("input", []) if isinstance(i, dict) and i.get("type") == "message"]
        at = max((n for n, i in enumerate(items) if i.get("role") == "user" and prompt in "".join(_texts(i))), default=None)
        if at is None:
            return [], []
        before: list[str] = []
        for item in reversed(items[:at]):
            if item.get("role") != "developer":
                break
            before.insert(0, "\n".join(_texts(item.get("content"))))
        after = ["\n".join(_texts(i.get("content"))) for i in items[at + 1 :] if i.get("role") == "developer"]
        return before, after

    def start_context(self, request: Request, prompt: str) -> str:
        return "\n".join(self._around_prompt(request, prompt)[0])

    def prompt_context(self, request: Request, prompt: str) -> str:
        return "\n".join(self._around_prompt(request, prompt)[1])

    def capped(self, context: str) -> str:
        if "Warning: truncated output" in context or "Full hook output saved to" in context:
            return "Codex truncated it (over its hook context limit)"
        tokens = len(context.encode()) / 4  # Codex's estimate: 20,010 bytes counted as 5,004 tokens
        return f"{tokens:.0f} tokens (bytes / 4), over Codex's {CODEX_CONTEXT_CAP_TOKENS}" if tokens > CODEX_CONTEXT_CAP_TOKENS else ""

    def sessions(self) -> dict[str, Path]:
        found = {}
        for path in (self.codex_home / "sessions").glob("**/rollout-*.jsonl"):
            first = path.read_text(encoding="utf-8").split("\n", 1)[0]
            meta = json.loads(first) if first.strip() else {}
            found[str((meta.get("payload") or {}).get("id") or path.stem)] = path
        return found


# --- Gemini CLI -------------------------------------------------------------------------------

_HOOK_CONTEXT = re.compile(r"<hook_context>(.*?)</hook_context>", re.S)


class Gemini(Client):
    agent, api, program = "gemini", "gemini", "gemini"

    def setup(self) -> None:
        folder = self.sandbox.home / ".gemini"
        folder.mkdir(parents=True, exist_ok=True)
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": True}}}
        (folder / "settings.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        (folder / "trustedFolders.json").write_text(json.dumps({str(self.sandbox.project): "TRUST_FOLDER"}) + "\n", encoding="utf-8")

    def env(self) -> dict[str, str]:
        return super().env() | {"GOOGLE_GEMINI_BASE_URL": self.sandbox.server.url, "GEMINI_API_KEY": "AIzaFAKE-memtool-real-clients"}

    def argv(self, prompt: str) -> list[str]:
        return [str(self.binary), "-p", prompt]

    def _parts(self, request: Request, prompt: str) -> tuple[str, list[str]]:
        """(the part holding the prompt, the parts after it) of the last user turn that has the prompt."""
        for content in reversed(request.body.get("contents", [])):
            texts = [p.get("text", "") for p in content.get("parts", []) if isinstance(p, dict)]
            at = next((n for n, t in enumerate(texts) if prompt in t), None)
            if content.get("role") == "user" and at is not None:
                return texts[at], texts[at + 1 :]
        return "", []

    def start_context(self, request: Request, prompt: str) -> str:
        part, _ = self._parts(request, prompt)
        before = part[: part.find(prompt)]
        return "\n".join(_HOOK_CONTEXT.findall(before))

    def prompt_context(self, request: Request, prompt: str) -> str:
        _, after = self._parts(request, prompt)
        return "\n".join(m for text in after for m in _HOOK_CONTEXT.findall(text))

    def sessions(self) -> dict[str, Path]:
        found = {}
        for path in (self.sandbox.home / ".gemini" / "tmp").glob("*/chats/session-*.json*"):
            text = path.read_text(encoding="utf-8")
            first = json.loads(text if path.suffix == ".json" else text.split("\n", 1)[0] or "{}")
            found[str(first.get("sessionId") or path.stem)] = path
        return found


CLIENTS: dict[str, type[Client]] = {c.agent: c for c in (ClaudeCode, Codex, Gemini)}


def _texts(value: Any) -> Iterator[str]:
    """Every string in a JSON value, depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)


def missing_clients() -> str:
    """Why the real clients cannot run here ('' when they can)."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    absent = [c.program for c in CLIENTS.values() if not (BIN / c.program).exists()]
    if absent:
        return f"{', '.join(absent)} not in {BIN}: run `npm ci` in {HERE}"
    return ""
