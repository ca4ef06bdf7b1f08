"""The child lifecycle transition table."""

from __future__ import annotations

import pytest

from supervisors import ChildState, IllegalTransitionError
from supervisors import lifecycle
from supervisors.lifecycle import TRANSITIONS, advance


def test_chart_names() -> None:
    assert lifecycle.CHART_NAME == "child_lifecycle"
    assert lifecycle.INITIAL is ChildState.DEFINED
    assert all(isinstance(event, str) for _, event in TRANSITIONS)


def test_a_normal_life() -> None:
    state = lifecycle.INITIAL
    for event in ["start", "started", "exited", "restart", "started", "terminate", "stopped"]:
        state = advance(state, event)
    assert state is ChildState.DEFINED
    assert advance(advance(state, "start"), "start_failed") is ChildState.EXITED


@pytest.mark.parametrize("state", list(ChildState))
def test_every_unlisted_event_is_illegal(state: ChildState) -> None:
    events = {event for _, event in TRANSITIONS}
    for event in events:
        if (state, event) in TRANSITIONS:
            assert advance(state, event) is TRANSITIONS[(state, event)]
        else:
            with pytest.raises(IllegalTransitionError, match=state.name):
                advance(state, event)


def test_removed_is_final() -> None:
    assert not [key for key in TRANSITIONS if key[0] is ChildState.REMOVED]
