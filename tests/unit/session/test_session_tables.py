"""The session's transition tables: every legal edge, and illegal events raise."""

from __future__ import annotations

from enum import Enum
from types import ModuleType

import pytest

from actorbroker import statecharts
from actorbroker.codec import ProtocolError
from actorbroker.session import lifecycle, qos_inbound, qos_outbound
from actorbroker.session.lifecycle import LifecycleError, SessionState
from actorbroker.session.qos_inbound import InboundState
from actorbroker.session.qos_outbound import OutboundState

L, O, I = SessionState, OutboundState, InboundState  # noqa: E741 (the tables' columns)

LIFECYCLE_EDGES = [
    (L.NEW, "attach", L.CONNECTED),
    (L.NEW, "restore", L.DISCONNECTED),
    (L.CONNECTED, "detach", L.DISCONNECTED),
    (L.CONNECTED, "end", L.ENDED),
    (L.CONNECTED, "take_over", L.TAKEN_OVER),
    (L.TAKEN_OVER, "attach", L.CONNECTED),
    (L.DISCONNECTED, "attach", L.CONNECTED),
    (L.DISCONNECTED, "expire", L.ENDED),
]
OUTBOUND_EDGES = [
    (O.PENDING, "SEND_QOS1", O.AWAIT_PUBACK),
    (O.PENDING, "SEND_QOS2", O.AWAIT_PUBREC),
    (O.AWAIT_PUBACK, "PUBACK", O.DONE),
    (O.AWAIT_PUBACK, "RESEND", O.AWAIT_PUBACK),
    (O.AWAIT_PUBREC, "PUBREC", O.AWAIT_PUBCOMP),
    (O.AWAIT_PUBREC, "PUBREC_ERROR", O.DONE),
    (O.AWAIT_PUBREC, "RESEND", O.AWAIT_PUBREC),
    (O.AWAIT_PUBCOMP, "PUBREC", O.AWAIT_PUBCOMP),
    (O.AWAIT_PUBCOMP, "PUBCOMP", O.DONE),
    (O.AWAIT_PUBCOMP, "RESEND", O.AWAIT_PUBCOMP),
]
INBOUND_EDGES = [
    (I.UNKNOWN, "PUBLISH", I.AWAIT_PUBREL),
    (I.AWAIT_PUBREL, "PUBLISH", I.AWAIT_PUBREL),
    (I.AWAIT_PUBREL, "PUBREL", I.COMPLETE),
    (I.UNKNOWN, "PUBREL", I.COMPLETE),
]
TABLES: list[tuple[ModuleType, list[tuple[Enum, str, Enum]], type[Exception]]] = [
    (lifecycle, LIFECYCLE_EDGES, LifecycleError),
    (qos_outbound, OUTBOUND_EDGES, ProtocolError),
    (qos_inbound, INBOUND_EDGES, ProtocolError),
]


@pytest.mark.parametrize(("module", "edges", "error"), TABLES, ids=lambda v: getattr(v, "__name__", ""))
def test_table_is_exactly_the_documented_edges(
    module: ModuleType, edges: list[tuple[Enum, str, Enum]], error: type[Exception]
) -> None:
    assert dict(module.TRANSITIONS) == {(s, e): t for s, e, t in edges}
    for source, event, target in edges:
        assert module.advance(source, event) is target


@pytest.mark.parametrize(("module", "edges", "error"), TABLES, ids=lambda v: getattr(v, "__name__", ""))
def test_every_other_event_raises(
    module: ModuleType, edges: list[tuple[Enum, str, Enum]], error: type[Exception]
) -> None:
    events = {event for _, event, _ in edges}
    states = list(type(module.INITIAL))
    for state in states:
        for event in events:
            if (state, event) not in module.TRANSITIONS:
                with pytest.raises(error):
                    module.advance(state, event)


@pytest.mark.parametrize("name", [
    "actorbroker.session.lifecycle",
    "actorbroker.session.qos_outbound",
    "actorbroker.session.qos_inbound",
])
def test_tables_are_registered_for_the_statecharts(name: str) -> None:
    assert name in statecharts.TABLE_MODULES
    chart = statecharts.Chart.from_module(__import__(name, fromlist=["_"]))
    dot = statecharts.render_dot(chart)
    for state in type(chart.initial):
        assert f'"{state.name}"' in dot


def test_wrong_ack_message_names_the_packet_id_and_state() -> None:
    with pytest.raises(ProtocolError, match="PUBACK for packet identifier 7.*AWAIT_PUBREC"):
        qos_outbound.advance(O.AWAIT_PUBREC, "PUBACK", 7)


def test_initial_states() -> None:
    assert lifecycle.INITIAL is L.NEW
    assert qos_outbound.INITIAL is O.PENDING
    assert qos_inbound.INITIAL is I.UNKNOWN
