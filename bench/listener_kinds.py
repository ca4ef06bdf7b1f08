"""Benchmark: QoS 0 throughput through each listener kind (tcp, tls, ws, wss), one publisher to one subscriber.

Run with ``python -m bench.listener_kinds`` from the project root
(``--messages N``, ``--payload BYTES``). It makes a throwaway CA with the
openssl CLI, starts ``actorbroker serve`` in a subprocess with one listener
of each kind on 127.0.0.1, and for each kind connects a subscriber and a
publisher (asyncio on uvloop in this process; websockets' sans-IO client for
ws/wss). The publisher writes its PUBLISHes 100 to a write (one frame on
ws/wss); the figure is messages per second from the first write to the
last message at the subscriber. Prints figures, asserts nothing; every wait
is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration" / "listeners"))

import uvloop
from pki import authority
from websockets.client import ClientProtocol
from websockets.frames import Frame
from websockets.http11 import Response
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from actorbroker.codec import Connect, Decoder, Publish, Subscribe, Subscription, encode

KINDS = ("tcp", "tls", "ws", "wss")
WAIT = 60.0
BATCH = 100


class Stream:
    """MQTT bytes over TCP or TLS, framed as WebSocket binary messages for ws/wss."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 ws: ClientProtocol | None) -> None:
        self.reader, self.writer, self.ws = reader, writer, ws
        self.decoder = Decoder(4)

    @classmethod
    async def open(cls, kind: str, port: int, ca: str) -> Stream:
        context = ssl.create_default_context(cafile=ca) if kind in ("tls", "wss") else None
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=context, server_hostname="localhost" if context else None,
            limit=1 << 20)
        ws = None
        if kind in ("ws", "wss"):
            ws = ClientProtocol(parse_uri(f"{kind}://localhost:{port}/mqtt"),
                                subprotocols=[Subprotocol("mqtt")], max_size=None)
        stream = cls(reader, writer, ws)
        if ws is not None:
            ws.send_request(ws.connect())
            stream._flush()
            while not any(isinstance(e, Response) for e in await stream._events()):
                pass
        return stream

    def _flush(self) -> None:
        assert self.ws is not None
        for chunk in self.ws.data_to_send():
            self.writer.write(chunk)

    async def _events(self) -> list[Any]:
        assert self.ws is not None
        data = await asyncio.wait_for(self.reader.read(1 << 20), WAIT)
        if not data:
            raise EOFError("the broker closed the connection")
        self.ws.receive_data(data)
        return list(self.ws.events_received())

    def write(self, data: bytes) -> None:
        if self.ws is None:
            self.writer.write(data)
        else:
            self.ws.send_binary(data)
            self._flush()

    async def read_packets(self) -> list[Any]:
        if self.ws is None:
            data = await asyncio.wait_for(self.reader.read(1 << 20), WAIT)
            if not data:
                raise EOFError("the broker closed the connection")
            return self.decoder.feed(data)
        packets: list[Any] = []
        for event in await self._events():
            if isinstance(event, Frame):
                packets.extend(self.decoder.feed(event.data))
        return packets

    async def connect(self, client_id: str) -> None:
        self.write(encode(Connect("MQTT", 4, client_id, True, 0), 4))
        while not await self.read_packets():
            pass

    def close(self) -> None:
        self.writer.close()


async def one_kind(kind: str, port: int, ca: str, messages: int, payload: int) -> float:
    sub = await Stream.open(kind, port, ca)
    await sub.connect(f"sub-{kind}")
    sub.write(encode(Subscribe(1, (Subscription("bench/t", 0),)), 4))
    while not await sub.read_packets():  # the SUBACK
        pass
    pub = await Stream.open(kind, port, ca)
    await pub.connect(f"pub-{kind}")
    batch = encode(Publish("bench/t", b"x" * payload), 4) * BATCH
    started = time.perf_counter()

    async def publish() -> None:
        for _ in range(messages // BATCH):
            pub.write(batch)
            await pub.writer.drain()

    sender = asyncio.ensure_future(publish())
    got = 0
    deadline = time.monotonic() + WAIT
    while got < messages and time.monotonic() < deadline:
        got += len(await sub.read_packets())
    elapsed = time.perf_counter() - started
    await sender
    sub.close()
    pub.close()
    return got / elapsed


def config_text(ports: dict[str, int], pki: Any) -> str:
    lines = ["[sys]", "interval = 0", "[storage]", 'durability = "memory"']
    for kind, port in ports.items():
        lines += ["[[listeners]]", f'type = "{kind}"', f"port = {port}"]
        if kind in ("tls", "wss"):
            lines += [f'certfile = "{pki.server.cert}"', f'keyfile = "{pki.server.key}"']
    return "\n".join(lines) + "\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--payload", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pki = authority(Path(tmp) / "pki")
        ports = {kind: free_port() for kind in KINDS}
        config = Path(tmp) / "bench.toml"
        config.write_text(config_text(ports, pki))
        broker = subprocess.Popen([sys.executable, "-m", "actorbroker.cli", "serve", "--config",
                                   str(config), "--log-level", "warning"],
                                  env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
        try:
            rates = uvloop.run(run_all(ports, pki.ca, args.messages, args.payload))
        finally:
            broker.terminate()
            broker.wait(20)
    tcp = rates["tcp"]
    print(f"QoS 0, {args.messages} messages of {args.payload} bytes, one publisher to one "
          f"subscriber, {BATCH} PUBLISHes a write:")
    for kind, rate in rates.items():
        print(f"  {kind:4} {rate:10,.0f} msg/s  ({rate / tcp:.2f} x tcp)")
    return 0


async def run_all(ports: dict[str, int], ca: str, messages: int, payload: int
                  ) -> dict[str, float]:
    deadline = time.monotonic() + WAIT
    while True:  # the broker is up once its last listener takes connections
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", ports["wss"])
            writer.close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)
    return {kind: await one_kind(kind, ports[kind], ca, messages, payload) for kind in KINDS}


if __name__ == "__main__":
    sys.exit(main())
