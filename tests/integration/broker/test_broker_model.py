"""Model-based test: several real clients against a live broker, every delivery checked against a reference model.

A hypothesis ``RuleBasedStateMachine`` connects (Clean Session 0 or 1,
MQTT 3.1 or 3.1.1, with or without a Will), takes over, subscribes
(wildcards, overlapping filters), unsubscribes, publishes (QoS 0/1/2,
RETAIN, empty payloads clearing the retained message), disconnects cleanly
or drops the socket, for three client ids. Each connection is either a
paho-mqtt client (an implementation independent of ours) or a
:class:`RawClient` on our codec, chosen per connection. After every step
each client's messages are compared with what :mod:`mqtt_reference`, written
from the spec and importing nothing of the broker, says it must see.

Synchronisation, on events only:

* the acting client's request completes (SUBACK, UNSUBACK, PUBACK/PUBCOMP),
  then a round trip on its own connection (PINGREQ, or an UNSUBSCRIBE of an
  unused filter for paho) proves the broker has handled everything it sent
  (a QoS 0 PUBLISH included);
* each client the model says must receive messages is waited for until it
  has them (a missing message is a timeout, a failure), then does the same
  round trip so that its PUBACK/PUBREC reached the broker (paho acks
  manually here, before the test sees the message); a client that must
  receive nothing must not have anything pending;
* after a disconnect or a drop, the broker's ``clients_connected`` gauge is
  awaited (the only wait on a counter: there is no event to wait on).

QoS 0 to a connected client is taken as delivered: on loopback with a
consumer that keeps up the broker never congests, so it has no reason to
drop one (a drop would be counted under ``queue_full``, asserted to be 0).
Absence is checked as above and, at the end of each example, by an audit
(teardown): offline persistent sessions reconnect and must get exactly their
queue, every client subscribes to ``#`` and a QoS 2 marker is published on
every topic used. A marker travels behind any earlier message of its topic
(one topic actor, one session inbox), so a stray delivery still in flight
shows up before it. The audit also checks the drop counters and that the
broker holds exactly the sessions and subscriptions the model does.

The broker runs with ``[storage] durability = "os"``: offline persistent
sessions hibernate and come back from the commit log, without fsync's
latency (``MODEL_DURABILITY=fsync|memory`` in the environment to vary it).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from mqtt_testkit import broker_config

from actorbroker.actors import NodeSettings
from actorbroker.app import Broker

sys.path.insert(0, str(Path(__file__).parent))

from model_peers import IMPLEMENTATIONS, Peer  # noqa: E402
from mqtt_reference import Msg, ReferenceBroker, WillSpec, same_delivery  # noqa: E402

CLIENTS = ("c0", "c1", "c2")
LEVELS = ("a", "b")
TOPICS = tuple("/".join(p) for n in (1, 2, 3) for p in itertools.product(LEVELS, repeat=n))
#: Mostly short topics, so that filters and publishes meet often.
topics = st.sampled_from(TOPICS[:6]) | st.sampled_from(TOPICS)
#: The commit log's code paths (journal, hibernation, reload) without waiting for fsync.
DURABILITY = os.environ.get("MODEL_DURABILITY", "os")


# -- strategies -----------------------------------------------------------------------


@st.composite
def topic_filters(draw: st.DrawFn) -> str:
    """Filters over the model's topics: exact, ``+`` levels, a trailing ``#``, or ``#``."""
    if draw(st.integers(0, 9)) == 0:
        return "#"
    levels = draw(topics).split("/")
    levels = [draw(st.sampled_from([level, level, "+"])) for level in levels]
    if draw(st.booleans()):
        levels = levels[:draw(st.integers(0, len(levels) - 1))] + ["#"]
    return "/".join(levels)


wills = st.none() | st.tuples(st.sampled_from(TOPICS[:6]), st.integers(0, 2), st.booleans())
#: Clean Session 0 twice as often: persistent sessions are where the state is.
cleans = st.sampled_from([False, False, True])
subscriptions = st.lists(st.tuples(topic_filters(), st.integers(0, 2)), max_size=2)


