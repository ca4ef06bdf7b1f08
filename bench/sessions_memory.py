"""Benchmark: RAM of offline persistent sessions and of their queued messages. Imports the stdlib, bench and actorbroker.codec.

    python -m bench.sessions_memory [--sessions 10000] [--messages 100] [--payload 100]

A real ``actorbroker serve`` (durability fsync, $SYS off). N clients each
connect with Clean Session 0, subscribe to ``mem/all`` at QoS 1 and
disconnect (their sessions hibernate: no actor, the log and the storage
actor's fold hold them); then M QoS 1 messages are published to
``mem/all``, so every session has M messages queued (N x M entries).
The broker's RSS (VmRSS) is read after each step, once it stops changing,
and again after a restart (SIGTERM, then a start that folds the log or
loads the snapshot), where no allocator history of the set-up remains:

* RAM per idle session = (RSS with N sessions - RSS of an empty broker) / N;
* RAM per queued message = (RSS with the messages - RSS before them) / (N x M).

Goal (issue 6): under 2 KiB per idle session, under 100 bytes per queued message.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from actorbroker.codec import Connect, Decoder, Disconnect, PubAck, Publish, SubAck
from actorbroker.codec import Subscribe, Subscription, encode
from bench.brokers import _mqtt_ready, _rss_tree, free_port

LEVEL = 4


async def _exchange(port: int, packets: list[object], until: type, count: int = 1) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"".join(encode(p, LEVEL) for p in packets))  # type: ignore[arg-type]
    decoder, seen = Decoder(LEVEL), 0
    while seen < count:
        data = await reader.read(65536)
        if not data:
            raise ConnectionError("closed")
        seen += sum(1 for p in decoder.feed(data) if isinstance(p, until))
    writer.write(encode(Disconnect(), LEVEL))
    await writer.drain()
    writer.close()


async def make_sessions(port: int, count: int, parallel: int = 64) -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(count):
        queue.put_nowait(n)

    async def worker() -> None:
        while not queue.empty():
            n = queue.get_nowait()
            await _exchange(port, [Connect("MQTT", LEVEL, f"mem-{n:06d}", False, 60),
                                   Subscribe(1, (Subscription("mem/all", 1),))], SubAck)
    await asyncio.gather(*(worker() for _ in range(parallel)))


async def publish(port: int, messages: int, payload: int) -> None:
    packets: list[object] = [Connect("MQTT", LEVEL, "mem-publisher", True, 60)]
    packets += [Publish("mem/all", bytes(payload), 1, False, False, n + 1) for n in range(messages)]
    await _exchange(port, packets, PubAck, messages)


def settled_rss(pid: int, quiet: float = 1.0, timeout: float = 60.0) -> int:
    """VmRSS once it has not changed by more than 0.5% for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    last, since = _rss_tree(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = _rss_tree(pid)
        if abs(now - last) > last * 0.005:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    return last


class Serve:
    def __init__(self, workdir: Path, port: int) -> None:
        conf = workdir / "actorbroker.toml"
        conf.write_text("[log]\nlevel = \"warning\"\n\n[sys]\ninterval = 0\n\n"
                        "[limits]\nmax_queued_messages = 0\n")
        exe = Path(sys.executable).parent / "actorbroker"
        self.log = (workdir / "broker.log").open("ab")
        self.proc = subprocess.Popen([str(exe), "serve", "--config", str(conf), "--port", str(port),
                                      "--data-dir", str(workdir / "data")],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        began = time.monotonic()
        while not _mqtt_ready(port):
            if self.proc.poll() is not None or time.monotonic() - began > 600:
                tail = (workdir / "broker.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the broker did not start:\n{tail}")
            time.sleep(0.1)
        self.start_seconds = time.monotonic() - began

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)
        self.log.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--payload", type=int, default=100)
    args = parser.parse_args(argv)
    n, m = args.sessions, args.messages
    with tempfile.TemporaryDirectory(prefix="bench-mem-") as tmp:
        work, port = Path(tmp), free_port()
        broker = Serve(work, port)
        empty = settled_rss(broker.proc.pid)
        began = time.monotonic()
        asyncio.run(make_sessions(port, n))
        made = time.monotonic() - began
        with_sessions = settled_rss(broker.proc.pid)
        began = time.monotonic()
        asyncio.run(publish(port, m, args.payload))
        published = time.monotonic() - began
        with_messages = settled_rss(broker.proc.pid)
        broker.stop()
        log_bytes = sum(p.stat().st_size for p in (work / "data" / "log").glob("*.log"))
        fresh = Serve(work, free_port())
        restarted = settled_rss(fresh.proc.pid)
        fresh.stop()
        (work / "data" / "snapshot.dill").unlink(missing_ok=True)
        replayed = Serve(work, free_port())
        replayed_rss = settled_rss(replayed.proc.pid)
        replayed.stop()
        kib = 1024.0
        print(f"{n} offline persistent sessions, {m} queued messages each ({n * m:,} entries, "
              f"{args.payload} B payloads); log {log_bytes / 2**20:.1f} MiB")
        print(f"  sessions made in {made:.1f} s, messages published (QoS 1, one client) in "
              f"{published:.1f} s")
        print(f"  RSS: empty broker {empty / 2**20:.1f} MiB, with the sessions "
              f"{with_sessions / 2**20:.1f} MiB, with the messages {with_messages / 2**20:.1f} MiB")
        print(f"  live:      {(with_sessions - empty) / n / kib:.2f} KiB per idle session, "
              f"{(with_messages - with_sessions) / (n * m):.1f} B per queued message")
        print(f"  restarted (snapshot, {fresh.start_seconds:.1f} s to listen): RSS "
              f"{restarted / 2**20:.1f} MiB = {(restarted - empty) / n / kib:.2f} KiB per session "
              f"with its {m} messages, {(restarted - empty) / (n * m):.1f} B per queued message "
              f"if sessions cost nothing")
        print(f"  restarted (log replay, {replayed.start_seconds:.1f} s to listen): RSS "
              f"{replayed_rss / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
