"""memtool with the real Claude Code, Codex CLI and Gemini CLI (issue 35's "Must hold"), each run
as a new user would: a throwaway HOME and project, `memory init`, one earlier session compressed,
`memory hooks install --agent X`, one prompt, against the fake model server on 127.0.0.1; then
what reached the model (the server's log) and the entry the session end wrote (`memory export`).

Run: `cd tests/real_clients && npm ci`, then `python -m pytest tests/real_clients -m real_clients`
(docs/agents.md). A failing test's report carries every request the model got.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.real_clients.clients import CLAUDE_CONTEXT_CAP_CHARS, CLIENTS, ENTRY_WAIT_S, MEMORY, ClaudeCode, Client, Codex, Run, Sandbox, codex_hook_hash
from tests.real_clients.fake_model import REPLY, FakeModelServer

pytestmark = [pytest.mark.real_clients, pytest.mark.usefixtures("clients_available")]

AGENTS = list(CLIENTS)  # claude-code, codex, gemini

EARLIER = (
    "user: How do we move the orders table to the new Postgres cluster without downtime?\n\n"
    "assistant: We decided to migrate the orders table with dual writes behind a feature flag (orders_dual_write), "
    "so both clusters get every write until the cut-over. Priya Raman owns the cut-over runbook. "
    "TODO: Priya will write the rollback section of the runbook before the cut-over.\n"
)
EARLIER_DAYS_AGO = 8  # so that a session dated from the context it was given lands on the wrong day
# mentions a date of its own: the entry must be dated when the session ran, not on 3 March 2026
PROMPT = "On 3 March 2026 we first sketched the orders migration. Remind me what we settled for the dual writes, and who owns the runbook?"
INJECTED_MARKS = ("<hook_context>", "memtool-context", "Relevant past work")


@pytest.fixture(scope="session")
def earlier_project(tmp_path_factory) -> Path:
    """A project with `memory init` done and the earlier session compressed (EARLIER_DAYS_AGO days back),
    made once and copied into each test's sandbox (a memory root holds no absolute path)."""
    with FakeModelServer() as server:
        sandbox = Sandbox(tmp_path_factory.mktemp("earlier-project"), server)
    sandbox.memory("init")
    when = (datetime.now(timezone.utc) - timedelta(days=EARLIER_DAYS_AGO)).strftime("%Y-%m-%d")
    transcript = sandbox.project.parent / "earlier-session.md"
    transcript.write_text(EARLIER, encoding="utf-8")
    sandbox.memory("compress", str(transcript), "--session", "earlier-migration", "--date", when)
    return sandbox.project


def new_project(root: Path, server: FakeModelServer, agent: str, template: Path) -> tuple[Sandbox, Client]:
    """A sandbox holding a copy of `template` (a project with its memory), and the client set up in it."""
    sandbox = Sandbox(root, server)
    shutil.rmtree(sandbox.project)
    shutil.copytree(template, sandbox.project, symlinks=True)
    return sandbox, CLIENTS[agent](sandbox)


def entry_text(entry: dict[str, Any]) -> str:
    return json.dumps({k: entry.get(k) for k in ("summary", "keywords", "topics", "decisions", "action_items", "entities")}, ensure_ascii=False)


def shows(request: pytest.FixtureRequest, server: FakeModelServer) -> None:
    """Put this server's log into the failing test's report (conftest.pytest_runtest_makereport)."""
    request.node.fake_model_log = server.log


# --- one session per client, asserted on by several tests -------------------------------------


@dataclass
class Session:
    sandbox: Sandbox
    client: Client
    run: Run
    start_context: str
    entries: list[dict[str, Any]]  # written after the run (the session end's)
    server: FakeModelServer

    def context_note(self) -> str:
        return f"session-start context as the model got it ({len(self.start_context)} characters):\n{self.start_context}"


@pytest.fixture(scope="module")
def shared_model():
    with FakeModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def sessions(tmp_path_factory, shared_model, earlier_project) -> dict[str, Session]:
    """The main scenario, once per client (lazily): install the hooks, run PROMPT, wait for the entry."""
    done: dict[str, Session] = {}

    def get(agent: str) -> Session:
        if agent not in done:
            sandbox, client = new_project(tmp_path_factory.mktemp(agent), shared_model, agent, earlier_project)
            client.install_hooks()
            known = {e["id"] for e in sandbox.entries()}
            run = client.run(PROMPT)
            assert run.returncode == 0, f"{agent} failed\n{run.describe()}"
            main = run.main_request(PROMPT[:40])
            new = sandbox.wait_for_entries(known)
            done[agent] = Session(sandbox, client, run, client.start_context(main, PROMPT[:40]), new, shared_model)
        return done[agent]

    return get  # type: ignore[return-value]


