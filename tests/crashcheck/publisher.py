"""Crash checker: a publisher: numbered payloads to one topic at QoS 1 or 2, paced, with a window; resends as the spec says.

Payloads are ``{cid}|{n}|`` padded to the drawn size, so every message is
unique and names its publisher and place. A message is *acknowledged* when
the broker sent PUBACK (QoS 1) or PUBREC (QoS 2) for it: the time is kept in
:attr:`Publisher.acked`. After a reconnect with the session present it
resends each unacknowledged PUBLISH with DUP=1 under its packet id, and
PUBREL for those PUBRECed ([MQTT-4.4.0-1]); without a session, PUBREC-stage
flows are over (the message was acknowledged) and the rest go out again as
new PUBLISHes. A refused message (v5 reason code >= 0x80) is sent again later.

:attr:`Publisher.sends` lists the number of every PUBLISH in the order they
were written, resends included: what the broker may receive, in order, for
the order check (model.py).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

from actorbroker.codec import Packet, PubAck, PubComp, Publish, PubRec, PubRel

from .client import Client, Connection
from .scenario import PublisherSpec


@dataclass
class Sent:
    """One message of the publisher."""

    seq: int
    payload: bytes
    first_sent: float
    acked: float | None = None
    # Sent again as a new PUBLISH after a session was discarded before the broker acknowledged
    # it: if the broker had it already, a second copy is a new message, not a duplicate.
    reissued: bool = False


class Publisher(Client):
    """See the module doc."""

    spec: PublisherSpec

    def __init__(self, spec: PublisherSpec, seed: int, port: int,
                 progress: threading.Condition) -> None:
        super().__init__(spec, seed, port)
        self.progress = progress  # notified when a flow completes
        self.messages: list[Sent] = []
        self.refused = 0
        self.sends: list[int] = []  # seq of each PUBLISH written (resends too), in order
        self._inflight: dict[int, tuple[Sent, bool]] = {}  # packet id -> (message, PUBRECed)
        self._again: deque[Sent] = deque()  # to send again as new PUBLISHes
        self._next_id = 0
        self._next_send = time.monotonic()

    @property
    def open_flows(self) -> int:
        return len(self._inflight) + len(self._again)

    @property
    def settled(self) -> bool:
        """Every message it will send is sent and its flow complete."""
        return not self._inflight and not self._again and (
            self.final.is_set() or len(self.messages) >= self.spec.count)

    def new_session(self) -> None:
        for packet_id, (message, pubreced) in list(self._inflight.items()):
            del self._inflight[packet_id]
            if not pubreced:
                message.reissued = True
                self._again.append(message)

    def connected(self, conn: Connection, present: bool) -> None:
        resend: list[Packet] = []
        for packet_id, (message, pubreced) in self._inflight.items():
            if not pubreced:
                self.sends.append(message.seq)
            resend.append(PubRel(packet_id) if pubreced else
                          Publish(self.spec.topic, message.payload, self.spec.qos, False, True,
                                  packet_id))
        if resend:
            conn.send(*resend)
        self._next_send = time.monotonic()

    def _publish(self, conn: Connection, message: Sent) -> None:
        self._next_id = self._next_id % 65535 + 1
        while self._next_id in self._inflight:
            self._next_id = self._next_id % 65535 + 1
        self._inflight[self._next_id] = (message, False)
        self.sends.append(message.seq)
        conn.send(Publish(self.spec.topic, message.payload, self.spec.qos, False, False,
                          self._next_id))

    def step(self, conn: Connection) -> None:
        spec, now = self.spec, time.monotonic()
        while len(self._inflight) < spec.window and self._again:
            self._publish(conn, self._again.popleft())
        if (now >= self._next_send and len(self._inflight) < spec.window
                and not self.final.is_set() and len(self.messages) < spec.count):
            seq = len(self.messages)
            payload = f"{spec.cid}|{seq}|".encode().ljust(spec.payload_bytes, b"x")
            message = Sent(seq, payload, now)
            self.messages.append(message)
            self._publish(conn, message)
            # Paced, without a burst to catch up after an absence.
            self._next_send = max(self._next_send + 1 / spec.rate, now - 0.05)
        can_send = (len(self._inflight) < spec.window and not self.final.is_set()
                    and len(self.messages) < spec.count)
        packet = conn.recv(min(0.01, max(self._next_send - now, 0.0)) if can_send else 0.01)
        if isinstance(packet, (PubAck, PubRec)) and packet.packet_id in self._inflight:
            message, _ = self._inflight[packet.packet_id]
            if packet.reason_code >= 0x80:
                self.refused += 1
                del self._inflight[packet.packet_id]
                self._again.append(message)
            elif isinstance(packet, PubAck):
                message.acked = message.acked or time.monotonic()
                self._done(packet.packet_id)
            else:
                message.acked = message.acked or time.monotonic()
                self._inflight[packet.packet_id] = (message, True)
                conn.send(PubRel(packet.packet_id))
        elif isinstance(packet, PubComp) and packet.packet_id in self._inflight:
            self._done(packet.packet_id)

    def _done(self, packet_id: int) -> None:
        with self.progress:
            del self._inflight[packet_id]
            self.progress.notify_all()
