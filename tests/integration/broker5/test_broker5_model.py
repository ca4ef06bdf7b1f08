"""Model-based test: MQTT 5 and MQTT 3.1.1 clients mixed on one live broker, checked against a model.

A hypothesis ``RuleBasedStateMachine`` connects three client ids with MQTT
3.1.1 or 5.0 in turn (Clean Session / Clean Start, Session Expiry 0 or an
hour), subscribes with and without MQTT 5 options (No Local, Retain As
Published, Retain Handling, Subscription Identifiers; overlapping filters),
unsubscribes, publishes (QoS 0/1/2, RETAIN, empty payloads clearing it),
disconnects or drops the socket. Each connection is a paho-mqtt 2.x client
(MQTT 5 or 3.1.1: an implementation independent of ours) or a RawClient on
our codec. After every step each client's messages are compared with what
:mod:`mqtt5_reference` (written from the specs, importing nothing of the
broker) says it must see, Subscription Identifiers included.

Synchronisation is on events: the acting client's request completes and a
round trip on its connection follows (PINGREQ, or an UNSUBSCRIBE of an
unused filter for paho), each client that must receive messages is waited
for until it has them. At the end, a QoS 1 marker published on every topic
used must be the next thing each subscriber sees (a stray delivery would
come first).
"""

from __future__ import annotations

import itertools
import queue
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from mqtt5_testkit import Client5
from mqtt_testkit import TIMEOUT, Client, RawClient, broker_config

from actorbroker.actors import NodeSettings
from actorbroker.app import Broker, RunningBroker
from actorbroker.codec import (
    ConnAck,
    Connect,
    Packet,
    PingReq,
    PingResp,
    Properties,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    Subscription,
    UnsubAck,
    Unsubscribe,
)

sys.path.insert(0, str(Path(__file__).parent))

from mqtt5_reference import Msg, Reference5, Sub, same_delivery  # noqa: E402

CLIENTS = ("c0", "c1", "c2")
TOPICS = ("a", "b", "a/b", "a/a", "b/a")
FILTERS = TOPICS + ("+", "#", "a/+", "+/a", "a/#")
UNUSED = "$settle/never"
HOUR = 3600


class RawPeer:
    """Our codec on a socket; acknowledges every QoS 1/2 message as it reads it."""

    def __init__(self, running: RunningBroker, client_id: str, level: int) -> None:
        self.raw = RawClient(running.host, running.port, level)
        self.client_id, self.level = client_id, level
        self.messages: list[Msg] = []
        self._ids = itertools.count(1)

    def connect(self, clean: bool, expiry: int) -> bool:
        props = Properties(session_expiry_interval=expiry or None) if self.level == 5 else \
            Properties()
        self.raw.send(Connect("MQTT", self.level, self.client_id, clean, 60, properties=props))
        connack = self.raw.recv()
        assert isinstance(connack, ConnAck) and connack.reason_code == 0, connack
        return connack.session_present

    def _next(self) -> Packet:
        packet = self.raw.recv()
        if isinstance(packet, Publish):
            assert not packet.dup, packet
            self.messages.append(Msg(packet.topic, packet.payload, packet.qos, packet.retain,
                                     packet.properties.subscription_identifier))
            if packet.qos == 1:
                self.raw.send(PubAck(packet.packet_id or 0))
            elif packet.qos == 2:
                self.raw.send(PubRec(packet.packet_id or 0))
        elif isinstance(packet, PubRel):
            self.raw.send(PubComp(packet.packet_id))
        return packet

    def _until(self, kind: type, packet_id: int | None = None) -> Packet:
        while True:
            packet = self._next()
            if isinstance(packet, kind) and getattr(packet, "packet_id", None) == packet_id:
                return packet

    def subscribe(self, topic_filter: str, sub: Sub, handling: int) -> None:
        pid = next(self._ids)
        props = Properties(subscription_identifier=(sub.sub_id,)) if sub.sub_id else Properties()
        self.raw.send(Subscribe(pid, (Subscription(topic_filter, sub.qos, sub.no_local,
                                                   sub.as_published, handling),), props))
        suback = self._until(SubAck, pid)
        assert suback.reason_codes == (sub.qos,), suback  # type: ignore[attr-defined]

    def unsubscribe(self, topic_filter: str) -> None:
        pid = next(self._ids)
        self.raw.send(Unsubscribe(pid, (topic_filter,)))
        self._until(UnsubAck, pid)

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool) -> None:
        pid = next(self._ids) if qos else None
        self.raw.send(Publish(topic, payload, qos, retain, packet_id=pid))
        if qos == 1:
            self._until(PubAck, pid)
        elif qos == 2:
            self._until(PubRec, pid)
            self.raw.send(PubRel(pid or 0))
            self._until(PubComp, pid)
        self.settle()

    def settle(self) -> None:
        self.raw.send(PingReq())
        self._until(PingResp)

    def take(self, count: int) -> list[Msg]:
        while len(self.messages) < count:
            self._next()
        taken, self.messages = self.messages[:count], self.messages[count:]
        return taken

    def pending(self) -> int:
        return len(self.messages)

    def leave(self, drop: bool) -> None:
        if drop:
            self.raw.close()
        else:
            self.raw.disconnect()