@pytest.fixture
def session(request, sessions, shared_model):
    shows(request, shared_model)
    return sessions(request.param)


def the_entry(s: Session) -> dict[str, Any]:
    assert len(s.entries) == 1, f"expected one entry from the session end, got {len(s.entries)}\nhooks log:\n{s.sandbox.hooks_log()}\n{s.run.describe()}"
    return s.entries[0]


@pytest.mark.parametrize("session", AGENTS, indirect=True)
def test_session_start_context_reaches_the_model(session: Session):
    assert session.start_context.strip(), f"{session.client.agent}: no session-start context reached the model"
    assert "runbook" in session.start_context.lower(), session.context_note()


@pytest.mark.parametrize("session", AGENTS, indirect=True)
def test_the_earlier_decision_and_action_item_reach_the_model_at_session_start(session: Session):
    ctx = session.start_context
    assert "feature flag" in ctx or "orders_dual_write" in ctx, "the decision (dual writes behind a feature flag) is missing\n" + session.context_note()
    assert "rollback section" in ctx, "the open action item (Priya writes the rollback section) is missing\n" + session.context_note()


@pytest.mark.parametrize("session", AGENTS, indirect=True)
def test_the_session_entry_is_dated_when_the_session_ran(session: Session):
    entry = the_entry(session)
    stamp = datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00"))
    slack = timedelta(minutes=10)
    assert session.run.started - slack <= stamp <= session.run.ended + slack, (
        f"entry {entry['id']} is dated {entry['timestamp']}; the session ran {session.run.started:%Y-%m-%dT%H:%M:%S}Z-{session.run.ended:%H:%M:%S}Z "
        f"(its prompt mentions 3 March 2026; the context it was given dates the earlier session {EARLIER_DAYS_AGO} days back)"
    )


@pytest.mark.parametrize("session", AGENTS, indirect=True)
def test_the_session_entry_holds_none_of_the_injected_context(session: Session):
    entry = the_entry(session)
    stored = entry_text(entry)
    for mark in INJECTED_MARKS:
        assert mark not in stored, f"entry {entry['id']} stores memtool's own context ({mark!r}): {stored}"
    assert "rollback section" not in stored, f"entry {entry['id']} re-stores the earlier session it was given: {stored}"
    kept = session.sandbox.kept_transcript(entry["id"])
    for mark in INJECTED_MARKS:
        assert mark not in kept, f"the transcript kept for {entry['id']} holds memtool's own context ({mark!r}):\n{kept[:3000]}"


@pytest.mark.parametrize("session", AGENTS, indirect=True)
def test_the_session_entry_has_no_transcript_header(session: Session):
    """memtool's transcript header ("session: /abs/path, branch main") is not the session's words: it
    may not open the summary, nor give the entry words of its own (the path's parts, the branch)."""
    entry = the_entry(session)
    summary = entry["summary"]
    assert not summary.startswith("session:"), f"summary starts with the transcript header: {summary!r}"
    assert str(session.sandbox.project) not in entry_text(entry), f"entry {entry['id']} holds the project's path: {entry_text(entry)}"
    said = set(re.findall(r"[\w-]+", (PROMPT + " " + REPLY).lower()))
    header = {"session", "branch", "main", *(part.lower() for part in session.sandbox.project.parts if part != "/")} - said
    tagged = [w for w in (*entry["keywords"], *entry["topics"], *(x for xs in entry["entities"].values() for x in xs)) if w.lower() in header]
    assert not tagged, f"entry {entry['id']} takes words from the transcript header {sorted(header)}: {tagged}"


@pytest.mark.parametrize("session", AGENTS, indirect=True)
def test_the_client_shows_no_memtool_chatter(session: Session):
    """Gemini CLI turns a hook's stderr into a message when its stdout is empty (issue 35, item 7)."""
    shown = session.run.stdout + session.run.stderr
    assert "memtool: compressing" not in shown, f"{session.client.agent} shows memtool's session-end note to the user\n{session.run.describe()}"


# --- prompt recall --------------------------------------------------------------------------

FILLERS = 40  # recent sessions, newer than the one the prompt is about
RECALL_TARGET = (
    "user: The checkout smoke test keeps failing in CI with a GPU crash.\n\n"
    "assistant: We traced the flaky checkout smoke test to Chromium 131 crashing in headless mode and decided to pin "
    "Chromium 130 in the CI image until the upstream fix lands. Omar Haddad maintains the CI image.\n"
)
RECALL_MARKS = ("Chromium 130", "Omar Haddad")
RECALL_PROMPT = "The checkout smoke test is flaky in CI again. What did we do about it last time?"


