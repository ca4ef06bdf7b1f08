"""Real MQTT clients for broker tests, synchronised on events (never on sleeps).

* :class:`Client` wraps a paho-mqtt 2.x client (MQTT 3.1 or 3.1.1) running
  its network loop in a thread: ``connect``/``subscribe``/``publish``/
  ``disconnect`` return once the broker answered; received messages queue
  up and :meth:`Client.expect` waits for the next one with a timeout.
* :class:`RawClient` speaks MQTT over a plain socket with the project's
  codec, for what paho hides or refuses to do: exact CONNACK return codes,
  DUP flags and packet ids, not acknowledging, sending broken bytes.
* :func:`mosquitto_sub`/:func:`mosquitto_pub` run Debian's command line
  clients as subprocesses; :class:`Serve` runs ``actorbroker serve``.

Absence of a message is checked with a marker instead of a pause: publish
a marker after the event under test on the same topic (one topic actor
keeps order) and expect the marker to be the next message.
"""

from __future__ import annotations

import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import paho.mqtt.client as mqtt

from actorbroker.codec import ConnAck, Connect, Decoder, Disconnect, Packet, Will, encode
from actorbroker import testing
from actorbroker.config import Config

TIMEOUT = 5.0
PROTOCOLS = {3: mqtt.MQTTv31, 4: mqtt.MQTTv311}


def broker_config(tmp_path: Any, **options: Any) -> Config:
    """One listener on 127.0.0.1 port 0, node "test", the commit log in ``tmp_path/data``;
    ``options`` change any option by its name (:func:`actorbroker.testing.broker_config`)."""
    return testing.broker_config(**{"name": "test", "data_dir": str(tmp_path / "data"),
                                    **options})


@dataclass(frozen=True)
class Message:
    """A message as a subscriber received it."""

    topic: str
    payload: bytes
    qos: int
    retain: bool
    dup: bool = False


@dataclass(frozen=True)
class Connected:
    """The broker's CONNACK as paho reported it."""

    rc: int  # 0 accepted; paho's reason code value otherwise
    session_present: bool


M = TypeVar("M")
C = TypeVar("C")


class PahoClient(Generic[M, C]):
    """What every paho wrapper here shares: callbacks wired, SUBACK/UNSUBACK waits,
    received messages, and the two ways to end (see Client and broker5's Client5)."""

    def _wire(self, paho: mqtt.Client) -> None:
        self.paho = paho
        self.messages: queue.Queue[M] = queue.Queue()
        self._connack: queue.Queue[C] = queue.Queue()
        self._acks: dict[int, list[int]] = {}
        self._acked = threading.Condition()
        self.disconnected = threading.Event()
        paho.on_connect = self._on_connect
        paho.on_message = self._on_message
        paho.on_subscribe = self._on_ack
        paho.on_unsubscribe = self._on_ack
        paho.on_disconnect = self._on_disconnect

    if TYPE_CHECKING:  # each wrapper builds its own CONNACK and message views
        def _on_connect(self, _c: Any, _u: Any, flags: Any, reason: Any, _p: Any) -> None: ...

        def _on_message(self, _c: Any, _u: Any, msg: mqtt.MQTTMessage) -> None: ...

    def _on_disconnect(self, *_args: Any) -> None:
        self.disconnected.set()

    def _on_ack(self, _c: Any, _u: Any, mid: int, reasons: Any, _p: Any) -> None:
        with self._acked:
            self._acks[mid] = [int(r.value) for r in reasons]
            self._acked.notify_all()

    def _wait_ack(self, mid: int, timeout: float) -> list[int]:
        with self._acked:
            if not self._acked.wait_for(lambda: mid in self._acks, timeout):
                raise TimeoutError(f"no SUBACK/UNSUBACK for mid {mid}")
            return self._acks.pop(mid)

    def expect(self, timeout: float = TIMEOUT) -> M:
        """The next message received (TimeoutError if none comes)."""
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no message received") from None

    def expect_many(self, count: int, timeout: float = TIMEOUT) -> list[M]:
        return [self.expect(timeout) for _ in range(count)]

    def drop(self) -> None:
        """Close the socket without DISCONNECT (an abnormal close: the Will fires)."""
        sock = self.paho.socket()
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
        self.disconnected.wait(TIMEOUT)
        self.paho.loop_stop()

    def close(self) -> None:
        """Best-effort cleanup for fixtures."""
        try:
            if not self.disconnected.is_set() and self.paho.is_connected():
                self.paho.disconnect()
                self.disconnected.wait(TIMEOUT)
        finally:
            self.paho.loop_stop()


