"""Crash checker: a subscriber: persistent session, drawn filters, drawn ack behaviour, the spec's QoS 2 dedup.

Ack behaviours (:data:`.scenario.ACKS`): ``immediate``; ``paced`` (at most
``ack_rate`` a second, in order: below the publish rate a queue builds
behind the broker's window); ``delayed`` (each ``ack_delay`` s after its
PUBLISH); ``withheld`` (none while connected: the window fills, then the
client leaves and the broker resends); ``out_of_order`` (MQTT 5 only:
batches in shuffled order). Acks it still owes when it leaves go out in the
same write as its DISCONNECT (``flush_acks_at_end``) or are forgotten. In the
final phase every ack is sent at once, so the run ends.

Delivery to the application (what the model checks): every QoS 0/1
PUBLISH, and a QoS 2 PUBLISH whose packet id is not awaiting PUBREL (method
B of section 4.3.3 on the receiving side: until it sends PUBCOMP the
client treats a PUBLISH with that id as the same message). So a QoS 2
payload delivered twice is a duplicate the broker sent.

With a v5 Receive Maximum it checks that the broker never has more QoS 1/2
messages in flight to it than it allowed ([MQTT-3.3.4-9]).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from actorbroker.codec import (Packet, PubAck, PubComp, Publish, PubRec, PubRel, SubAck,
                               Subscribe, Subscription)

from .client import Client, Connection
from .scenario import SubscriberSpec


@dataclass(frozen=True)
class Delivery:
    """A message delivered to the application (see the module doc)."""

    payload: bytes
    topic: str
    qos: int
    at: float
    epoch: int


class Subscriber(Client):
    """See the module doc. ``progress`` is notified at each delivery and SUBACK."""

    spec: SubscriberSpec

    def __init__(self, spec: SubscriberSpec, seed: int, port: int,
                 progress: threading.Condition) -> None:
        super().__init__(spec, seed, port)
        self.progress = progress
        self.deliveries: list[Delivery] = []
        self.resent_qos2 = 0  # QoS 2 resends recognised by packet id (not deliveries)
        self.epoch = 0  # a new one at each CONNACK without Session Present
        self.subscribed_at: dict[int, float] = {}  # epoch -> SUBACK time
        self.granted: dict[int, tuple[int, ...]] = {}
        self._awaiting: set[int] = set()  # QoS 2 ids delivered, PUBCOMP not sent
        self._unacked: set[int] = set()  # QoS 1 ids of this connection not PUBACKed
        self._owed: list[tuple[float, Packet]] = []  # (due, ack) in receipt order
        self._last_due = 0.0

    def new_session(self) -> None:
        self.epoch += 1
        self._awaiting.clear()

    def connected(self, conn: Connection, present: bool) -> None:
        if self.epoch not in self.subscribed_at:  # new session, or SUBACK lost with the broker
            conn.send(Subscribe(1, tuple(Subscription(f, q) for f, q in self.spec.filters)))

    def lost(self) -> None:
        self._owed.clear()
        self._unacked.clear()

    def owed(self) -> tuple[Packet, ...]:
        packets = tuple(p for _, p in self._owed) if self.spec.flush_acks_at_end else ()
        self._owed.clear()
        return packets

    # -- work ----------------------------------------------------------------------------

    def step(self, conn: Connection) -> None:
        self._send_due(conn)
        wait = 0.01
        if self._owed:
            wait = min(wait, max(self._owed[0][0] - time.monotonic(), 0.0))
        packet = conn.recv(wait)
        if isinstance(packet, Publish):
            self._received(packet)
        elif isinstance(packet, PubRel):
            self._awaiting.discard(packet.packet_id)
            conn.send(PubComp(packet.packet_id))
        elif isinstance(packet, SubAck):
            with self.progress:
                self.subscribed_at[self.epoch] = time.monotonic()
                self.granted[self.epoch] = packet.reason_codes
                self.progress.notify_all()

    def _received(self, packet: Publish) -> None:
        packet_id = packet.packet_id
        new = True
        if packet.qos == 2:
            assert packet_id is not None
            new = packet_id not in self._awaiting
            if new:
                self._awaiting.add(packet_id)
            else:
                self.resent_qos2 += 1
            self._owe(PubRec(packet_id))
        elif packet.qos == 1:
            assert packet_id is not None
            self._unacked.add(packet_id)
            self._owe(PubAck(packet_id))
        limit = self.spec.receive_maximum
        if limit is not None and len(self._unacked) + len(self._awaiting) > limit:
            self.violations.append(
                f"{self.name}: {len(self._unacked) + len(self._awaiting)} QoS 1/2 messages in "
                f"flight, its Receive Maximum is {limit} [MQTT-3.3.4-9]")
        if new:
            with self.progress:
                self.deliveries.append(Delivery(packet.payload, packet.topic, packet.qos,
                                                time.monotonic(), self.epoch))
                self.progress.notify_all()

    def _owe(self, ack: Packet) -> None:
        now, spec = time.monotonic(), self.spec
        if spec.ack == "paced":
            self._last_due = due = max(now, self._last_due + 1 / spec.ack_rate)
        elif spec.ack == "delayed":
            due = now + spec.ack_delay
        elif spec.ack == "withheld":
            due = math.inf
        elif spec.ack == "out_of_order":
            due = now + 0.03  # a batch gathers, then goes out shuffled
        else:
            due = now
        self._owed.append((due, ack))

    def _send_due(self, conn: Connection) -> None:
        if not self._owed:
            return
        now = time.monotonic()
        if self.final.is_set():
            ready = [p for _, p in self._owed]
        elif self.spec.ack == "out_of_order":
            ready = [p for _, p in self._owed] if self._owed[0][0] <= now else []
            self.rng.shuffle(ready)
        else:  # due times never decrease: the acks leave in the order of the PUBLISHes
            count = next((i for i, (due, _) in enumerate(self._owed) if due > now),
                         len(self._owed))
            ready = [p for _, p in self._owed[:count]]
        if not ready:
            return
        del self._owed[:len(ready)]
        conn.send(*ready)
        for ack in ready:
            if isinstance(ack, PubAck):
                self._unacked.discard(ack.packet_id)