class BrokerModel(RuleBasedStateMachine):
    """Three client ids against one fresh broker per example (see the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self._stack = ExitStack()
        tmp = Path(self._stack.enter_context(tempfile.TemporaryDirectory()))
        config = broker_config(tmp)
        config = dataclasses.replace(config, storage=dataclasses.replace(
            config.storage, durability=DURABILITY))
        self.broker = self._stack.enter_context(Broker.run_in_thread(
            config, settings=NodeSettings.from_config(config, sys_interval=0)))
        self.model = ReferenceBroker()
        self.peers: dict[str, Peer] = {}
        self.serial = itertools.count()
        self.topics_used: set[str] = set()
        self.broken = False

    @contextmanager
    def _step(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            self.broken = True  # no audit after a failed step: report that failure
            raise

    def _payload(self, kind: str) -> bytes:
        return f"{kind}-{next(self.serial)}".encode()

    # -- checking ---------------------------------------------------------------

    def _settle(self, deliveries: dict[str, list[Msg]], step: str) -> None:
        """Every delivery arrived as the model says; nothing else is pending."""
        for client_id, expected in deliveries.items():
            peer = self.peers[client_id]
            got = peer.take(len(expected))
            assert same_delivery(expected, got), (
                f"{step}: {client_id} expected {expected}, received {got}")
            peer.settle()  # its acks reached the broker
        for client_id in self.model.connected_ids():
            stray = self.peers[client_id].pending()
            assert not stray, f"{step}: {client_id} received {stray} unexpected message(s)"

    def _await_connected(self) -> None:
        count = len(self.model.connected_ids())
        self.broker.wait_until(lambda m: m["clients_connected"] == count)

    def _open(self, client_id: str, impl: str, level: int, clean: bool,
              will: WillSpec | None) -> tuple[int, bool]:
        peer = IMPLEMENTATIONS[impl](self.broker.host, self.broker.port, client_id, level,
                                     clean, will)
        self.peers[client_id] = peer
        return peer.connect()

    # -- rules ------------------------------------------------------------------

    @initialize(data=st.data())
    def connect_all(self, data: st.DataObject) -> None:
        """Every client id starts connected, so that every rule is enabled from the start."""
        with self._step():
            for client_id in CLIENTS:
                self._connect(client_id, data.draw(st.sampled_from(sorted(IMPLEMENTATIONS))),
                              data.draw(st.sampled_from([3, 4])), data.draw(cleans),
                              data.draw(wills), data.draw(subscriptions))

    @precondition(lambda self: len(self.model.connected_ids()) < len(CLIENTS))
    @rule(data=st.data(), impl=st.sampled_from(sorted(IMPLEMENTATIONS)),
          level=st.sampled_from([3, 4]), clean=cleans, will=wills, subs=subscriptions)
    def connect(self, data: st.DataObject, impl: str, level: int, clean: bool,
                will: tuple[str, int, bool] | None, subs: list[tuple[str, int]]) -> None:
        with self._step():
            client_id = data.draw(st.sampled_from(
                [c for c in CLIENTS if not self.model.connected(c)]))
            self._connect(client_id, impl, level, clean, will, subs)

    def _connect(self, client_id: str, impl: str, level: int, clean: bool,
                 will: tuple[str, int, bool] | None, subs: list[tuple[str, int]]) -> None:
        """Connect, then subscribe to ``subs`` one SUBSCRIBE at a time, as clients do."""
        spec = None if will is None else WillSpec(will[0], self._payload("will"), *will[1:])
        present, deliveries = self.model.connect(client_id, clean=clean, level=level, will=spec)
        if deliveries:
            event("a persistent session resumed with queued messages")
        assert self._open(client_id, impl, level, clean, spec) == (0, present)
        self._settle(deliveries, f"connect {client_id}")
        for topic_filter, qos in subs:
            self._subscribe(client_id, topic_filter, qos)

    @precondition(lambda self: any(self.model.will_of(c) is None
                                   for c in self.model.connected_ids()))
    @rule(data=st.data(), impl=st.sampled_from(sorted(IMPLEMENTATIONS)),
          level=st.sampled_from([3, 4]), clean=cleans)
    def take_over(self, data: st.DataObject, impl: str, level: int, clean: bool) -> None:
        with self._step():
            client_id = data.draw(st.sampled_from(
                [c for c in self.model.connected_ids() if self.model.will_of(c) is None]))
            old = self.peers[client_id]
            present, deliveries = self.model.take_over(client_id, clean=clean, level=level)
            assert self._open(client_id, impl, level, clean, None) == (0, present)
            old.wait_closed()  # [MQTT-3.1.4-2]
            self._settle(deliveries, f"take over {client_id}")

    @precondition(lambda self: self.model.connected_ids())
    @rule(data=st.data(), abrupt=st.booleans())
    def disconnect(self, data: st.DataObject, abrupt: bool) -> None:
        with self._step():
            client_id = data.draw(st.sampled_from(self.model.connected_ids()))
            peer = self.peers.pop(client_id)
            if abrupt:
                deliveries = self.model.drop(client_id)
                if deliveries:
                    event("a Will delivered")
                peer.drop()
            else:
                deliveries = self.model.disconnect(client_id)
                peer.disconnect()
            self._await_connected()
            self._settle(deliveries, f"{'drop' if abrupt else 'disconnect'} {client_id}")

    @precondition(lambda self: self.model.connected_ids())
    @rule(data=st.data(), topic_filter=topic_filters(), qos=st.integers(0, 2))
    def subscribe(self, data: st.DataObject, topic_filter: str, qos: int) -> None:
        with self._step():
            client_id = data.draw(st.sampled_from(self.model.connected_ids()))
            self._subscribe(client_id, topic_filter, qos)

    def _subscribe(self, client_id: str, topic_filter: str, qos: int) -> None:
        granted, deliveries = self.model.subscribe(client_id, topic_filter, qos)
        if deliveries:
            event("retained messages sent on SUBSCRIBE")
        assert self.peers[client_id].subscribe(topic_filter, qos) == granted
        self._settle(deliveries, f"{client_id} subscribes {topic_filter!r} QoS {qos}")

    @precondition(lambda self: any(self.model.subscriptions(c)
                                   for c in self.model.connected_ids()))
    @rule(data=st.data(), other=topic_filters())
    def unsubscribe(self, data: st.DataObject, other: str) -> None:
        with self._step():
            client_id = data.draw(st.sampled_from(
                [c for c in self.model.connected_ids() if self.model.subscriptions(c)]))
            topic_filter = data.draw(st.sampled_from(
                sorted(self.model.subscriptions(client_id)) + [other]))
            self.model.unsubscribe(client_id, topic_filter)
            self.peers[client_id].unsubscribe(topic_filter)
            self._settle({}, f"{client_id} unsubscribes {topic_filter!r}")

    @precondition(lambda self: self.model.connected_ids())
    @rule(data=st.data(), messages=st.lists(
        st.tuples(topics, st.integers(0, 2), st.booleans(), st.integers(0, 3)),
        min_size=1, max_size=3))
    def publish(self, data: st.DataObject, messages: list[tuple[str, int, bool, int]]) -> None:
        """One client publishes 1-3 messages, each settled before the next."""
        with self._step():
            client_id = data.draw(st.sampled_from(self.model.connected_ids()))
            for topic, qos, retain, clear in messages:
                payload = b"" if retain and clear == 0 else self._payload(client_id)
                self._publish(client_id, topic, payload, qos, retain)

    def _publish(self, client_id: str, topic: str, payload: bytes, qos: int,
                 retain: bool) -> None:
        self.topics_used.add(topic)
        deliveries = self.model.publish(client_id, topic, payload, qos, retain)
        for messages in deliveries.values():
            if messages[0].qos < qos:
                event("QoS downgraded to the subscription's")
        self.peers[client_id].publish(topic, payload, qos, retain)
        self._settle(deliveries, f"{client_id} publishes {payload!r} to {topic!r} "
                                 f"QoS {qos} retain {retain}")

    # -- the audit --------------------------------------------------------------

    def teardown(self) -> None:
        try:
            if not self.broken:
                self._audit()
        finally:
            for peer in self.peers.values():
                peer.close()
            self._stack.close()

    def _audit(self) -> None:
        for client_id in self.model.offline_persistent_ids():
            present, deliveries = self.model.connect(client_id, clean=False, level=4)
            assert self._open(client_id, "paho", 4, False, None) == (0, present)
            self._settle(deliveries, f"audit: {client_id} resumes")
        clients = self.model.connected_ids()
        for client_id in clients:
            self._subscribe(client_id, "#", 2)
        for topic in sorted(self.topics_used) if clients else ():
            self._publish(clients[0], topic, b"audit", 2, False)
        model = self.model
        metrics = self.broker.wait_until(
            lambda m: m["subscriptions"] == model.subscription_count()
            and m["sessions"] == len(model.sessions))
        dropped = metrics["dropped"]
        assert dropped.get("offline_qos0", 0) == model.offline_qos0, dropped
        assert dropped.get("session_ended", 0) >= model.discarded, dropped
        assert dropped.get("queue_full", 0) == 0, dropped


BrokerModel.TestCase.settings = settings(
    max_examples=25, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
#: ~15 s when it passes; a failure is shrunk for up to hypothesis's 5 minutes.
TestBrokerModel = pytest.mark.timeout(600)(BrokerModel.TestCase)