class PahoPeer:
    """paho-mqtt 2.x, MQTT 5 or 3.1.1, acknowledging each message before the test sees it."""

    def __init__(self, running: RunningBroker, client_id: str, level: int) -> None:
        self.running, self.client_id, self.level = running, client_id, level
        self.c5: Client5 | None = None
        self.c3: Client | None = None
        self._received: queue.Queue[Msg] = queue.Queue()

    def _made(self, clean: bool) -> Any:
        """The paho client (3.1.1 fixes Clean Session when it is made)."""
        host, port = self.running.host, self.running.port
        if self.level == 5:
            self.c5 = Client5(host, port, self.client_id, manual_ack=True)
            paho = self.c5.paho
        else:
            self.c3 = Client(host, port, self.client_id, level=4, clean=clean)
            paho = self.c3.paho
        paho.manual_ack_set(True)
        paho.on_message = self._on_message
        self.paho = paho
        return paho

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        if msg.qos:
            self.paho.ack(msg.mid, msg.qos)
        ids = tuple(getattr(msg.properties, "SubscriptionIdentifier", ())) if self.level == 5 \
            else ()
        self._received.put(Msg(msg.topic, msg.payload, msg.qos, bool(msg.retain), ids))

    def connect(self, clean: bool, expiry: int) -> bool:
        self._made(clean)
        if self.c5 is not None:
            props = {"SessionExpiryInterval": expiry} if expiry else {}
            result = self.c5.connect(clean_start=clean, **props)
            assert result.rc == 0
            return result.session_present
        assert self.c3 is not None
        connected = self.c3.connect()
        assert connected.rc == 0
        return connected.session_present

    def subscribe(self, topic_filter: str, sub: Sub, handling: int) -> None:
        if self.c5 is not None:
            codes = self.c5.subscribe(topic_filter, sub.qos, no_local=sub.no_local,
                                      retain_as_published=sub.as_published,
                                      retain_handling=handling,
                                      subscription_id=sub.sub_id or None)
        else:
            assert self.c3 is not None
            codes = self.c3.subscribe(topic_filter, sub.qos)
        assert codes == [sub.qos], codes

    def unsubscribe(self, topic_filter: str) -> None:
        (self.c5 or self.c3).unsubscribe(topic_filter)  # type: ignore[union-attr]

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool) -> None:
        (self.c5 or self.c3).publish(topic, payload, qos, retain)  # type: ignore[union-attr]
        self.settle()

    def settle(self) -> None:
        (self.c5 or self.c3).unsubscribe(UNUSED)  # type: ignore[union-attr]

    def take(self, count: int) -> list[Msg]:
        try:
            return [self._received.get(timeout=TIMEOUT) for _ in range(count)]
        except queue.Empty:
            raise AssertionError("an expected message did not arrive") from None

    def pending(self) -> int:
        return self._received.qsize()

    def leave(self, drop: bool) -> None:
        client = self.c5 or self.c3
        assert client is not None
        if drop:
            client.drop()
        else:
            client.disconnect()


@contextmanager
def running_broker() -> Iterator[RunningBroker]:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        config = broker_config(Path(tmp))
        yield stack.enter_context(Broker.run_in_thread(
            config, settings=NodeSettings.from_config(config, sys_interval=0.0)))


