"""sessions/journal/records.derive with [storage] log_qos0: a QoS 0 message gets a PublishAccepted record that
nothing waits for (no route entry: not held, no offset, no PUBACK), QoS 1/2 as before."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from actorbroker.actors.sessions.journal.records import derive
from actorbroker.codec import PubAck
from actorbroker.persistence.records import PublishAccepted, WillSent
from actorbroker.session import AppMessage, PublishWill, Route

TS = 1_700_000_000_000_000


def _derive(effects: list[Any], log_qos0: bool) -> Any:
    asked: dict[int, deque[Any]] = {}
    return derive(effects, "pub", False, dict, asked, TS, log_qos0)


@pytest.mark.parametrize("log_qos0", [False, True])
def test_qos0_is_logged_only_with_log_qos0_and_never_held(log_qos0: bool) -> None:
    found = _derive([Route(AppMessage("t/0", b"zero", 0, True, publisher="pub"), None)],
                    log_qos0)
    assert found.routes == [] and found.early  # nothing to hold, nothing to wait for
    if log_qos0:
        [record] = found.records
        assert isinstance(record, PublishAccepted)
        assert (record.topic, record.payload, record.qos, record.retain, record.client_id,
                record.packet_id, record.timestamp_us) == ("t/0", b"zero", 0, True, "pub", 0, TS)
    else:
        assert found.records == []


def test_a_qos0_record_among_qos1_keeps_the_qos1_routes_and_their_order() -> None:
    effects = [Route(AppMessage("t/1", b"one", 1, publisher="pub"), PubAck(7)),
               Route(AppMessage("t/0", b"zero", 0, publisher="pub"), None),
               Route(AppMessage("t/1", b"two", 1, publisher="pub"), PubAck(8))]
    found = _derive(effects, True)
    assert [r.payload for r in found.records] == [b"one", b"zero", b"two"]  # log order
    assert found.routes == [(0, 0), (2, 2)]  # only the QoS 1 routes take their offsets
    assert found.early  # QoS 0 does not stop QoS 1 from being routed before the fsync


def test_a_qos0_will_is_logged_with_log_qos0() -> None:
    found = _derive([PublishWill(AppMessage("will/pub", b"gone", 0, publisher="pub"))], True)
    assert [type(r) for r in found.records] == [PublishAccepted] and found.routes == []
    assert [type(r) for r in found.before] == [WillSent]
