"""Benchmark: the session core's delivery path for MQTT 3.1.1 and MQTT 5 clients.

``python -m bench.mqtt5`` (``--messages N``). Pure ``actorbroker.session``,
no actors or sockets: it measures ``SessionCore.deliver`` (what a session
actor does per message a topic actor hands it) for a 3.1.1 client (the hot
path the MQTT 5 work must not slow down) and for MQTT 5 clients with the
extras: Subscription Identifiers and options (``deliver_matched``), a
Maximum Packet Size to check, Topic Aliases to apply, message properties.
Each QoS 1 delivery is acknowledged so the inflight window stays open.
Prints deliveries per second, best of 3.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from actorbroker.codec import Connect, Properties, PubAck, Publish
from actorbroker.session import AppMessage, Send, SessionCore
from actorbroker.session.suboptions import SubOptions


def _core(level: int, **props: object) -> SessionCore:
    core = SessionCore("bench")
    core.attach(Connect("MQTT", level, "bench", True, 60,
                        properties=Properties(**props)), 0.0)  # type: ignore[arg-type]
    return core


def _run(core: SessionCore, deliver: Callable[[AppMessage], list[object]], qos: int,
         count: int, properties: Properties) -> float:
    message = AppMessage("site1/dev2/m3", b"x" * 64, qos, properties=properties)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(count):
            effects = deliver(message)
            if qos:
                for effect in effects:
                    if isinstance(effect, Send):
                        for packet in effect.packets:
                            if type(packet) is Publish and packet.packet_id:
                                core.handle(PubAck(packet.packet_id), 0.0)
        best = max(best, count / (time.perf_counter() - start))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    count = parser.parse_args().messages
    rich = Properties(user_property=(("k", "v"),), content_type="text/plain",
                      message_expiry_interval=3600)
    matches = ((1, SubOptions(subscription_id=7)), (0, SubOptions(no_local=True)))
    rows = []
    for qos in (0, 1):
        v3 = _core(4)
        rows.append((f"3.1.1, QoS {qos}", _run(v3, lambda m, c=v3: c.deliver(m, 2, 1.0), qos,
                                               count, Properties())))
        v5 = _core(5)
        rows.append((f"5.0 plain, QoS {qos}", _run(v5, lambda m, c=v5: c.deliver(m, 2, 1.0), qos,
                                                   count, Properties())))
        v5p = _core(5, maximum_packet_size=1 << 20, topic_alias_maximum=10)
        rows.append((f"5.0 properties + max packet size + aliases, QoS {qos}",
                     _run(v5p, lambda m, c=v5p: c.deliver(m, 2, 1.0), qos, count, rich)))
        v5m = _core(5)
        rows.append((f"5.0 subscription ids + options (deliver_matched), QoS {qos}",
                     _run(v5m, lambda m, c=v5m: c.deliver_matched(m, matches, 1.0), qos, count,
                          Properties())))
    width = max(len(name) for name, _ in rows)
    for name, rate in rows:
        print(f"{name:<{width}}  {rate:>12,.0f} deliveries/s")


if __name__ == "__main__":
    main()
