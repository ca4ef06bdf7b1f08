"""Crash checker: what every client thread shares: the socket, CONNECT, the ways to leave, reconnects, the session check.

A client is a thread on a blocking socket with the project's codec. It
connects, works (its subclass's :meth:`Client.step`), leaves on its own
after a drawn spell in a drawn way (:data:`.scenario.ENDS`), stays away a
drawn while and comes back, with Clean Start now and then; when the broker
goes away it reconnects at once. Its pauses are its behaviour, not waits
for the broker. In the final phase (:attr:`Client.final` set) it stays
connected and only reconnects.

Session check ("every session the broker says is present really is"): each
CONNACK's Session Present is compared with what the client knows: a session
the broker confirmed and no Clean Start discarded must be present; one
present without any earlier persistent CONNECT is a phantom.

A Clean Start whose CONNACK never came (the broker went away first) is sent
again on the next connection, whatever the draw: sending it discarded the
client's session state ([MQTT-3.1.2-4]), and the broker may have stored the
new session it began before its CONNACK was lost (a session exists "even if
the rest of the Session State is empty", section 4.1). A client without
session state must not take up a session the broker says is present; it
starts a new one with Clean Start ([MQTT-3.2.2-4]; MQTT 3.1.1 section
3.2.2.2 gives the same way out). Resuming with Clean Start 0 would pick up
that empty session as if it were the old one, its subscriptions gone:
seed 2066932213 with power loss failed so when the broker was stopped
between storing a Clean Start and sending its CONNACK (test_clean_start.py).
"""

from __future__ import annotations

import socket
import struct
import threading
import time

from actorbroker.codec import (ConnAck, Connect, Decoder, Disconnect, Packet, PingReq,
                               Properties, Will, encode)

from .scenario import ClientSpec, client_rng

RETRY = 0.02  # seconds between attempts while the broker is down
HARD_LIMIT = 180.0  # no client thread outlives this, whatever happens
LEAVE_LIMIT = 4.0  # seconds a leaving client waits for the broker to close


class Connection:
    """One TCP connection speaking MQTT at ``level``."""

    def __init__(self, port: int, level: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=2.0)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.level = level
        self.decoder = Decoder(level)
        self.packets: list[Packet] = []
        self.last_sent = time.monotonic()

    def send(self, *packets: Packet) -> None:
        self.sock.sendall(b"".join(encode(p, self.level) for p in packets))
        self.last_sent = time.monotonic()

    def recv(self, timeout: float) -> Packet | None:
        """The next packet, None after ``timeout`` s; EOFError when the broker closed."""
        if not self.packets:
            self.sock.settimeout(max(timeout, 0.0005))
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                return None
            if not data:
                raise EOFError("closed by the broker")
            self.packets.extend(self.decoder.feed(data))
        return self.packets.pop(0) if self.packets else None

    def drain_until_closed(self, limit: float) -> None:
        """Read (and throw away) until the broker closes, at most ``limit`` s."""
        deadline = time.monotonic() + limit
        try:
            while time.monotonic() < deadline:
                self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
                if not self.sock.recv(1 << 16):
                    return
        except OSError:
            return

    def leave(self, style: str, owed: tuple[Packet, ...], keepalive: int) -> None:
        """End the connection as ``style`` says, the packets ``owed`` first (one write)."""
        try:
            if style in ("disconnect", "half_close"):
                self.send(*owed, Disconnect())
                if style == "half_close":
                    self.sock.shutdown(socket.SHUT_WR)
                    self.drain_until_closed(LEAVE_LIMIT)
            elif style == "rst":
                if owed:
                    self.send(*owed)
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:  # silence: nothing more from us until the keep alive runs out
                if owed:
                    self.send(*owed)
                self.drain_until_closed(1.5 * keepalive + LEAVE_LIMIT)
        except OSError:
            pass
        finally:
            self.sock.close()


