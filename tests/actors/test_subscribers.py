"""A cold topic's one-off delivery (``deliver_once``) follows the topic actor's rules."""

from __future__ import annotations

from typing import Any

import pytest
from pykka import ActorDeadError

from actorbroker.actors.messages import Deliver, DeliverMatched
from actorbroker.actors.topics.grants import Grant
from actorbroker.actors.topics.subscribers import TopicSubscribers, _copy, deliver_once
from actorbroker.ports import ReadCredit
from actorbroker.metrics import BrokerMetrics
from actorbroker.session import AppMessage
from actorbroker.session.suboptions import SubOptions


class Session:
    """A session's ref as the registry sees it: records what it is told."""

    def __init__(self, dead: bool = False) -> None:
        self.told: list[Any] = []
        self.dead = dead

    def tell(self, message: Any) -> None:
        if self.dead:  # an actor that stopped after its name was looked up
            raise ActorDeadError("session stopped")
        self.told.append(message)


OPTS = SubOptions(no_local=True)
TABLES: list[dict[str, dict[str, Grant]]] = [
    {"a": {"t/x": Grant(1, 3)}},
    {"a": {"t/x": Grant(0, 3), "t/+": Grant(2, 3), "#": Grant(1, 2)}},  # newest epoch, top QoS
    {"a": {"t/x": Grant(1, 1)}, "b": {"t/#": Grant(0, 4, OPTS)}},  # MQTT 5 options
    {"b": {"t/x": Grant(2, 4), "t/+": Grant(1, 4, OPTS)}},  # options on one of two
    {"b": {"t/x": Grant(2, 5), "t/+": Grant(1, 4, OPTS)}},  # options only in an older epoch
    {"gone": {"t/x": Grant(1, 1)}, "dead": {"t/+": Grant(0, 1)}, "a": {"#": Grant(0, 1)}},
]


def _run(deliver: Any, table: dict[str, dict[str, Grant]]
         ) -> tuple[dict[str, list[Any]], dict[str, int], int]:
    """What each session was told, the drops, and the holds on the read credit (the
    caller's own included)."""
    sessions = {"a": Session(), "b": Session(), "dead": Session(dead=True)}
    metrics = BrokerMetrics()
    messages = (AppMessage("t/x", b"p", qos=1),)
    credit = ReadCredit(lambda _credit: None, 1, 0.0)
    deliver(table, messages, sessions, metrics, "t/x", credit)
    told = {cid: s.told for cid, s in sessions.items()}
    assert all(m.credit is credit for messages in told.values() for m in messages)
    return told, dict(metrics.dropped), credit.left


@pytest.mark.parametrize("table", TABLES)
def test_deliver_once_tells_what_a_topic_actor_would(table: dict[str, dict[str, Grant]]) -> None:
    def kept(table: Any, *args: Any) -> None:
        TopicSubscribers(table).deliver(*args)

    assert _run(deliver_once, table) == _run(kept, table)


def test_deliver_once_rules() -> None:
    told, dropped, _ = _run(deliver_once, TABLES[1])
    assert [(type(m), m.qos, m.epoch) for m in told["a"]] == [(Deliver, 2, 3)]
    told, _, _ = _run(deliver_once, TABLES[3])
    assert told["b"] == [DeliverMatched(told["b"][0].messages, 4, ((2, None), (1, OPTS)))]
    told, _, _ = _run(deliver_once, TABLES[4])
    assert [type(m) for m in told["b"]] == [Deliver] and told["b"][0].qos == 2
    told, dropped, holds = _run(deliver_once, TABLES[5])
    assert dropped == {"session_unavailable": 2}  # no session "gone"; "dead" stopped
    assert len(told["a"]) == 1
    assert holds == 2  # the caller's own and the one Deliver told


OLD = SubOptions(retain_as_published=True)
COPIES: list[tuple[dict[str, Grant], tuple[int, int, Any]]] = [
    ({"t/x": Grant(1, 3)}, (1, 3, None)),  # one plain subscription
    ({"t/x": Grant(2, 3, OPTS)}, (2, 3, ((2, OPTS),))),  # one with options
    ({"t/x": Grant(0, 3), "t/+": Grant(2, 3)}, (2, 3, None)),  # one epoch: highest QoS
    ({"t/x": Grant(0, 4), "t/+": Grant(2, 3)}, (0, 4, None)),  # newest epoch beats higher QoS
    ({"t/x": Grant(2, 2), "t/+": Grant(1, 5), "#": Grant(0, 5)}, (1, 5, None)),
    ({"t/x": Grant(1, 4), "t/+": Grant(2, 4, OPTS)}, (2, 4, ((1, None), (2, OPTS)))),
    ({"t/x": Grant(1, 5), "t/+": Grant(2, 4, OLD)}, (1, 5, None)),  # options of an old epoch
    ({"t/x": Grant(0, 4, OLD), "t/+": Grant(1, 4, OPTS)}, (1, 4, ((0, OLD), (1, OPTS)))),
]


@pytest.mark.parametrize(("filters", "expected"), COPIES)
def test_grant_copy_prefers_newest_epoch_then_highest_qos(
        filters: dict[str, Grant], expected: tuple[int, int, Any]) -> None:
    assert _copy(filters) == expected
