"""The byte-preserving merge: install then uninstall restores any document, in any layout."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memtool import hooks as core
from memtool.hooks.common import installed_semantics, uninstalled_semantics
from tests.hooks.conftest import CASES, RUNNER

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
    installed = core.install_text(agent, path, text, RUNNER)
    assert json.loads(installed) == installed_semantics(doc, core.desired_groups(agent, RUNNER))
    assert core.install_text(agent, path, installed, RUNNER) == installed
    restored = core.uninstall_text(agent, path, installed)
    assert json.loads(restored) == uninstalled_semantics(json.loads(installed))
    if uninstalled_semantics(json.loads(installed)) == doc:
        assert restored == text  # byte for byte
    else:  # only case: an empty "hooks" / event list that we filled goes away with our entries
        assert doc["hooks"] == {} or [] in doc["hooks"].values()
