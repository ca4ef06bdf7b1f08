"""Transport layer: the packets of traced clients, in the log ([log] trace). Stdlib and codec only.

A connection asks :func:`traced` once, when its CONNECT names the client
id, and keeps the answer as a flag: a client that no pattern matches costs
nothing more than that flag's test per read and per send, never a pattern
match per packet. A traced connection logs each packet in and out at INFO on
the logger ``actorbroker.trace``: its type, packet id, topic or filters,
QoS, flags, reason codes and payload *size*. Payloads, passwords, and the
Will's and AUTH's data never appear. The lines carry ``client_id`` and
``peer`` for the JSON format (actorbroker/logsetup.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from fnmatch import fnmatchcase

from actorbroker.codec import SHOWN_LENGTH, Connect, Packet, Publish, Subscribe, Unsubscribe, shown

__all__ = ["describe", "trace", "trace_bytes", "traced"]

log = logging.getLogger("actorbroker.trace")


def traced(patterns: tuple[str, ...], client_id: str) -> bool:
    """Whether ``client_id`` matches one of ``patterns`` (shell-style, case-sensitive)."""
    return any(fnmatchcase(client_id, pattern) for pattern in patterns)


def describe(packet: Packet) -> str:
    """One packet in a few words, without its payload or any secret."""
    parts = [packet.packet_type.name]
    packet_id = getattr(packet, "packet_id", None)
    if packet_id is not None:
        parts.append(f"id={packet_id}")
    match packet:
        case Publish():
            parts += [f"topic={shown(packet.topic)}", f"qos={packet.qos}",
                      f"retain={int(packet.retain)}", f"dup={int(packet.dup)}",
                      f"size={len(packet.payload)}"]
        case Subscribe():
            parts.append("filters=" + ",".join(f"{shown(s.topic_filter)}:qos{s.qos}"
                                               for s in packet.subscriptions))
        case Unsubscribe():
            parts.append("filters=" + ",".join(shown(f) for f in packet.topic_filters))
        case Connect():
            parts += [f"level={packet.protocol_level}", f"clean={int(packet.clean_start)}",
                      f"keepalive={packet.keepalive}",
                      f"will={'none' if packet.will is None else shown(packet.will.topic)}"]
    reason = getattr(packet, "reason_code", None)
    if reason is not None:
        parts.append(f"reason=0x{reason:02x}")
    reasons = getattr(packet, "reason_codes", None)
    if reasons:
        parts.append("reasons=" + ",".join(f"0x{r:02x}" for r in reasons))
    return " ".join(parts)


def trace(direction: str, client_id: str, peer: tuple[str, int],
          packets: Iterable[Packet]) -> None:
    """Log ``packets`` of a traced client (``direction``: "in" or "out")."""
    extra = _about(client_id, peer)
    for packet in packets:
        log.info("client %s %s %s", shown(client_id), direction, describe(packet), extra=extra)


def trace_bytes(client_id: str, peer: tuple[str, int], size: int) -> None:
    """Log already encoded output of a traced client (not decoded again to be shown)."""
    log.info("client %s out %d pre-encoded byte(s)", shown(client_id), size,
             extra=_about(client_id, peer))


def _about(client_id: str, peer: tuple[str, int]) -> dict[str, str]:
    host, port = peer
    return {"client_id": client_id if len(client_id) <= SHOWN_LENGTH else shown(client_id),
            "peer": f"[{host}]:{port}" if ":" in host else f"{host}:{port}"}
