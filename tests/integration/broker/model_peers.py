"""Test support: the two client implementations the model test drives, behind one interface.

* :class:`PahoPeer`: paho-mqtt (an implementation independent of ours),
  acknowledging each QoS 1/2 message itself, before the test sees it, so
  that a later round trip proves the broker has the acknowledgement.
* :class:`RawPeer`: a socket on our codec (:class:`RawClient`), acking
  every QoS 1/2 message as soon as it reads it.

Both offer: ``connect`` -> (return code, Session Present), ``subscribe``
-> granted QoS, ``unsubscribe``, ``publish`` (returns once the broker has
handled it: the flow is complete and a round trip on the same connection
came back), ``settle`` (that round trip: PINGREQ, or for paho an
UNSUBSCRIBE of a filter never subscribed), ``take(n)`` (the next n
messages, waiting for them), ``pending``, ``disconnect``, ``drop`` (close
the socket without DISCONNECT), ``wait_closed`` and ``close``.
"""

from __future__ import annotations

import itertools
import socket
from typing import Any

from mqtt_reference import Msg, WillSpec
from mqtt_testkit import Client, RawClient

from actorbroker.codec import (
    Disconnect,
    Packet,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    PubRec,
    PubRel,
    Publish,
    SubAck,
    Subscribe,
    Subscription,
    UnsubAck,
    Unsubscribe,
    Will,
)

__all__ = ["IMPLEMENTATIONS", "PahoPeer", "Peer", "RawPeer"]

UNUSED_FILTER = "$settle/never-subscribed"
#: How long an expected packet may take. Only a failing run waits this long;
#: generous because this machine is shared and 5 s stalls were seen under load.
WAIT = 15.0



class _AckingClient(Client):
    """The testkit's paho client, acknowledging each message before the test sees it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.paho.manual_ack_set(True)

    def _on_message(self, c: Any, u: Any, msg: Any) -> None:
        if msg.qos:
            self.paho.ack(msg.mid, msg.qos)  # queued before anything the test sends next
        super()._on_message(c, u, msg)


class PahoPeer:
    """A paho-mqtt connection (MQTT 3.1 or 3.1.1)."""

    def __init__(self, host: str, port: int, client_id: str, level: int, clean: bool,
                 will: WillSpec | None) -> None:
        spec = None if will is None else (will.topic, will.payload, will.qos, will.retain)
        self.client = _AckingClient(host, port, client_id, level=level, clean=clean, will=spec)

    def connect(self) -> tuple[int, bool]:
        result = self.client.connect(timeout=WAIT)
        return result.rc, result.session_present

    def subscribe(self, topic_filter: str, qos: int) -> int:
        return self.client.subscribe(topic_filter, qos, timeout=WAIT)[0]

    def unsubscribe(self, topic_filter: str) -> None:
        self.client.unsubscribe(topic_filter, timeout=WAIT)

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool) -> None:
        self.client.publish(topic, payload, qos, retain, timeout=WAIT)
        self.settle()

    def settle(self) -> None:
        """Return once the broker has handled everything this client sent."""
        self.client.unsubscribe(UNUSED_FILTER, timeout=WAIT)

    def take(self, count: int) -> list[Msg]:
        got = self.client.expect_many(count, timeout=WAIT)
        assert not any(m.dup for m in got), got
        return [Msg(m.topic, m.payload, m.qos, m.retain) for m in got]

    def pending(self) -> int:
        return self.client.messages.qsize()

    def disconnect(self) -> None:
        self.client.disconnect()

    def drop(self) -> None:
        self.client.drop()

    def wait_closed(self) -> None:
        assert self.client.disconnected.wait(WAIT), "the broker did not close the connection"
        self.client.paho.loop_stop()

    def close(self) -> None:
        self.client.close()


class RawPeer:
    """A connection on our codec; acks every QoS 1/2 message as soon as it is read."""

    def __init__(self, host: str, port: int, client_id: str, level: int, clean: bool,
                 will: WillSpec | None) -> None:
        self.raw = RawClient(host, port, level, timeout=WAIT)
        self.client_id, self.clean = client_id, clean
        self.will = None if will is None else Will(will.topic, will.payload, will.qos, will.retain)
        self.messages: list[Msg] = []
        self._ids = itertools.count(1)

    def connect(self) -> tuple[int, bool]:
        connack = self.raw.connect(self.client_id, clean=self.clean, will=self.will)
        return connack.reason_code, connack.session_present

    def _next(self, timeout: float = WAIT) -> Packet:
        """Read one packet; PUBLISH and PUBREL are handled here and also returned."""
        packet = self.raw.recv(timeout)
        if isinstance(packet, Publish):
            assert not packet.dup, packet
            self.messages.append(Msg(packet.topic, packet.payload, packet.qos, packet.retain))
            if packet.qos == 1:
                self.raw.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
            elif packet.qos == 2:
                self.raw.send(PubRec(packet.packet_id))  # type: ignore[arg-type]
        elif isinstance(packet, PubRel):
            self.raw.send(PubComp(packet.packet_id))
        return packet

    def _until(self, kind: type, packet_id: int | None = None) -> Packet:
        while True:
            packet = self._next()
            if isinstance(packet, kind) and getattr(packet, "packet_id", None) == packet_id:
                return packet

    def subscribe(self, topic_filter: str, qos: int) -> int:
        pid = next(self._ids)
        self.raw.send(Subscribe(pid, (Subscription(topic_filter, qos),)))
        suback: Any = self._until(SubAck, pid)
        code: int = suback.reason_codes[0]
        return code

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
            self.raw.send(PubRel(pid))  # type: ignore[arg-type]
            self._until(PubComp, pid)
        self.settle()

    def settle(self) -> None:
        self.raw.send(PingReq())
        self._until(PingResp)

    def take(self, count: int) -> list[Msg]:
        while len(self.messages) < count:
            self._next()
        got, self.messages = self.messages[:count], self.messages[count:]
        return got

    def pending(self) -> int:
        return len(self.messages)

    def disconnect(self) -> None:
        self.raw.send(Disconnect())
        self.wait_closed()

    def drop(self) -> None:
        self.raw.sock.shutdown(socket.SHUT_RDWR)
        self.raw.close()

    def wait_closed(self) -> None:
        try:
            while True:
                self._next()
        except (EOFError, ConnectionResetError):
            self.raw.close()

    def close(self) -> None:
        self.raw.close()


Peer = PahoPeer | RawPeer
IMPLEMENTATIONS: dict[str, type[PahoPeer] | type[RawPeer]] = {"paho": PahoPeer, "raw": RawPeer}