@pytest.fixture(scope="session")
def recall_store(tmp_path_factory) -> Path:
    """A memory (the project folder) with the target session 60 days old and FILLERS sessions of the
    last weeks on other subjects, built once and copied for each client."""
    import os

    root = tmp_path_factory.mktemp("recall-store")
    with FakeModelServer() as server:
        sandbox = Sandbox(root, server)
    sandbox.memory("init")
    folder = root / "sessions"
    folder.mkdir()
    areas = ["billing", "search", "onboarding", "notifications", "exports", "auth", "reporting", "mobile", "payments", "inventory"]
    tools, people = ["Redis", "Kafka", "SQS", "Celery", "gRPC", "Terraform", "Sentry", "Vault"], ["Ana", "Ben", "Chloe", "Dev", "Eli", "Fay"]
    now = time.time()
    for i in range(FILLERS):
        area, tool, person = areas[i % len(areas)], tools[i % len(tools)], people[i % len(people)]
        text = (
            f"user: How should the {area} service handle stage {i}?\n\nassistant: We decided to move {area} stage {i} onto {tool}. "
            f"{person} owns the {area} rollout; TODO: {person} will update the {area} dashboard.\n"
        )
        path = folder / f"session-{i:02d}.md"
        path.write_text(text, encoding="utf-8")
        os.utime(path, (now - 3600 * (i + 1),) * 2)
    target = folder / "checkout-flake.md"
    target.write_text(RECALL_TARGET, encoding="utf-8")
    os.utime(target, (now - 86400 * 60,) * 2)
    sandbox.memory("compress", str(folder))
    return sandbox.project


@pytest.mark.parametrize("agent", AGENTS)
def test_prompt_recall_injects_the_relevant_entry_on_the_first_prompt(agent, tmp_path, fake_model, recall_store):
    sandbox, client = new_project(tmp_path / "sandbox", fake_model, agent, recall_store)
    client.install_hooks()
    run = client.run(RECALL_PROMPT)
    assert run.returncode == 0, run.describe()
    main = run.main_request(RECALL_PROMPT[:40])
    start = client.start_context(main, RECALL_PROMPT[:40])
    assert not any(m in start for m in RECALL_MARKS), (
        f"precondition: the session-start context already holds the checkout entry, so recall cannot be told apart:\n{start}"
    )
    recalled = client.prompt_context(main, RECALL_PROMPT[:40])
    event = "BeforeAgent" if agent == "gemini" else "UserPromptSubmit"
    assert any(m in recalled for m in RECALL_MARKS), (
        f"{agent}: the {event} context does not hold the checkout entry (Chromium 130, Omar Haddad):\n{recalled or '(no prompt context at all)'}"
    )


# --- the hosts' caps ------------------------------------------------------------------------

BIG_BUDGET = 12_000  # a user's own `budget` in memory/config.yaml
PATTERNS = 300  # lines of "Learned patterns" in MEMORY.md: ~27 KB


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_no_start_context_over_the_hosts_cap(agent, tmp_path, fake_model, earlier_project):
    shows_cap = {"claude-code": f"{CLAUDE_CONTEXT_CAP_CHARS} characters", "codex": "2,500 tokens"}[agent]
    sandbox, client = new_project(tmp_path / "sandbox", fake_model, agent, earlier_project)
    memory_md = sandbox.project / "MEMORY.md"
    lines = "".join(
        f"- Pattern {i}: the nightly job {i} retries {i % 5 + 2} times before paging the on-call; keep its logs {i % 30 + 7} days.\n" for i in range(PATTERNS)
    )
    memory_md.write_text(memory_md.read_text(encoding="utf-8").replace("## Learned patterns\n", "## Learned patterns\n\n" + lines), encoding="utf-8")
    with open(sandbox.project / "memory" / "config.yaml", "a", encoding="utf-8") as out:
        out.write(f"budget: {BIG_BUDGET}\n")
    client.install_hooks()
    run = client.run(PROMPT)
    assert run.returncode == 0, run.describe()
    start = client.start_context(run.main_request(PROMPT[:40]), PROMPT[:40])
    assert start.strip(), "no session-start context reached the model"
    why = client.capped(start)
    assert not why, f"{agent}: memtool's session-start context went over the host's cap ({shows_cap}): {why}; {len(start)} characters reached the model"
    if agent == "claude-code":
        assert len(start) <= CLAUDE_CONTEXT_CAP_CHARS, f"{len(start)} characters of session-start context"


