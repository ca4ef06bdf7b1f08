"""A durable session subscribing while QoS 1 messages pour in: what the log queues for it, it gets live.

The suspected race: a PUBLISH accepted while a durable session's SUBSCRIBE
is being handled could be queued for the session by the fold (its
``Subscribed`` record comes before the ``PublishAccepted`` in the log) without
being delivered live (the topic actor did not know the subscriber yet);
it would then wait in the log's queue until the client reconnects.

The test tries it for real: four publishers keep a window of QoS 1
PUBLISHes in flight over 40 topics while one persistent MQTT 3.1.1 session
subscribes to the topics one by one. Then a marker goes to every topic
(each topic keeps its order), and, without reconnecting, the subscriber
must have received every message the log derived for it (each ``PublishAccepted``
of a topic after its ``Subscribed``), and the log must hold nothing
queued for it. The messages that were sent before the SUBACK came back
and yet landed after the ``Subscribed`` in the log are the race window:
the test fails if there were none (it would prove nothing).

Why it does not happen (docs/storage.md, "Durable sessions"): the
registry tells the topic actors ``SubscribersChanged`` before it answers
the session, and the session writes ``Subscribed`` only after that
answer; a ``PublishAccepted`` that comes after it in the log was stored after it,
and its message is routed only once stored, so it reaches the topic actor
behind the ``SubscribersChanged`` (one inbox, in order; a new topic actor
or one starting gets the registry's current subscribers).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from durability_kit import RawClient, durable_config, raw, running

from actorbroker.actors.storage.requests import LoadSession
from actorbroker.codec import PubAck, Publish, SubAck, Subscribe, Subscription
from actorbroker.persistence.reader import LogReader
from actorbroker.persistence.records import PublishAccepted, Subscribed

TOPICS = [f"race/{n}" for n in range(40)]
WINDOW = 10


class Publisher(threading.Thread):
    """QoS 1 PUBLISHes round the topics, ``WINDOW`` unacknowledged at most, until stopped."""

    def __init__(self, client: RawClient, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.client, self.stopping = client, threading.Event()
        self.sent_at: dict[bytes, float] = {}
        self.errors: list[str] = []

    def run(self) -> None:
        inflight: set[int] = set()
        n = 0
        try:
            while not self.stopping.is_set() or inflight:
                while not self.stopping.is_set() and len(inflight) < WINDOW:
                    n += 1
                    packet_id = n % 65535 + 1
                    payload = f"{self.name}-{n}".encode()
                    self.sent_at[payload] = time.monotonic()
                    self.client.send(Publish(TOPICS[n % len(TOPICS)], payload, 1, False, False,
                                             packet_id))
                    inflight.add(packet_id)
                ack = self.client.recv(10)
                assert isinstance(ack, PubAck), ack
                inflight.discard(ack.packet_id)
        except Exception as exc:  # reported by the test
            self.errors.append(repr(exc))


def test_messages_the_log_queues_during_a_subscribe_are_delivered_live(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(durable_config(data)) as broker:
        sub = raw(broker)
        sub.connect("sub", clean=False)
        publishers = []
        for n in range(4):
            client = raw(broker)
            client.connect(f"pub{n}")
            publishers.append(Publisher(client, f"pub{n}"))
        received: dict[str, set[bytes]] = {}
        subacked: dict[str, float] = {}

        def take(packet: object) -> None:
            if isinstance(packet, Publish):
                sub.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
                received.setdefault(packet.topic, set()).add(packet.payload)

        for publisher in publishers:
            publisher.start()
        for packet_id, topic in enumerate(TOPICS, 1):
            sub.send(Subscribe(packet_id, (Subscription(topic, 1),)))
            while True:
                packet = sub.recv()
                if isinstance(packet, SubAck):
                    assert packet.packet_id == packet_id
                    subacked[topic] = time.monotonic()
                    break
                take(packet)
        for publisher in publishers:
            publisher.stopping.set()
        for publisher in publishers:
            publisher.join(30)
            assert not publisher.is_alive() and not publisher.errors, publisher.errors
        marker = raw(broker)
        marker.connect("marker")
        marker.send(*(Publish(t, b"marker", 1, False, False, n) for n, t in enumerate(TOPICS, 1)))
        assert all(isinstance(marker.recv(), PubAck) for _ in TOPICS)
        while not all(b"marker" in received.get(t, ()) for t in TOPICS):
            take(sub.recv())
        load = broker.node.names.storage().ask(LoadSession("sub"), timeout=10)
        records = [e.record for e in LogReader(data / "log").read()]
    sent_at = {p: at for publisher in publishers for p, at in publisher.sent_at.items()}
    subscribed_from: dict[str, int] = {}
    derived: dict[str, set[bytes]] = {}
    window = 0  # sent before the SUBACK came back, stored after the Subscribed
    for index, record in enumerate(records):
        if isinstance(record, Subscribed) and record.client_id == "sub":
            subscribed_from[record.topic_filter] = index
        elif isinstance(record, PublishAccepted) and record.topic in subscribed_from:
            derived.setdefault(record.topic, set()).add(record.payload)
            if sent_at.get(record.payload, 1e18) < subacked[record.topic]:
                window += 1
    missing = {t: sorted(p - received.get(t, set()))[:5] for t, p in derived.items()
               if p - received.get(t, set())}
    assert missing == {}, f"queued by the log, never delivered live: {missing}"
    assert len(load.queue) == 0, f"{len(load.queue)} message(s) wait in the log's queue"
    assert window > 0, "no PUBLISH fell in a SUBSCRIBE's window: the race was not exercised"
    print(f"{sum(map(len, derived.values()))} messages derived for the subscriber, "
          f"{window} of them sent while their topic's SUBSCRIBE was in progress")