class MixedBroker(RuleBasedStateMachine):
    """MQTT 5 and 3.1.1 sessions on one broker (see the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self._stack = ExitStack()
        self.broker = self._stack.enter_context(running_broker())
        self.model = Reference5()
        self.peers: dict[str, RawPeer | PahoPeer] = {}
        self.payloads = itertools.count(1)
        self.used_topics: set[str] = set()

    def _check(self, expected: dict[str, list[Msg]]) -> None:
        for client_id, messages in expected.items():
            got = self.peers[client_id].take(len(messages))
            assert same_delivery(messages, got), (client_id, messages, got)
        for client_id, peer in self.peers.items():
            if client_id not in expected:
                assert peer.pending() == 0, (client_id, "got something unexpected")

    def _connected(self) -> list[str]:
        return [c for c in CLIENTS if self.model.connected(c)]

    @initialize(levels=st.lists(st.sampled_from([4, 5]), min_size=3, max_size=3),
                paho=st.lists(st.booleans(), min_size=3, max_size=3))
    def start(self, levels: list[int], paho: list[bool]) -> None:
        for client_id, level, use_paho in zip(CLIENTS, levels, paho, strict=True):
            self._connect(client_id, level, True, level == 5, use_paho)

    def _offline(self) -> list[str]:
        return [c for c in CLIENTS if not self.model.connected(c)]

    @precondition(lambda self: self._offline())
    @rule(data=st.data(), level=st.sampled_from([4, 5]), clean=st.booleans(),
          keep=st.booleans(), paho=st.booleans())
    def connect(self, data: st.DataObject, level: int, clean: bool, keep: bool,
                paho: bool) -> None:
        self._connect(data.draw(st.sampled_from(self._offline())), level, clean, keep, paho)

    def _connect(self, client_id: str, level: int, clean: bool, keep: bool, paho: bool) -> None:
        if level == 4:
            keep = not clean  # MQTT 3.1.1: the Clean Session flag says both
        peer_cls = PahoPeer if paho else RawPeer
        peer = peer_cls(self.broker, client_id, level)
        present = peer.connect(clean, HOUR if keep else 0)
        expected_present, deliveries = self.model.connect(client_id, level=level, clean=clean,
                                                          keep=keep)
        assert present == expected_present
        self.peers[client_id] = peer
        self._check(deliveries)

    @precondition(lambda self: self._connected())
    @rule(data=st.data(), topic_filter=st.sampled_from(FILTERS), qos=st.integers(0, 2),
          no_local=st.booleans(), as_published=st.booleans(), handling=st.integers(0, 2),
          sub_id=st.sampled_from([0, 0, 7, 9]))
    def subscribe(self, data: st.DataObject, topic_filter: str, qos: int, no_local: bool,
                  as_published: bool, handling: int, sub_id: int) -> None:
        client_id = data.draw(st.sampled_from(self._connected()))
        if self.model.level(client_id) == 4:
            sub, handling = Sub(qos), 0
        else:
            sub = Sub(qos, no_local, as_published, sub_id)
        self.peers[client_id].subscribe(topic_filter, sub, handling)
        self.peers[client_id].settle()
        self._check(self.model.subscribe(client_id, topic_filter, sub, handling))

    @precondition(lambda self: self._connected())
    @rule(data=st.data(), topic_filter=st.sampled_from(FILTERS))
    def unsubscribe(self, data: st.DataObject, topic_filter: str) -> None:
        client_id = data.draw(st.sampled_from(self._connected()))
        self.peers[client_id].unsubscribe(topic_filter)
        self.model.unsubscribe(client_id, topic_filter)
        self._check({})

    @precondition(lambda self: self._connected())
    @rule(data=st.data(), topic=st.sampled_from(TOPICS), qos=st.integers(0, 2),
          retain=st.booleans(), empty=st.booleans())
    def publish(self, data: st.DataObject, topic: str, qos: int, retain: bool,
                empty: bool) -> None:
        client_id = data.draw(st.sampled_from(self._connected()))
        payload = b"" if retain and empty else str(next(self.payloads)).encode()
        self.used_topics.add(topic)
        self.peers[client_id].publish(topic, payload, qos, retain)
        self._check(self.model.publish(client_id, topic, payload, qos, retain))

    @precondition(lambda self: self._connected())
    @rule(data=st.data(), drop=st.booleans())
    def leave(self, data: st.DataObject, drop: bool) -> None:
        client_id = data.draw(st.sampled_from(self._connected()))
        peer = self.peers.pop(client_id)
        connected = self.broker.metrics()["clients_connected"]
        peer.leave(drop)
        self.model.leave(client_id)
        self.broker.wait_until(lambda m: m["clients_connected"] == connected - 1)

    def teardown(self) -> None:
        try:
            marker = RawPeer(self.broker, "zz-auditor", 4)
            marker.connect(True, 0)
            self.model.connect("zz-auditor", level=4, clean=True, keep=False)
            for topic in sorted(self.used_topics):
                payload = f"marker-{topic}".encode()
                marker.publish(topic, payload, 1, False)
                self._check(self.model.publish("zz-auditor", topic, payload, 1, False))
        finally:
            self._stack.close()


MixedBroker.TestCase.settings = settings(
    max_examples=25, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMixedBroker = MixedBroker.TestCase
