"""The local compressor's steps that look at every choice or number of a session in one pass: the
same answers as comparing each one with every other (`_superseded`) or searching the text per number (`_measured`)."""

import pytest

from memtool.providers.local_parts import Part
from memtool.providers.local_session import _measured, _superseded

CASES = [
    # (candidates as (user-said, turn, text), the texts kept)
    ([(1, 2, "keep the limit at 512Mi"), (1, 5, "raise the limit to 768Mi")], ["raise the limit to 768Mi"]),
    ([(1, 2, "keep the limit at 512Mi"), (1, 5, "keep the limit at 512Mi for now")], ["keep the limit at 512Mi", "keep the limit at 512Mi for now"]),
    # the same turn does not change it (an assent and the plan it approved come in one turn)
    ([(1, 4, "set the timeout to 30s"), (1, 4, "set the timeout to 45s")], ["set the timeout to 30s", "set the timeout to 45s"]),
    # a choice listed later but said in an earlier turn does not change it
    ([(1, 6, "set the timeout to 30s"), (1, 5, "set the timeout to 45s")], ["set the timeout to 30s", "set the timeout to 45s"]),
    # names are compared without case; other settings are untouched
    ([(0, 1, "keep the Retries at 3"), (1, 2, "set the pool to 8"), (0, 3, "raise the retries to 5")], ["set the pool to 8", "raise the retries to 5"]),
    # one choice with two settings goes when a later turn changes either
    ([(1, 1, "set the pool to 8 and keep the ttl at 60"), (1, 2, "keep the ttl at 90")], ["keep the ttl at 90"]),
    # a value given again after a change stands; the change between is dropped
    (
        [(1, 1, "keep the limit at 1"), (1, 2, "raise the limit to 2"), (1, 3, "lower the limit to 1")],
        ["lower the limit to 1"],
    ),
    ([(1, 1, "no setting here"), (0, 2, "we decided to go with postgres")], ["no setting here", "we decided to go with postgres"]),
    ([], []),
]


@pytest.mark.parametrize("cands, kept", CASES)
def test_a_choice_goes_when_a_later_turn_gives_its_setting_another_value(cands, kept):
    assert [c for _, _, c in _superseded(cands)] == kept


def test_many_choices_of_one_setting_keep_only_the_last_turns():
    cands = [(1, t, f"keep the limit at {t % 7}") for t in range(3000)] + [(1, 2999, "keep the limit at 5")]
    assert [c for _, _, c in _superseded(cands)] == ["keep the limit at 3", "keep the limit at 5"]  # 2999 % 7 == 3: both said in the last turn


@pytest.mark.parametrize(
    "text, measured",
    [
        ("it took 38 ms, then 4,210 ms; 64% of 12 rows", {"38", "210", "64", "12"}),
        ("limit 500 -> 100 and from 71% to 64 now", {"500", "100", "71", "64"}),
        ("version 1.5.2 ms and 3.5x", {"1.5", "1.5.2", "3", "3.5"}),  # "1" is not: ".5" then ".2 ms"
        ("12,5 items, ticket 1234, 7 apples, to7 and into 9", set()),
    ],
)
def test_the_numbers_said_with_a_unit_or_as_one_side_of_a_change(text, measured):
    assert _measured([Part("user", "said", text)]) == measured
