"""MQTT 5 clients for broker tests, synchronised on events (never on sleeps).

* :class:`Client5` wraps a paho-mqtt 2.x client speaking MQTT 5 (an
  implementation independent of ours): ``connect`` returns the CONNACK's
  reason code, Session Present and properties; ``subscribe`` the SUBACK's
  reason codes; ``publish`` waits until the flow completed; received
  messages queue up with their properties (``expect``); a DISCONNECT from
  the broker is kept (``wait_disconnect``).
* :func:`connect5` sends an MQTT 5 CONNECT with properties on a
  :class:`~mqtt_testkit.RawClient` (our codec on a plain socket), for what
  paho will not do: broken aliases, too many unacknowledged QoS 2 messages,
  invalid UTF-8, not acknowledging, the AUTH exchange.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt
from mqtt_testkit import TIMEOUT, PahoClient, RawClient
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties as PahoProperties
from paho.mqtt.subscribeoptions import SubscribeOptions

from actorbroker.codec import Connect, Disconnect, Packet, Properties, Will

__all__ = ["Client5", "Connected5", "Message5", "connect5", "expect_disconnect", "props",
           "recv_until"]


def props(kind: int, **values: Any) -> PahoProperties:
    """paho Properties of packet type ``kind`` (``PacketTypes.PUBLISH`` ...) with these values."""
    found = PahoProperties(kind)
    for name, value in values.items():
        setattr(found, name, value)
    return found


def _plain(properties: Any) -> dict[str, Any]:
    """paho Properties as a dict of the names that are set."""
    if properties is None:
        return {}
    names = {name.replace(" ", "") for name in properties.names}
    return {name: value for name, value in vars(properties).items() if name in names}


@dataclass(frozen=True)
class Message5:
    """A message as a v5 subscriber received it."""

    topic: str
    payload: bytes
    qos: int
    retain: bool
    properties: dict[str, Any] = field(default_factory=dict)
    dup: bool = False
    mid: int = 0


@dataclass(frozen=True)
class Connected5:
    """The broker's CONNACK."""

    rc: int
    session_present: bool
    properties: dict[str, Any]


