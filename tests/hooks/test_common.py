"""The byte-preserving merge: install then uninstall restores any document, in any layout."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memtool import hooks as core
from memtool.hooks.common import merge_in, ours_in, take_out
from tests.hooks.conftest import CASES, RUNNER, cli

# --- the intended changes on the parsed document: the reference the text edits are checked against


def _strip_ours_from_groups(groups) -> bool:
    """Remove our handlers from a list of matcher groups (and groups left empty by that)."""
    found = ours_in(groups)
    for gi, ours in reversed(found.items()):
        groups[gi]["hooks"] = [handler for hi, handler in enumerate(groups[gi]["hooks"]) if hi not in ours]
        if not groups[gi]["hooks"]:
            del groups[gi]
    return bool(found)


def installed_semantics(doc, groups):
    out = copy.deepcopy(doc)
    hooks = out.setdefault("hooks", {})
    for event, group in groups.items():
        arr = hooks.setdefault(event, [])
        holding = [arr[gi] for gi, ours in ours_in(arr).items() for _ in ours]
        if len(holding) == 1 and holding[0] == group:  # already installed
            continue
        _strip_ours_from_groups(arr)
        arr.append(copy.deepcopy(group))
    return out


def uninstalled_semantics(doc):
    """`doc` without our handlers; lists and the hooks object we empty go too."""
    out = copy.deepcopy(doc)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    touched = False
    for event in list(hooks):
        arr = hooks[event]
        if _strip_ours_from_groups(arr):
            touched = True
            if not arr:
                del hooks[event]
    if touched and not hooks:
        del out["hooks"]
    return out


def install_text(agent: str, path: Path, text: str, runner: str) -> str:
    """What plan_install writes for `text` (the merge alone, pure)."""
    return merge_in(path, text, core.desired_groups(agent, runner), core.spec(agent).comments, {})[0]


def uninstall_text(agent: str, path: Path, text: str, kept=None) -> str:
    """What plan_uninstall writes for `text`, given the record `kept` (pure)."""
    return take_out(path, text, core.spec(agent).comments, kept)


def empty_containers(agent: str, path: Path, text: str):
    """The record plan_install makes for `text` with no record before it: the empty containers it fills."""
    return merge_in(path, text, core.desired_groups(agent, RUNNER), core.spec(agent).comments, {})[1]


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=8))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)
_handler = st.fixed_dictionaries({"type": st.just("command"), "command": st.sampled_from(["./a.sh", "say hi", "echo memory"])})
_group = st.fixed_dictionaries({"hooks": st.lists(_handler, min_size=1, max_size=2)}, optional={"matcher": st.text(max_size=5)})
_hooks = st.dictionaries(st.sampled_from(["PreToolUse", "SessionStart", "SessionEnd", "Stop"]), st.lists(_group, max_size=2), max_size=4)
_docs = st.builds(
    lambda other, hooks, with_hooks: {**other, **({"hooks": hooks} if with_hooks else {})},
    st.dictionaries(st.text(max_size=6).filter(lambda k: k != "hooks"), _values, max_size=4),
    _hooks,
    st.booleans(),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_docs, indent=st.sampled_from([None, 2, 4, "\t"]), agent=st.sampled_from(sorted(CASES)))
def test_install_then_uninstall_round_trips_any_document(doc, indent, agent):
    path = Path("settings.json")
    text = json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"
    installed = install_text(agent, path, text, RUNNER)
    assert json.loads(installed) == installed_semantics(doc, core.desired_groups(agent, RUNNER))
    assert install_text(agent, path, installed, RUNNER) == installed
    # with what install records (the empty containers it filled), byte for byte
    assert uninstall_text(agent, path, installed, empty_containers(agent, path, text)) == text
    # without the record: as before, emptied containers go (it cannot tell them from ones it created)
    restored = uninstall_text(agent, path, installed)
    assert json.loads(restored) == uninstalled_semantics(json.loads(installed))


# --- install then uninstall gives back the original bytes -------------------------------------

ORIGINALS = [
    "{}",
    "{}\n",
    "{\n}\n",
    "{ }",
    '{\n  "model": "x",\n  "hooks": {}\n}\n',  # Claude Code leaves "hooks": {} when its last hook is deleted
    '{\n  "model": "x",\n  "hooks": {\n  }\n}\n',
    '{"model": "x", "hooks": {"SessionStart": []}}',
    '{\n  "hooks": {\n    "SessionEnd": [ ],\n    "SessionStart": [\n    ]\n  }\n}\n',
    '{\n  "hooks": {\n    "SessionStart": [],\n    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]\n  }\n}\n',
    '{"hooks":{"SessionEnd":[{"hooks":[{"type":"command","command":"./save.sh"}]}]},"model":"opus"}',
    '{\r\n\t"model": "opus",\r\n\t"hooks": {}\r\n}\r\n',
    '{\n  "env": {"A": "1"},\r\n  "model": "x"\n}',  # mixed line endings
    '\ufeff{\n  "model": "x"\n}\n',
]
COMMENTED = [  # Gemini CLI only
    '{"hooks" /* mine */ : {"SessionStart": [ /* add later */ ]}}',
    '{"hooks" /*c*/ : /*d*/ {"SessionStart" /*e*/: /*f*/ []}}',
    '// settings\n{\n  "theme": "GitHub" // keep me\n}\n',
    '{\n  "hooks": {\n    // mine go here\n  },\n  "ui": {"theme": "x"} /* last */\n}\n',
    '{\n  "hooks": {\n    "SessionStart": [\n      // none yet\n    ]\n  }\n}\n',
    "{ /* only a comment */ }",
    '{\n  "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "./a.sh"}]} /* a */]} // b   \n}',
]


@pytest.mark.parametrize(
    ("agent", "text"),
    [(agent, text) for agent in sorted(CASES) for text in ORIGINALS] + [("gemini", text) for text in COMMENTED],
)
def test_install_then_uninstall_gives_back_the_original_bytes(project, agent, text):
    path = project / CASES[agent][1]
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode())
    assert cli("install", "--agent", agent, "--project-dir", str(project)).exit_code == 0
    installed = path.read_bytes()
    assert installed != text.encode()
    assert cli("install", "--agent", agent, "--project-dir", str(project)).exit_code == 0
    assert path.read_bytes() == installed
    result = cli("uninstall", "--agent", agent, "--project-dir", str(project))
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == text.encode()


def test_the_record_follows_the_file(project):
    """Uninstall forgets what install recorded: a later install into a file without "hooks"
    creates it, and the uninstall after that takes it away again."""
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    with_empty = '{\n  "model": "x",\n  "hooks": {}\n}\n'
    without = '{\n  "model": "x"\n}\n'
    path.write_text(with_empty)
    for command in ("install", "uninstall"):
        assert cli(command, "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    assert path.read_text() == with_empty
    path.write_text(without)
    for command in ("install", "uninstall"):
        assert cli(command, "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    assert path.read_text() == without


def test_without_the_record_emptied_containers_go_unless_they_hold_a_comment(project):
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": {"SessionStart": [ /* later */ ], "SessionEnd": []}}')
    assert cli("install", "--agent", "gemini", "--project-dir", str(project)).exit_code == 0
    shutil.rmtree(Path.home() / ".cache")  # the record is a cache
    assert cli("uninstall", "--agent", "gemini", "--project-dir", str(project)).exit_code == 0
    assert path.read_text() == '{"hooks": {"SessionStart": [ /* later */ ]}}'


def _gap(rnd, comments: bool) -> str:
    gaps = ["", "", " ", "\n", "\n  ", "\n    ", "\t", "\r\n  "]
    if comments:
        gaps += [" /* c */ ", "/*x*/", " // note  \n", "// t\r\n", "\n  // line\n  ", "/* a\n b */"]
    return rnd.choice(gaps)


def _render(value, rnd, comments: bool) -> str:
    """`value` as JSON with a random gap (blank, or comments) wherever JSON allows one."""
    gap = lambda: _gap(rnd, comments)  # noqa: E731
    if isinstance(value, dict):
        inner = ",".join(f"{gap()}{json.dumps(k)}{gap()}:{gap()}{_render(v, rnd, comments)}{gap()}" for k, v in value.items())
        return "{" + (inner or gap()) + "}"
    if isinstance(value, list):
        return "[" + (",".join(gap() + _render(v, rnd, comments) + gap() for v in value) or gap()) + "]"
    return json.dumps(value)


@settings(max_examples=300, deadline=None)
@given(doc=_docs, agent=st.sampled_from(sorted(CASES)), rnd=st.randoms(use_true_random=False))
def test_install_then_uninstall_round_trips_any_layout(doc, agent, rnd):
    """Any spacing, line endings (mixed too) and, for Gemini, comments between any two tokens."""
    comments = CASES[agent][2]
    path = Path("settings.json")
    text = _gap(rnd, comments).lstrip(" \t") + _render(doc, rnd, comments) + rnd.choice(["", "\n", "\r\n"])
    record = empty_containers(agent, path, text)
    installed = install_text(agent, path, text, RUNNER)
    assert install_text(agent, path, installed, RUNNER) == installed
    assert uninstall_text(agent, path, installed, record) == text
    # an outdated memtool hook (another runner) replaced, then uninstalled: the same bytes
    older = install_text(agent, path, text, "/old/python -m memtool")
    record = merge_in(path, older, core.desired_groups(agent, RUNNER), comments, record)[1]
    assert uninstall_text(agent, path, install_text(agent, path, older, RUNNER), record) == text


def test_an_unwritable_or_damaged_record_only_costs_the_empty_containers(project):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": {}}')
    (Path.home() / ".cache").write_text("a file where the cache folder goes")
    result = cli("install", "--agent", "claude-code", "--project-dir", str(project))
    assert result.exit_code == 0 and "uninstall may then remove empty containers" in result.stderr
    assert len(json.loads(path.read_text())["hooks"]["SessionStart"]) == 1
    (Path.home() / ".cache").unlink()
    (Path.home() / ".cache/memtool/hooks").mkdir(parents=True)
    (Path.home() / ".cache/memtool/hooks/filled-containers.json").write_text('{"version": 1, "files": [')
    assert cli("uninstall", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    assert path.read_text() == "{}"
