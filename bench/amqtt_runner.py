"""Benchmark harness: runs amqtt's broker for bench/brokers.py. Runs in bench/.venvs/amqtt; imports the stdlib and amqtt only.

``python amqtt_runner.py --port P`` listens on 127.0.0.1:P with anonymous
access and no other plugin (no packet or event logging, no $SYS), on
asyncio's default loop as amqtt ships, and stops on SIGTERM or SIGINT.
amqtt keeps its per-session queues unbounded, so it drops nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal


async def serve(port: int) -> None:
    from amqtt.broker import Broker

    config = {
        "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}",
                                  "max_connections": -1}},
        "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin":
                    {"allow_anonymous": True}},
    }
    broker = Broker(config)
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await broker.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
