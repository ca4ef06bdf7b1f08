"""A raw MQTT-over-WebSocket client for the tests: websockets' sans-IO ClientProtocol over a blocking socket.

It does what paho hides: choose how MQTT bytes are cut into frames
(fragments, several packets in one frame), how the frames' bytes are cut
into TCP writes, send pings, text frames and Close, and see each frame the
broker sent. Packets are encoded and decoded with the project's codec.
"""

from __future__ import annotations

import itertools
import socket
import ssl
from collections.abc import Sequence

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from actorbroker.codec import Decoder, Packet, encode

TIMEOUT = 5.0


class WsClient:
    """One WebSocket connection; ``response`` is the broker's answer to the upgrade."""

    def __init__(self, port: int, path: str = "/mqtt", *,
                 subprotocols: Sequence[str] | None = ("mqtt",),
                 context: ssl.SSLContext | None = None, level: int = 4) -> None:
        scheme = "wss" if context is not None else "ws"
        self.sock: socket.socket = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        if context is not None:
            self.sock = context.wrap_socket(self.sock, server_hostname="localhost")
        self.level = level
        self.ws = ClientProtocol(
            parse_uri(f"{scheme}://localhost:{port}{path}"),
            subprotocols=None if subprotocols is None else [Subprotocol(s) for s in subprotocols],
            max_size=None)
        self.ws.send_request(self.ws.connect())
        self.flush()
        self.decoder = Decoder(level)
        self.frames: list[Frame] = []
        self.closed = False  # the broker closed the TCP connection
        self.response: Response | None = None
        while self.response is None and not self.closed:
            self._read()

    @property
    def open(self) -> bool:
        return self.response is not None and self.response.status_code == 101

    # -- sending --------------------------------------------------------------

    def flush(self, chunk: int = 0) -> None:
        """Write what the protocol queued, ``chunk`` bytes per sendall (0: all at once)."""
        data = b"".join(self.ws.data_to_send())
        step = chunk or max(len(data), 1)
        for start in range(0, len(data), step):
            self.sock.sendall(data[start:start + step])

    def send(self, *packets: Packet, cuts: Sequence[int] = (), chunk: int = 0) -> None:
        """``packets`` encoded and joined, as one message cut into fragments at ``cuts``."""
        data = b"".join(encode(p, self.level) for p in packets)
        edges = [0, *cuts, len(data)]
        pieces = [data[a:b] for a, b in itertools.pairwise(edges)]
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            if index == 0:
                self.ws.send_binary(piece, fin=last)
            else:
                self.ws.send_continuation(piece, fin=last)
        self.flush(chunk)

    # -- receiving ------------------------------------------------------------

    def _read(self) -> None:
        try:
            data = self.sock.recv(65536)
        except (ConnectionError, ssl.SSLError):
            data = b""
        if not data:
            self.closed = True
            self.ws.receive_eof()
        else:
            self.ws.receive_data(data)
        for event in self.ws.events_received():
            if isinstance(event, Response):
                self.response = event
            else:
                self.frames.append(event)
        self.flush()  # pongs, the answer to a Close

    def recv_frame(self) -> Frame:
        """The next frame from the broker (EOFError once it closed)."""
        while not self.frames:
            if self.closed:
                raise EOFError("the broker closed the connection")
            self._read()
        return self.frames.pop(0)

    def recv_packets(self, count: int) -> list[Packet]:
        """The next ``count`` MQTT packets, from as many binary frames as it takes."""
        packets: list[Packet] = []
        while len(packets) < count:
            frame = self.recv_frame()
            assert frame.opcode in (Opcode.BINARY, Opcode.CONT), frame
            packets.extend(self.decoder.feed(frame.data))
        return packets

    def until_closed(self) -> list[Frame]:
        """Every frame until the broker closes the TCP connection."""
        frames = []
        while True:
            try:
                frames.append(self.recv_frame())
            except EOFError:
                return frames

    def close(self) -> None:
        self.sock.close()