class Client(PahoClient["Message", "Connected"]):
    """A paho client with blocking, event-synchronised calls (see the module doc)."""

    def __init__(self, host: str, port: int, client_id: str = "", *, level: int = 4,
                 clean: bool = True, keepalive: int = 60,
                 will: tuple[str, bytes, int, bool] | None = None,
                 transport: str = "tcp") -> None:
        self.host, self.port, self.keepalive = host, port, keepalive
        self.client_id = client_id
        self._wire(mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                               clean_session=clean, protocol=PROTOCOLS[level],
                               reconnect_on_failure=False, transport=transport))
        if will is not None:
            topic, payload, qos, retain = will
            self.paho.will_set(topic, payload, qos, retain)

    # -- paho callbacks (paho's thread) ------------------------------------------

    def _on_connect(self, _c: Any, _u: Any, flags: Any, reason: Any, _p: Any) -> None:
        self._connack.put(Connected(int(reason.value), bool(flags.session_present)))

    def _on_message(self, _c: Any, _u: Any, msg: mqtt.MQTTMessage) -> None:
        self.messages.put(Message(msg.topic, msg.payload, msg.qos, bool(msg.retain),
                                  bool(msg.dup)))

    # -- calls -------------------------------------------------------------------

    def connect(self, timeout: float = TIMEOUT) -> Connected:
        """Connect and wait for the CONNACK (a refusal is returned, not raised)."""
        self.paho.connect(self.host, self.port, keepalive=self.keepalive)
        self.paho.loop_start()
        return self._connack.get(timeout=timeout)

    def subscribe(self, topic: str, qos: int = 0, timeout: float = TIMEOUT) -> list[int]:
        """Subscribe and wait for the SUBACK; its codes (granted QoS or 0x80)."""
        rc, mid = self.paho.subscribe(topic, qos)
        assert rc == mqtt.MQTT_ERR_SUCCESS, rc
        return self._wait_ack(mid, timeout)

    def subscribe_many(self, pairs: list[tuple[str, int]], timeout: float = TIMEOUT) -> list[int]:
        """One SUBSCRIBE with several filters."""
        rc, mid = self.paho.subscribe(pairs)
        assert rc == mqtt.MQTT_ERR_SUCCESS, rc
        return self._wait_ack(mid, timeout)

    def unsubscribe(self, topic: str, timeout: float = TIMEOUT) -> None:
        rc, mid = self.paho.unsubscribe(topic)
        assert rc == mqtt.MQTT_ERR_SUCCESS, rc
        self._wait_ack(mid, timeout)

    def publish(self, topic: str, payload: bytes = b"", qos: int = 0, retain: bool = False,
                timeout: float = TIMEOUT) -> None:
        """Publish and wait until the flow is complete (QoS 0: written to the socket)."""
        info = self.paho.publish(topic, payload, qos, retain)
        info.wait_for_publish(timeout)
        if not info.is_published():
            raise TimeoutError(f"publish to {topic!r} at QoS {qos} not completed")

    def disconnect(self, timeout: float = TIMEOUT) -> None:
        """Send DISCONNECT and wait until the connection is closed."""
        self.paho.disconnect()
        if not self.disconnected.wait(timeout):
            raise TimeoutError("not disconnected")
        self.paho.loop_stop()