# --- a session whose end hook never ran -----------------------------------------------------

HOLD = "HOLD-kestrel-7"
RECOVERY_GRACE_S = 30.0  # how much longer than the next session's own session end the recovery may take


@pytest.mark.parametrize("agent", AGENTS)
def test_a_killed_session_becomes_an_entry_after_the_next_session_starts(agent, tmp_path, fake_model, earlier_project):
    sandbox, client = new_project(tmp_path / "sandbox", fake_model, agent, earlier_project)
    client.install_hooks()
    fake_model.hold(HOLD)
    proc, started, seen = client.start(f"Plan the kestrel cache warm-up for the orders service ({HOLD}).")
    deadline = time.monotonic() + 120
    while not any(HOLD in r.text() for r in fake_model.log.generations()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
    killed = client.finish(proc, started, seen, killed=True)
    fake_model.release()
    assert any(HOLD in r.text() for r in killed.requests), f"the prompt never reached the model before the kill\n{killed.describe()}"
    left = client.sessions()
    assert len(left) == 1, f"precondition: expected the killed session's transcript on disk, found {sorted(left)}"
    (killed_id,) = left
    time.sleep(3)  # nothing may be waiting on the killed session's end any more
    assert not any(killed_id in str(e.get("source_session")) for e in sandbox.entries()), (
        "precondition: an entry for the killed session exists before the next session"
    )

    known = {e["id"] for e in sandbox.entries()}
    run = client.run("What is left to do on the orders migration?")
    assert run.returncode == 0, run.describe()
    (next_id,) = set(client.sessions()) - {killed_id}
    recovered: list[dict] = []
    deadline, after_next = time.monotonic() + ENTRY_WAIT_S, None
    while time.monotonic() < (deadline if after_next is None else min(deadline, after_next)):
        new = [e for e in sandbox.entries() if e["id"] not in known]
        recovered = [e for e in new if killed_id in str(e.get("source_session"))]
        if recovered:
            break
        if after_next is None and any(next_id in str(e.get("source_session")) for e in new):
            after_next = time.monotonic() + RECOVERY_GRACE_S  # the next session's own entry is in: the recovery had as long
        time.sleep(1.0)
    entries = [(e["id"], e.get("source_session")) for e in sandbox.entries()]
    if not recovered and not left[killed_id].exists():
        # Gemini CLI's own session cleanup (general.sessionRetention, on by default) deletes at start-up a
        # session file with no answer in it, which a client killed while the model held its first
        # request leaves: there is nothing on disk for memtool to recover
        pytest.skip(f"{agent} deleted the killed session's transcript itself ({left[killed_id]}) before anything could read it")
    assert recovered, (
        f"{agent}: no entry for the killed session {killed_id} ({left[killed_id]}) after the next session; entries: {entries}\n"
        f"hooks log:\n{sandbox.hooks_log()}"
    )


# --- doctor and Codex's hook trust ----------------------------------------------------------


def test_hooks_doctor_tells_when_codex_has_not_trusted_the_hooks(tmp_path, fake_model, earlier_project):
    sandbox, client = new_project(tmp_path / "sandbox", fake_model, "codex", earlier_project)
    assert isinstance(client, Codex)
    sandbox.memory("hooks", "install", "--agent", "codex", "--memory", str(MEMORY))  # not client.install_hooks(): nobody trusts them
    ours = [h for h in client.hooks_list() if "hooks run session-" in (h.get("command") or "")]
    assert ours and all(h["trustStatus"] == "untrusted" for h in ours), f"precondition: Codex lists memtool's hooks as untrusted: {ours}"
    run = client.run(PROMPT)
    untrusted_start = client.start_context(run.main_request(PROMPT[:40]), PROMPT[:40])
    assert "runbook" not in untrusted_start.lower(), f"precondition: Codex ran the untrusted hook:\n{untrusted_start}"

    doctor = sandbox.memory("hooks", "doctor", "--agent", "codex", "--json", check=False)
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 1 and not report["ok"], f"doctor says the hooks are fine while Codex skips them (exit {doctor.returncode}):\n{doctor.stdout}"
    failing = [c for c in report["checks"] if not c["ok"]]
    assert failing and all("trust" in (c["detail"] + c["fix"]).lower() for c in failing), f"doctor does not say the hooks need trusting:\n{doctor.stdout}"

    client.trust_hooks()
    assert all(h["trustStatus"] == "trusted" for h in client.hooks_list() if "hooks run session-" in (h.get("command") or ""))
    doctor = sandbox.memory("hooks", "doctor", "--agent", "codex", "--json", check=False)
    assert doctor.returncode == 0 and json.loads(doctor.stdout)["ok"], f"doctor fails the trusted hooks:\n{doctor.stdout}"


def test_the_codex_trust_hash_is_the_one_codex_computes(tmp_path, fake_model, earlier_project):
    """How trust is recorded, checked against Codex itself, for `memory hooks doctor` to compare with:
    [hooks.state."<hooks.json>:<event>:<group>:<handler>"] trusted_hash in $CODEX_HOME/config.toml."""
    sandbox, client = new_project(tmp_path / "sandbox", fake_model, "codex", earlier_project)
    assert isinstance(client, Codex)
    sandbox.memory("hooks", "install", "--agent", "codex", "--memory", str(MEMORY))
    groups = json.loads((sandbox.project / ".codex" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    listed = {h["key"]: h for h in client.hooks_list()}
    snake = {"SessionStart": "session_start", "SessionEnd": "session_end", "UserPromptSubmit": "user_prompt_submit", "PreCompact": "pre_compact"}
    ours = {
        f"{sandbox.project / '.codex' / 'hooks.json'}:{snake[event]}:{gi}:{hi}": codex_hook_hash(snake[event], group, handler)
        for event, event_groups in groups.items()
        for gi, group in enumerate(event_groups)
        for hi, handler in enumerate(group["hooks"])
    }
    assert ours and {key: listed.get(key, {}).get("currentHash") for key in ours} == ours, f"Codex's hooks/list: {listed}"


# --- uninstall ------------------------------------------------------------------------------

EXISTING = {  # a settings file of the user's own, laid out as no JSON writer would
    "claude-code": '{\n    "permissions": {"allow": ["Bash(npm test)"]},\n    "hooks": {\n'
    '        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]\n    }\n}',
    "codex": '{"hooks": {\n  "Stop": [ { "hooks": [ { "type": "command", "command": "true" } ] } ]\n}}\n',
    "gemini": '{\n  // the user\'s own settings\n  "ui": { "hideBanner": true },\n  "hooks": {}\n}\n',
}
SETTINGS = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json"}


@pytest.mark.parametrize("existed", [True, False], ids=["file-existed", "install-created-it"])
@pytest.mark.parametrize("agent", AGENTS)
def test_uninstall_after_a_session_gives_back_the_settings_byte_for_byte(agent, existed, tmp_path, fake_model, earlier_project):
    sandbox, client = new_project(tmp_path / "sandbox", fake_model, agent, earlier_project)
    path = sandbox.project / SETTINGS[agent]
    if existed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(EXISTING[agent].encode())
    client.install_hooks()
    run = client.run("Say hello.")
    assert run.returncode == 0, run.describe()
    sandbox.memory("hooks", "uninstall", "--agent", agent)
    if existed:
        assert path.read_bytes() == EXISTING[agent].encode(), f"uninstall changed {SETTINGS[agent]}:\n{path.read_text()!r}\nwas:\n{EXISTING[agent]!r}"
    else:
        assert not path.exists(), f"install created {SETTINGS[agent]}; uninstall left {path.read_text()!r}"


# --- memory serve in claude -p --------------------------------------------------------------


@pytest.mark.parametrize("waits", [True, False], ids=["MCP_CONNECTION_NONBLOCKING=false", "default"])
def test_memory_serve_tools_reach_claude_p(waits, tmp_path, fake_model, earlier_project):
    sandbox, client = new_project(tmp_path / "sandbox", fake_model, "claude-code", earlier_project)
    assert isinstance(client, ClaudeCode)
    added = client.add_mcp_server()
    assert added.returncode == 0, added.stdout + added.stderr
    # waiting, with a start-up timeout for a loaded machine (MCP_TIMEOUT, ms): `memory serve` took 2.6-4.7 s on a quiet one
    wait = {"MCP_CONNECTION_NONBLOCKING": "false", "MCP_TIMEOUT": "60000"}
    run = client.run("Search the memory for the orders migration.", wait if waits else None)
    assert run.returncode == 0, run.describe()
    main = run.main_request("Search the memory")
    offered = main.tool_names()
    named = [t for t in offered if "memtool" in t] or (["(listed as deferred)"] if "mcp__memtool__memory_search" in main.text() else [])
    assert named, f"claude -p offered the model no memtool tool; tools: {offered}"
