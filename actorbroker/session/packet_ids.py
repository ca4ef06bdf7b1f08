"""Session layer: the allocator of outbound packet identifiers. Stdlib only.

A Packet Identifier is 1..65535; one in use by an unacknowledged outbound
PUBLISH (or PUBREL) must not be reused until its flow completes
([MQTT-2.2.1-3], 3.1.1: [MQTT-2.3.1-2]). Ids are handed out in increasing
order from where the last allocation stopped, skipping ids in use and
wrapping from 65535 back to 1, so a freshly released id is not reused at
once (which keeps client logs readable and late duplicates harmless).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MAX_PACKET_ID", "PacketIdAllocator", "PacketIdsExhaustedError"]

#: The largest packet identifier (a two byte integer, zero is not allowed).
MAX_PACKET_ID = 0xFFFF


class PacketIdsExhaustedError(RuntimeError):
    """All 65535 identifiers are in use: the caller let its window grow too large (a bug)."""


class PacketIdAllocator:
    """Hands out unused packet identifiers in 1..65535, wrapping around."""

    __slots__ = ("_in_use", "_next")

    def __init__(self, in_use: Iterable[int] = (), *, start: int = 1) -> None:
        if not 1 <= start <= MAX_PACKET_ID:
            raise ValueError(f"start must be in 1..{MAX_PACKET_ID}, not {start}")
        self._in_use: set[int] = set()
        self._next = start
        for packet_id in in_use:
            self.reserve(packet_id)

    def allocate(self) -> int:
        """The next unused identifier, now marked in use.

        Raises:
            PacketIdsExhaustedError: every identifier is in use.
        """
        if len(self._in_use) >= MAX_PACKET_ID:
            raise PacketIdsExhaustedError("all 65535 packet identifiers are in use")
        candidate = self._next
        while candidate in self._in_use:
            candidate = candidate + 1 if candidate < MAX_PACKET_ID else 1
        self._in_use.add(candidate)
        self._next = candidate + 1 if candidate < MAX_PACKET_ID else 1
        return candidate

    def reserve(self, packet_id: int) -> None:
        """Mark ``packet_id`` in use (restoring a session); ValueError if out of range or taken."""
        if not 1 <= packet_id <= MAX_PACKET_ID:
            raise ValueError(f"packet identifier must be in 1..{MAX_PACKET_ID}, not {packet_id}")
        if packet_id in self._in_use:
            raise ValueError(f"packet identifier {packet_id} is already in use")
        self._in_use.add(packet_id)

    def release(self, packet_id: int) -> None:
        """Free ``packet_id`` (its flow completed); releasing a free id is a no-op."""
        self._in_use.discard(packet_id)

    def clear(self) -> None:
        """Free every identifier (the session state was discarded)."""
        self._in_use.clear()

    def __contains__(self, packet_id: object) -> bool:
        return packet_id in self._in_use

    def __len__(self) -> int:
        return len(self._in_use)