class RawClient:
    """MQTT over a plain blocking socket, encoded and decoded by the project's codec."""

    def __init__(self, host: str, port: int, level: int = 4, timeout: float = TIMEOUT) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.level = level
        self.timeout = timeout
        self.decoder = Decoder(level if level in (3, 4, 5) else 4)
        self._packets: list[Packet] = []

    def send(self, *packets: Packet) -> None:
        self.sock.sendall(b"".join(encode(p, self.level) for p in packets))

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def connect(self, client_id: str, *, clean: bool = True, keepalive: int = 60,
                will: Will | None = None) -> ConnAck:
        """Send CONNECT, return the CONNACK."""
        name = "MQIsdp" if self.level == 3 else "MQTT"
        self.send(Connect(name, self.level, client_id, clean, keepalive, will=will))
        packet = self.recv()
        assert isinstance(packet, ConnAck), packet
        return packet

    def recv(self, timeout: float | None = None) -> Packet:
        """The next packet from the broker (TimeoutError; EOFError if the broker closed)."""
        self.sock.settimeout(timeout or self.timeout)
        while not self._packets:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError("no packet from the broker") from None
            if not data:
                raise EOFError("the broker closed the connection")
            self._packets.extend(self.decoder.feed(data))
        return self._packets.pop(0)

    def expect_closed(self, timeout: float | None = None) -> None:
        """Wait until the broker closes the connection (packets before it are discarded)."""
        while True:
            try:
                self.recv(timeout)
            except EOFError:
                return
            except ConnectionResetError:
                return

    def disconnect(self) -> None:
        self.send(Disconnect())
        self.expect_closed()
        self.close()

    def close(self) -> None:
        self.sock.close()


def mosquitto_sub(host: str, port: int, *args: str) -> subprocess.Popen[str]:
    """Start ``mosquitto_sub`` (``-v``: lines are 'topic payload')."""
    return subprocess.Popen(["mosquitto_sub", "-h", host, "-p", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def mosquitto_pub(host: str, port: int, *args: str, timeout: float = 10.0
                  ) -> subprocess.CompletedProcess[str]:
    """Run ``mosquitto_pub`` to completion."""
    return subprocess.run(["mosquitto_pub", "-h", host, "-p", str(port), *args],
                          capture_output=True, text=True, timeout=timeout, check=False)


def client_factory(cls: Any, broker: Any) -> Iterator[Callable[..., Any]]:
    """Body of the ``client``/``client5`` fixtures: ``make(client_id, connect=True,
    target=None, **options)`` builds ``cls`` for ``broker`` (or ``target``),
    connects it unless told not to, and closes every client made afterwards."""
    made: list[Any] = []

    def make(client_id: str = "", *, connect: bool = True, target: Any = None,
             **options: Any) -> Any:
        where = target or broker
        c = cls(where.host, where.port, client_id, **options)
        made.append(c)
        if connect:
            result = c.connect()
            assert result.rc == 0, f"{client_id!r} refused: {result}"
        return c

    yield make
    for c in made:
        c.close()


class Serve:
    """``actorbroker serve ARGS`` in a subprocess run in ``cwd``; its log lines read by a thread."""

    SCRIPT = Path(sys.executable).with_name("actorbroker")

    def __init__(self, cwd: Path, *args: str) -> None:
        self.proc = subprocess.Popen([str(self.SCRIPT), "serve", *args], cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        """The first new log line matching ``pattern`` (AssertionError at EOF or timeout)."""
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no log line like {pattern!r}; log: {self.log}") from None
            if line is None:
                raise AssertionError(f"exited before {pattern!r}; log: {self.log}")
            self.log.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 20.0) -> int:
        self.proc.send_signal(sig)
        return self.finish(timeout)

    def finish(self, timeout: float = 20.0) -> int:
        """Wait for the exit; every log line is in ``log`` afterwards. The exit status."""
        status = self.proc.wait(timeout)
        while (line := self.lines.get(timeout=5)) is not None:
            self.log.append(line)
        return status
