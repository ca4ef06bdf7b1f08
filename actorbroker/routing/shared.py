"""Routing layer: choosing which member of a shared-subscription group gets a message.

Imports the standard library only. Pure code: no clocks, no global random
state (the random source is passed in), no I/O.

In MQTT 5.0 (section 4.8.2) each message that matches ``$share/{group}/{filter}``
goes to one session of the group. :class:`SharedGroup` keeps the members of one
group on one filter and picks one per message with a :class:`SharedStrategy`:

- ``ROUND_ROBIN``: members in turn, in the order they joined;
- ``RANDOM``: uniformly, from the injected ``random.Random``;
- ``HASH``: by a key passed in (e.g. the publishing client id or the topic),
  with rendezvous hashing on BLAKE2b: the same key goes to the same
  member while that member stays, and a member joining or leaving moves only
  the keys that member wins or held. Stable across processes and nodes.

``choose`` takes an optional ``accept`` predicate (e.g. "is connected", "has
room in its queue"): members it rejects are skipped in the strategy's order.
"""

from __future__ import annotations

import enum
import hashlib
import random
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class SharedStrategy(enum.Enum):
    """How a shared-subscription group picks the member for one message."""

    ROUND_ROBIN = "round_robin"
    RANDOM = "random"
    HASH = "hash"


def _key_bytes(key: str | bytes) -> bytes:
    return key if isinstance(key, bytes) else key.encode("utf-8", "surrogatepass")


class SharedGroup(Generic[K]):
    """The members of one shared-subscription group on one filter.

    ``ident`` turns a member into the stable text the HASH strategy hashes
    (default ``str``); ``rng`` is the random source of the RANDOM strategy
    (default: a new ``random.Random()``; pass a seeded one in tests).
    """

    __slots__ = ("strategy", "_members", "_index", "_cursor", "_rng", "_ident", "_ids")

    def __init__(
        self,
        strategy: SharedStrategy = SharedStrategy.ROUND_ROBIN,
        *,
        rng: random.Random | None = None,
        ident: Callable[[K], str] = str,
    ) -> None:
        self.strategy = strategy
        self._members: list[K] = []
        self._index: dict[K, int] = {}
        self._cursor = 0  # next position for ROUND_ROBIN
        self._rng = rng if rng is not None else random.Random()
        self._ident = ident
        self._ids: list[bytes] = []  # _ident(member) encoded, aligned with _members

    def add(self, member: K) -> bool:
        """Add a member; False if it was already in the group."""
        if member in self._index:
            return False
        self._index[member] = len(self._members)
        self._members.append(member)
        self._ids.append(b"\x00" + _key_bytes(self._ident(member)))
        return True

    def remove(self, member: K) -> bool:
        """Remove a member; False if it was not in the group.

        Round robin carries on with the member that came after the removed one.
        """
        position = self._index.pop(member, None)
        if position is None:
            return False
        del self._members[position]
        del self._ids[position]
        for index in range(position, len(self._members)):
            self._index[self._members[index]] = index
        if position < self._cursor:
            self._cursor -= 1
        if self._cursor >= len(self._members):
            self._cursor = 0
        return True

    def __contains__(self, member: object) -> bool:
        return member in self._index

    def __len__(self) -> int:
        return len(self._members)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._members))

    def choose(
        self,
        key: str | bytes | None = None,
        *,
        accept: Callable[[K], bool] | None = None,
    ) -> K | None:
        """Pick the member for one message, or None if no member is acceptable.

        ``key`` is required by the HASH strategy (ValueError without it) and
        ignored by the others. Each member is offered to ``accept`` at most once.
        """
        count = len(self._members)
        if count == 0:
            return None
        if self.strategy is SharedStrategy.HASH:
            if key is None:
                raise ValueError("the hash strategy needs a key (e.g. the publisher's client id)")
            for position in self._rendezvous_order(_key_bytes(key)):
                member = self._members[position]
                if accept is None or accept(member):
                    return member
            return None
        if self.strategy is SharedStrategy.RANDOM:
            start = self._rng.randrange(count)
        else:
            start = self._cursor
        for step in range(count):
            position = (start + step) % count
            member = self._members[position]
            if accept is None or accept(member):
                if self.strategy is SharedStrategy.ROUND_ROBIN:
                    self._cursor = (position + 1) % count
                return member
        return None

    def _rendezvous_order(self, key: bytes) -> Iterator[int]:
        """Member positions by falling rendezvous score for ``key``.

        The score of a member is BLAKE2b (8 bytes) of the key followed by the
        member's id; ties (never seen in practice) go to the member that joined
        first. The full order is sorted only if the winner is not accepted.
        """
        base = hashlib.blake2b(key, digest_size=8)
        scores: list[tuple[bytes, int]] = []
        for position, ident in enumerate(self._ids):
            digest = base.copy()
            digest.update(ident)
            scores.append((digest.digest(), -position))
        best = max(scores)
        yield -best[1]
        for _, negative in sorted((s for s in scores if s != best), reverse=True):
            yield -negative
