"""A broker process with few file descriptors, for test_transport_emfile.py.

    python emfile_broker.py NOFILE

Lowers RLIMIT_NOFILE (soft) to NOFILE, starts a listener on 127.0.0.1
port 0 with the test gateway, prints the port on stdout and serves until
killed. A PUBLISH to topic "stats" is answered with a PUBLISH on "stats"
whose payload is the transport counters as JSON. Logs go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from transport_testkit import RecordingPort, TestGateway  # noqa: E402

from actorbroker.codec import ConnAck, Connect, Publish  # noqa: E402
from actorbroker.config import LimitsConfig, ListenerConfig  # noqa: E402
from actorbroker.ports import Inbound  # noqa: E402
from actorbroker.transport import MqttConnection, TransportStats, run, start_listener  # noqa: E402

STATS = TransportStats()


class StatsPort(RecordingPort):
    def _process(self, message: Any) -> None:
        if isinstance(message, Inbound):
            for packet in message.packets:
                if isinstance(packet, Publish) and packet.topic == "stats":
                    self.conn.send([Publish("stats", json.dumps(STATS.snapshot()).encode())])
        super()._process(message)


class StatsGateway(TestGateway):
    def connect(self, conn: MqttConnection, packet: Connect) -> RecordingPort | None:
        conn.send([ConnAck(False, 0)])
        return StatsPort(conn)


async def main() -> None:
    listener = await start_listener(ListenerConfig(bind="127.0.0.1", port=0), LimitsConfig(),
                                    StatsGateway(), STATS)
    print(listener.port, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    limit = int(sys.argv[1])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    run(main())
