from importlib.metadata import entry_points

import pytest

from memtool.config import Settings
from memtool.errors import ConfigError
from memtool.providers import BUILTINS, COMPRESSOR_GROUP, EMBEDDER_GROUP, available, build_compressor


@pytest.mark.parametrize("group", [COMPRESSOR_GROUP, EMBEDDER_GROUP])
def test_builtins_are_exactly_the_registered_entry_points(group):
    registered = {ep.name: ep.value for ep in entry_points(group=group) if ep.value.startswith("memtool.")}
    assert registered == BUILTINS[group]
    assert set(BUILTINS[group]) <= set(available(group))


def test_unknown_provider_names_the_available_ones(root):
    with pytest.raises(ConfigError, match="unknown compressor 'nope'.*local"):
        build_compressor("nope", Settings(), root)