class Client(threading.Thread):
    """Connect, work, leave, come back (see the module doc). Subclasses: :meth:`new_session`,
    :meth:`connected`, :meth:`step`, :meth:`owed`, :meth:`lost`."""

    def __init__(self, spec: ClientSpec, seed: int, port: int) -> None:
        super().__init__(name=spec.cid, daemon=True)
        self.spec = spec
        self.port = port
        self.rng = client_rng(seed, spec.cid)
        self.final = threading.Event()  # stay connected from now on
        self.stopping = threading.Event()
        self.violations: list[str] = []
        self.errors: list[str] = []
        self.connects = 0  # CONNACKs accepted
        self._attempts = 0  # CONNECTs sent: numbers each connection's Will payload
        self.left_at: list[float] = []  # when it ended a connection on its own
        self.left = threading.Condition()
        self._maybe_session = False  # a persistent CONNECT went out: the broker may hold one
        self._sure_session = False  # a CONNACK confirmed one, no Clean Start since
        self._clean_pending = False  # a Clean Start went out, its CONNACK has not come

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> None:
        deadline = time.monotonic() + HARD_LIMIT
        first = True
        while not self.stopping.is_set() and time.monotonic() < deadline:
            clean = self._comeback_clean(first)
            first = False
            away = RETRY
            try:
                if clean and self.spec.level == 4:
                    self._discard_session()
                    clean = False
                if self._session(clean):
                    away = self.rng.uniform(*self.spec.offline)
            except (OSError, EOFError):
                pass
            except Exception as exc:  # a bug of the checker: report it, do not spin
                self.errors.append(f"{self.name}: {exc!r}")
                return
            finally:
                self.lost()
            self.final.wait(away)  # the final phase cuts an absence short

    def _comeback_clean(self, first: bool) -> bool:
        """Whether the next CONNECT uses Clean Start: drawn for a comeback before the final
        phase, and always while a Clean Start awaits its CONNACK (see the module doc)."""
        if self._clean_pending:
            return True
        return not first and not self.final.is_set() and self.rng.random() < self.spec.clean_p

    def _connect(self, clean: bool) -> tuple[Connection, ConnAck]:
        spec = self.spec
        conn = Connection(self.port, spec.level)
        props = Properties()
        if spec.level == 5:
            props = Properties(session_expiry_interval=spec.expiry,
                               receive_maximum=getattr(spec, "receive_maximum", None))
        will = None
        self._attempts += 1
        if spec.will_qos:  # unique per connection: a Will published twice is a duplicate
            will = Will(f"will/{spec.cid}", f"will|{spec.cid}|{self._attempts}".encode(),
                        spec.will_qos)
        if clean:
            self._sure_session = False
            self._clean_pending = True
        if not (clean and spec.level == 4):
            self._maybe_session = True
        conn.send(Connect("MQTT", spec.level, spec.cid, clean, spec.keepalive, will=will,
                          properties=props))
        connack = conn.recv(5.0)
        if not isinstance(connack, ConnAck) or connack.reason_code != 0:
            conn.sock.close()
            raise OSError(f"not accepted: {connack}")
        self.connects += 1
        self._clean_pending = False
        self._check_session(clean, connack.session_present)
        if not connack.session_present:
            self.new_session()
        return conn, connack

    def _check_session(self, clean: bool, present: bool) -> None:
        if present and clean:
            self.violations.append(f"{self.name}: Session Present after Clean Start "
                                   "[MQTT-3.2.2-1]")
        elif present and not self._maybe_session:
            self.violations.append(f"{self.name}: Session Present, but it never had one")
        elif not present and not clean and self._sure_session:
            self.violations.append(f"{self.name}: session lost: CONNACK without Session "
                                   "Present, though the broker had confirmed the session "
                                   "and no Clean Start discarded it")
        self._sure_session = not (clean and self.spec.level == 4)

    def _discard_session(self) -> None:
        """MQTT 3.1.1 has no Clean Start with a kept session: connect with Clean Session 1
        (the old session ends) and leave, so that the next connection starts a new one."""
        conn, _ = self._connect(clean=True)
        conn.leave("disconnect", (), self.spec.keepalive)

    def _session(self, clean: bool) -> bool:
        """One connection; True if it ended because the client left on its own."""
        conn, connack = self._connect(clean)
        self.connected(conn, connack.session_present)
        until = time.monotonic() + self.rng.uniform(*self.spec.spell)
        while not self.stopping.is_set():
            now = time.monotonic()
            if now >= until and not self.final.is_set():
                style = self.rng.choice(self.spec.ends)
                conn.leave(style, self.owed(), self.spec.keepalive)
                with self.left:
                    self.left_at.append(time.monotonic())
                    self.left.notify_all()
                return True
            if self.spec.keepalive and now - conn.last_sent > self.spec.keepalive / 2:
                conn.send(PingReq())
            self.step(conn)
        conn.leave("disconnect", (), self.spec.keepalive)
        return False

    def wait_left(self, after: float, timeout: float) -> bool:
        """Wait until the client ends a connection on its own after ``after`` (monotonic)."""
        with self.left:
            return self.left.wait_for(lambda: any(t > after for t in self.left_at), timeout)

    # -- for subclasses ------------------------------------------------------------------

    def new_session(self) -> None:
        """The broker holds no session for it (CONNACK without Session Present)."""

    def connected(self, conn: Connection, present: bool) -> None:
        """After the CONNACK of a working connection (``present``: Session Present)."""

    def step(self, conn: Connection) -> None:
        """One step of work; blocks at most a few ms in ``conn.recv``."""

    def owed(self) -> tuple[Packet, ...]:
        """Acks to send with a voluntary leave (and forget)."""
        return ()

    def lost(self) -> None:
        """The connection is gone (whichever way)."""