class Client5(PahoClient["Message5", "Connected5"]):
    """A paho MQTT 5 client with blocking, event-synchronised calls (see the module doc)."""

    def __init__(self, host: str, port: int, client_id: str = "", *, keepalive: int = 60,
                 will: tuple[str, bytes, int, bool, dict[str, Any]] | None = None,
                 manual_ack: bool = False) -> None:
        self.host, self.port, self.keepalive = host, port, keepalive
        self.client_id = client_id
        self.disconnect_reason: int | None = None
        self.disconnect_properties: dict[str, Any] = {}
        self._wire(mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                               protocol=mqtt.MQTTv5, reconnect_on_failure=False,
                               manual_ack=manual_ack))
        if will is not None:
            topic, payload, qos, retain, will_props = will
            self.paho.will_set(topic, payload, qos, retain,
                               props(PacketTypes.WILLMESSAGE, **will_props))

    def _on_connect(self, _c: Any, _u: Any, flags: Any, reason: Any, properties: Any) -> None:
        self._connack.put(Connected5(int(reason.value), bool(flags.session_present),
                                     _plain(properties)))

    def _on_message(self, _c: Any, _u: Any, msg: mqtt.MQTTMessage) -> None:
        self.messages.put(Message5(msg.topic, msg.payload, msg.qos, bool(msg.retain),
                                   _plain(getattr(msg, "properties", None)), bool(msg.dup),
                                   msg.mid))

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, reason: Any, properties: Any) -> None:
        self.disconnect_reason = int(reason.value) if reason is not None else None
        self.disconnect_properties = _plain(properties)
        self.disconnected.set()

    def connect(self, *, clean_start: bool = True, timeout: float = TIMEOUT,
                **properties: Any) -> Connected5:
        """Connect with these CONNECT properties; the CONNACK (refusals are returned)."""
        self.paho.connect(self.host, self.port, keepalive=self.keepalive, clean_start=clean_start,
                          properties=props(PacketTypes.CONNECT, **properties)
                          if properties else None)
        self.paho.loop_start()
        return self._connack.get(timeout=timeout)

    def subscribe(self, topic: str, qos: int = 0, *, no_local: bool = False,
                  retain_as_published: bool = False, retain_handling: int = 0,
                  subscription_id: int | None = None, timeout: float = TIMEOUT) -> list[int]:
        """Subscribe with these options; the SUBACK's reason codes."""
        options = SubscribeOptions(qos=qos, noLocal=no_local,
                                   retainAsPublished=retain_as_published,
                                   retainHandling=retain_handling)
        properties = None
        if subscription_id is not None:
            properties = props(PacketTypes.SUBSCRIBE, SubscriptionIdentifier=subscription_id)
        rc, mid = self.paho.subscribe(topic, options=options, properties=properties)
        assert rc == mqtt.MQTT_ERR_SUCCESS, rc
        return self._wait_ack(mid, timeout)

    def unsubscribe(self, topic: str, timeout: float = TIMEOUT) -> list[int]:
        """Unsubscribe; the UNSUBACK's reason codes."""
        rc, mid = self.paho.unsubscribe(topic)
        assert rc == mqtt.MQTT_ERR_SUCCESS, rc
        return self._wait_ack(mid, timeout)

    def publish(self, topic: str, payload: bytes = b"", qos: int = 0, retain: bool = False,
                timeout: float = TIMEOUT, **properties: Any) -> None:
        """Publish with these PUBLISH properties; wait until the flow is complete."""
        info = self.paho.publish(topic, payload, qos, retain,
                                 props(PacketTypes.PUBLISH, **properties) if properties else None)
        info.wait_for_publish(timeout)
        if not info.is_published():
            raise TimeoutError(f"publish to {topic!r} at QoS {qos} not completed")

    def wait_disconnect(self, timeout: float = TIMEOUT) -> int | None:
        """Wait until the connection ends; the broker's DISCONNECT reason code (None if none)."""
        if not self.disconnected.wait(timeout):
            raise TimeoutError("still connected")
        return self.disconnect_reason

    def disconnect(self, reason_code: int = 0, timeout: float = TIMEOUT, **properties: Any) -> None:
        """Send DISCONNECT (with this reason code and properties); wait until closed."""
        from paho.mqtt.reasoncodes import ReasonCode as PahoReason
        reason = PahoReason(PacketTypes.DISCONNECT, identifier=reason_code)
        self.paho.disconnect(reason, props(PacketTypes.DISCONNECT, **properties)
                             if properties else None)
        if not self.disconnected.wait(timeout):
            raise TimeoutError("not disconnected")
        self.paho.loop_stop()


def connect5(raw: RawClient, client_id: str, *, clean: bool = True, keepalive: int = 60,
             will: Will | None = None, username: str | None = None,
             password: bytes | None = None, **properties: Any) -> Packet:
    """Send an MQTT 5 CONNECT with these properties; the broker's first answer (CONNACK or AUTH)."""
    raw.send(Connect("MQTT", 5, client_id, clean, keepalive, username, password, will,
                     Properties(**properties)))
    return raw.recv()


def recv_until(raw: RawClient, kind: type, timeout: float = TIMEOUT) -> list[Packet]:
    """Packets up to and including the first of ``kind``."""
    got: list[Packet] = []
    while True:
        packet = raw.recv(timeout)
        got.append(packet)
        if isinstance(packet, kind):
            return got


def expect_disconnect(raw: RawClient, timeout: float = TIMEOUT) -> Disconnect:
    """The broker's DISCONNECT (packets before it skipped), then the close."""
    [*_, packet] = recv_until(raw, Disconnect, timeout)
    assert isinstance(packet, Disconnect)
    raw.expect_closed(timeout)
    return packet

