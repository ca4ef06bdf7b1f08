"""Load generator self-test peer: a trivial MQTT server on uvloop. Imports asyncio, uvloop, the stdlib, actorbroker.codec and bench.mqttload.

It is not a broker: it answers CONNECT and SUBSCRIBE, and then, per mode,

* ``discard``: drops everything else unread (the publishers' ceiling);
* ``ack``: decodes with ``actorbroker.codec.Decoder`` and answers every QoS 1
  PUBLISH with a PUBACK, one write per read;
* ``source``: streams ``count`` pre-encoded QoS 0 PUBLISHes (payload size
  ``payload``, publisher id 0, sequence 0..count-1, stamped at write time)
  to each subscriber as fast as the socket drains (the subscribers' ceiling).

:func:`serve_in_process` starts it in a spawned process and returns the port.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
from time import monotonic_ns
from typing import Any

from actorbroker.codec import Connect, Decoder, ProtocolError, Publish, Subscribe

from .wire import Batcher, publish_template

__all__ = ["serve_in_process"]

_CONNACK = b"\x20\x02\x00\x00"


_WAITING: list[_Peer] = []     # subscribers to stream to once the run starts


class _Peer(asyncio.Protocol):
    def __init__(self, mode: str, count: int, payload: int) -> None:
        self.mode = mode
        self.count = count
        self.payload = payload
        self.transport: Any = None
        self.decoder = Decoder()          # server side: first packet must be CONNECT
        self.streaming = False
        self.paused = False
        self.sent = 0
        self.batcher = Batcher(0, [publish_template("bench/selftest", payload, 0)])

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.mode == "discard" and self.decoder.protocol_level is not None:
            return
        try:
            packets = self.decoder.feed(data)
        except ProtocolError:
            self.transport.close()
            return
        out = []
        for p in packets:
            if isinstance(p, Connect):
                out.append(_CONNACK)
            elif isinstance(p, Subscribe):
                out.append(b"\x90\x03" + p.packet_id.to_bytes(2, "big") + b"\x00")
                if self.mode == "source":
                    _WAITING.append(self)
            elif isinstance(p, Publish) and p.qos and p.packet_id is not None:
                out.append(b"\x40\x02" + p.packet_id.to_bytes(2, "big"))
        if out:
            self.transport.write(b"".join(out))

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.streaming:
            asyncio.get_running_loop().call_soon(self.stream)

    def start(self) -> None:
        self.streaming = True
        self.stream()

    def stream(self) -> None:
        batch = max(4, 16384 // (self.payload + 20))
        while self.streaming and not self.paused and self.sent < self.count:
            n = min(batch, self.count - self.sent)
            self.transport.write(self.batcher.build(self.sent, n, monotonic_ns()))
            self.sent += n
        if self.sent >= self.count:
            self.streaming = False

    def connection_lost(self, exc: Exception | None) -> None:
        self.streaming = False


def _main(mode: str, count: int, payload: int, port_out: Any, go: Any, stop: Any) -> None:
    import uvloop

    async def run() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Peer(mode, count, payload), "127.0.0.1", 0,
                                          backlog=1024)
        port_out.value = server.sockets[0].getsockname()[1]
        if mode == "source":
            await asyncio.to_thread(go.wait, 600)
            for peer in _WAITING:
                loop.call_soon(peer.start)
        await asyncio.to_thread(stop.wait, 600)
        server.close()

    uvloop.run(run())


def serve_in_process(mode: str, count: int = 0,
                     payload: int = 16) -> tuple[int, Any, Any, Any]:
    """Start the peer in a spawned process; return (port, process, go event, stop event).

    In ``source`` mode streaming begins when ``go`` is set (at the start barrier).
    """
    ctx = mp.get_context("spawn")
    port = ctx.Value("i", 0)
    go, stop = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_main, args=(mode, count, payload, port, go, stop), daemon=True,
                       name=f"mqttload-sink-{mode}")
    proc.start()
    for _ in range(300):
        if port.value:
            return int(port.value), proc, go, stop
        proc.join(0.05)
        if proc.exitcode is not None:
            break
    proc.kill()
    raise RuntimeError("self-test peer did not start")
